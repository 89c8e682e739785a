"""A zygote: one process per side that imports the step's heavy packages once and forks each round's worker.

In (parent): a `Side`, its environment, the packages to preload (worker.PRELOAD that the first
round's worker reported), a work directory. Out: `Zygote.fork(job, fds)` → the pid of a fresh
lockstep worker (worker.serve_job) on the pipe ends passed, and `wait`/`poll` for its exit status
(measure/forked.py: the parent's side of a forked worker).
In (the zygote process, measure/zygote_process.py): the socket's fd and the preload list; it
answers over a SOCK_SEQPACKET socket pair (one message per request, the worker's fds riding with
`fork` as SCM_RIGHTS):

    zygote: `ready PID` (or `error TRACEBACK`)
    parent: `fork {job}` + fds [pipe in, pipe out, stdout file, stderr file] → zygote: `pid N`
            (a JSON job with `out` — a sample of `profopt run`, the profiled run: fds [stdout
            file, stderr file] only)
    parent: `wait N` / `poll N` → zygote: `status CODE` (poll: or `running`)

Why: `import torch` takes seconds, and a fresh pair of interpreters every round paid it twice per
round — most of a torch A/A's time. A forked child starts in milliseconds with the packages already
imported and builds the step itself (the factory never runs in the zygote, so no OpenMP region,
CUDA context or thread pool is inherited half-done: forking after one of those hangs the child).
What a fork shares — the hash seed, the layout of what was imported — is re-drawn by a new zygote
every FORK_ROUNDS rounds (lockstep.py), so the rounds still sample process-level effects.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from profopt_ci.filenames import file_part
from profopt_ci.measure.children import kill_all, tail
from profopt_ci.measure.zygote_process import MAX_MSG

FORK_ROUNDS = 4  # rounds one zygote serves before a new one re-draws the hash seed and layout
# where the rounds leave no spare CPU the next generation imports on the measured ones, between values:
# a generation then serves a first look's worth of rounds (docs/experiments.md: issue 27)
FORK_ROUNDS_NO_SPARE = 12
READY_TIMEOUT_S = 300.0


class ZygoteFailed(Exception):
    """The zygote could not start, preload, or fork; the caller falls back to fresh processes."""


class NotReady(Exception):
    """`ZygotePool.for_round(wait=False)`: serving the round would wait for a zygote still importing,
    or would replace the generation whose workers are running now. Nothing was changed."""


class Zygote:
    """The parent's handle on one side's zygote."""

    def __init__(self, python: str, root: Path, env: dict[str, str], preload: list[str], workdir: Path,
                 name: str, cpus: list[int] | None = None) -> None:
        """`cpus`: where it imports (the CPUs the rounds leave free, for a zygote started while a
        round measures); it moves back onto every CPU it may use before it forks."""
        from profopt_ci.measure.cpus import available, child_preexec
        from profopt_ci.measure.proctree import tag_env

        self.name = name
        self.hashseed = env.get("PYTHONHASHSEED")  # fixed at its start: what every fork of it hashes with
        self.cpus = cpus  # where it imports; None: every CPU profopt may use
        self._lock = threading.Lock()  # one request and its answer at a time (the profiled runs share it)
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        path = workdir / f"zygote-{file_part(name)}.json"
        path.write_text(json.dumps({"preload": list(preload), "sock": theirs.fileno(),
                                    "pool": available() if cpus else None}))
        self._err = tempfile.TemporaryFile()
        env, self.tag = tag_env(env)
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "profopt_ci.measure.zygote_process", str(path)], cwd=root, env=env,
                stdin=subprocess.DEVNULL, stdout=self._err, stderr=self._err, pass_fds=(theirs.fileno(),),
                preexec_fn=child_preexec(cpus), start_new_session=True)
        except OSError as exc:
            self.sock.close()
            self._err.close()
            raise ZygoteFailed(f"cannot start the zygote {name}: {exc}") from None
        finally:
            theirs.close()
        self.pid: int | None = None
        self.stopped = False

    def widen(self) -> None:
        """Let a zygote still importing on the spare CPUs use every CPU profopt may: the rounds wait
        for it now, so nothing is measured beside it (a spare CPU that another job keeps busy made
        a pinned torch import several times slower than a free one)."""
        from profopt_ci.harness.threads import pin_all
        from profopt_ci.measure.cpus import available

        pin_all(available(), self.proc.pid)  # one that exited meanwhile: `ready` says what happened

    def signal(self, sig: int) -> None:
        """SIGSTOP / SIGCONT to the zygote's process group (it leads its own session)."""
        self.stopped = sig == signal.SIGSTOP
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass  # it exited: `ready` says what happened

    def ready(self, timeout_s: float) -> None:
        """Wait for `ready`; ZygoteFailed with the zygote's own words when it did not get there."""
        word, rest = self._reply(timeout_s)
        if word != "ready":
            raise ZygoteFailed(f"the zygote {self.name} could not preload: {rest or self._tail()}")
        self.pid = int(rest)

    def ready_now(self) -> bool:
        """Whether `ready` would return at once and a fork be answered: not while it is held
        (`ZygotePool.held_beside`). A zygote that failed counts as ready: `ready` then says why."""
        if self.stopped:
            return False
        if self.pid is not None:
            return True
        try:
            waiting, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(waiting)

    def fork(self, job: dict, fds: list[int], timeout_s: float = 30.0) -> int:
        with self._lock:
            try:
                socket.send_fds(self.sock, [("fork " + json.dumps(job)).encode()], fds)
            except OSError as exc:
                raise ZygoteFailed(f"the zygote {self.name} is gone ({exc})") from None
            word, rest = self._reply(timeout_s)
        if word != "pid":
            raise ZygoteFailed(f"the zygote {self.name} could not fork: {rest or self._tail()}")
        return int(rest)

    def status(self, pid: int, *, block: bool, timeout_s: float = 30.0) -> int | None:
        """The exit code of a forked worker (negative: killed by that signal); None while it runs."""
        try:
            with self._lock:
                self.sock.send(f"{'wait' if block else 'poll'} {pid}".encode())
                word, rest = self._reply(timeout_s)
        except (OSError, ZygoteFailed):
            return -9  # the zygote is gone, and its workers died with it (PR_SET_PDEATHSIG)
        if word == "status":
            return int(rest)
        return None

    def _reply(self, timeout_s: float) -> tuple[str, str]:
        ready, _, _ = select.select([self.sock], [], [], timeout_s)
        if not ready:
            raise ZygoteFailed(f"the zygote {self.name} did not answer within {timeout_s:g} s")
        try:
            msg = self.sock.recv(MAX_MSG)
        except OSError as exc:
            raise ZygoteFailed(f"the zygote {self.name} is gone ({exc})") from None
        if not msg:
            raise ZygoteFailed(f"the zygote {self.name} exited: {self._tail()}")
        word, _, rest = msg.decode("utf-8", "replace").partition(" ")
        return word, rest

    def _tail(self) -> str:
        try:
            self._err.seek(0)
            return tail(self._err.read().decode("utf-8", "replace")) or "no output"
        except (OSError, ValueError):
            return "no output"

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                kill_all(self.proc.pid, self.tag)  # its forked workers die with it
            self.proc.wait()
            self._err.close()


def shareable(sides: list, envs: dict[str, dict[str, str]], preload: list[str]) -> bool:
    """One zygote may serve both sides: one interpreter, environments equal but for the checkout, and
    no preloaded package that a checkout could shadow (a `torch/` or `numpy.py` of its own)."""
    if len({s.python for s in sides}) != 1:
        return False
    norm = [{k: v.replace(str(s.root), "<root>") for k, v in envs[s.name].items()} for s in sides]
    if any(n != norm[0] for n in norm):
        return False
    tops = {name.partition(".")[0] for name in preload}
    # where a checkout's own package would come first: its root, and a relative PYTHONPATH (`src`)
    dirs = [Path(s.root) / d for s in sides
            for d in ["", *(e for e in envs[s.name].get("PYTHONPATH", "").split(os.pathsep) if e and not os.path.isabs(e))]]
    return not any((d / top).exists() or (d / f"{top}.py").exists() for d in dirs for top in tops)


def shared(zygotes: dict[str, Zygote] | None) -> bool:
    return bool(zygotes) and len({id(z) for z in zygotes.values()}) == 1


@dataclass(frozen=True)
class ZygoteRecipe:
    """One benchmark's zygotes as the pool starts them: the benchmark, its sides and their child
    environments, what they preload (None: not known yet; []: nothing heavy), where they work, and
    where a zygote that fails is said."""

    bench: str
    sides: list
    envs: dict[str, dict[str, str]]
    preload: list[str] | None
    workdir: Path
    log: Callable[[str], None]

    def shareable(self) -> bool:
        return shareable(self.sides, self.envs, self.preload or [])


class ZygotePool:
    """Each benchmark's zygote — one both sides share when they can (`shareable`), else one per side —
    replaced every `every` rounds (PROFOPT_FORK_ROUNDS overrides FORK_ROUNDS; below 2 turns forking
    off), every FORK_ROUNDS_NO_SPARE where the next generation would import on the measured CPUs. A zygote that fails to start turns forking off for that benchmark, said once: its rounds go
    on in fresh processes.

    Why shared: every child of one zygote inherits its layout, so two per-side zygotes add a
    per-generation offset between the sides (wider than independent rounds would give; figures in
    docs/experiments.md). Forked from one zygote, both sides carry the same layout and it cancels in
    the paired ratio. Per-side
    zygotes pad each child's heap by a random amount instead (`pad`), which breaks the offset at the
    cost of more spread (docs/experiments.md)."""

    def __init__(self, every: int | None = None) -> None:
        if every is None:
            text = os.environ.get("PROFOPT_FORK_ROUNDS", "").strip()
            every = int(text) if text.isdigit() else None
        self.fixed = every is not None  # set by the caller or PROFOPT_FORK_ROUNDS: no adapting to the CPUs
        self.every = FORK_ROUNDS if every is None else every
        self.live: dict[str, tuple[dict[str, Zygote], int]] = {}
        self.next: dict[str, dict[str, Zygote]] = {}  # the next generation, importing on spare CPUs
        self.broken: set[str] = set()

    def for_round(self, recipe: ZygoteRecipe, spare: list[int] | None = None, rounds_left: int | None = None, *,
                  wait: bool = True, turnover: bool = True) -> dict[str, Zygote] | None:
        """The zygotes this round forks from, or None (fresh processes). Its `preload` None: not known yet
        (the first round runs fresh processes and reports it); [] (nothing heavy): a zygote only
        when both sides can share one, and a new one every round — its start costs what a fresh
        worker's does, and each round then blocks both sides on one fresh layout. `spare`: CPUs the
        rounds leave free; the next generation's zygote imports there while a generation serves its
        rounds, so its import costs no wall time. `rounds_left`: this round and those the benchmark may
        still run (its max_rounds); no next generation is started that no round would fork from.
        `wait=False` (a round's workers started ahead, while another round measures): NotReady where
        the zygotes are still importing, or where a new generation is due and `turnover` is False
        (the current one's workers are running)."""
        bench, preload = recipe.bench, recipe.preload
        if preload is None or self.every < 2 or bench in self.broken:
            return None
        share = recipe.shareable()
        if not preload and not share:
            return None
        every = self.every if preload else 1
        if preload and not spare and not self.fixed:
            every = max(every, FORK_ROUNDS_NO_SPARE)
        current = self.live.get(bench)
        if current is not None and current[1] < every:
            self.live[bench] = (current[0], current[1] + 1)
            return current[0]
        if not wait:
            coming = self.next.get(bench)
            if not turnover or coming is None or not all(z.ready_now() for z in set(coming.values())):
                raise NotReady(bench)
        self.close_live(bench)
        started = self.next.pop(bench, None)
        try:
            if started is None:
                started = self._start(recipe, share, None)
            for z in set(started.values()):
                z.widen()
                z.ready(READY_TIMEOUT_S)
        except ZygoteFailed as exc:
            self._broken(bench, started or {}, exc, recipe.log)
            return None
        self.live[bench] = (started, 1)
        if preload and bench not in self.next and (rounds_left is None or rounds_left > every):
            # The next generation imports while this one serves its rounds: on the spare CPUs, or,
            # where the rounds leave none, on the pool, held while values are timed (`held_beside`).
            # Started in a generation's last round only, a torch import outlasts that round and the
            # next round waits for it (docs/experiments.md has the figures)
            self._prefetch(recipe, share, spare or None)
        return started

    def prepare(self, recipe: ZygoteRecipe, spare: list[int] | None) -> None:
        """Start a benchmark's first zygote as soon as its preload is known (after its first round), so
        it imports while the rounds run: on the spare CPUs, else on the pool, held while values are timed."""
        bench = recipe.bench
        if (recipe.preload and self.every >= 2 and bench not in self.broken and bench not in self.live
                and bench not in self.next):
            self._prefetch(recipe, recipe.shareable(), spare or None)

    def _start(self, recipe: ZygoteRecipe, share: bool, cpus: list[int] | None) -> dict[str, Zygote]:
        bench, sides, envs, preload, workdir = recipe.bench, recipe.sides, recipe.envs, recipe.preload or [], recipe.workdir
        if share:
            z = Zygote(sides[0].python, sides[0].root, envs[sides[0].name], preload, workdir, f"{bench}-both", cpus)
            return {side.name: z for side in sides}
        started: dict[str, Zygote] = {}
        try:
            for side in sides:  # all start at once: the imports run side by side
                started[side.name] = Zygote(side.python, side.root, envs[side.name], preload, workdir,
                                            f"{bench}-{side.name}", cpus)
        except ZygoteFailed:
            for z in started.values():
                z.close()
            raise
        return started

    def _prefetch(self, recipe: ZygoteRecipe, share: bool, spare: list[int] | None) -> None:
        try:
            self.next[recipe.bench] = self._start(recipe, share, spare)
        except ZygoteFailed as exc:
            self._broken(recipe.bench, {}, exc, recipe.log)

    def _broken(self, bench: str, started: dict[str, Zygote], exc: Exception, log) -> None:
        for z in set(started.values()):
            z.close()
        self.close(bench)
        self.broken.add(bench)
        log(f"profopt: {bench}: workers are not forked ({exc}); each round starts fresh processes")

    @contextlib.contextmanager
    def held_beside(self, cpus: list[int] | None) -> Iterator[None]:
        """Hold (SIGSTOP) every next-generation zygote still importing on CPUs that meet `cpus` while
        a round runs there: a zygote prefetched on one benchmark's spare CPUs may import on another's
        measured set. Released when the round ends, before any round waits for it."""
        held = [z for zs in self.next.values() for z in set(zs.values())
                if z.pid is None and (cpus is None or z.cpus is None or set(z.cpus) & set(cpus))]
        for z in held:
            z.signal(signal.SIGSTOP)
        try:
            yield
        finally:
            for z in held:
                z.signal(signal.SIGCONT)

    def drop_next(self) -> None:
        """Close every next generation no round will fork from now (the rounds have ended): a zygote
        still importing would run beside the profiled passes."""
        for name in list(self.next):
            for z in set(self.next.pop(name).values()):
                z.close()

    def give_up(self, bench: str, exc: Exception, log) -> None:
        """A zygote that could not fork: the benchmark's rounds go on in fresh processes, said once."""
        self._broken(bench, {}, exc, log)

    def current(self, bench: str) -> dict[str, Zygote] | None:
        """The benchmark's live zygotes, for the profiled run after its rounds."""
        live = self.live.get(bench)
        return live[0] if live else None

    def close_live(self, bench: str) -> None:
        zygotes, _ = self.live.pop(bench, ({}, 0))
        for z in set(zygotes.values()):
            z.close()

    def close(self, bench: str | None = None) -> None:
        for name in [bench] if bench is not None else list(set(self.live) | set(self.next)):
            self.close_live(name)
            for z in set(self.next.pop(name, {}).values()):
                z.close()
