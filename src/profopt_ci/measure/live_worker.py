"""A live lockstep worker as the parent drives it: one side's `profopt_ci.measure.worker --serve`
process (or one its zygote forked) on a private pipe pair, asked for one answer at a time.

In: the side, its benchmark and environment, a work directory, the round, optionally a zygote. Out:
`WorkerProcess`, with the interface of every worker (job_worker.Worker): `start`, `ask` (a
request of the protocol, measure/worker.py, and `answer`, `pin`, `value_ns` on it), `hold`/`release`
(SIGSTOP/SIGCONT of its process group: turns.Turns) and `close`; `RoundFailed` naming
the side, the cause and its stderr tail when it stops answering.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from profopt_ci.filenames import file_part
from profopt_ci.measure.children import kill_groups
from profopt_ci.measure.cpus import child_preexec
from profopt_ci.measure.forked import Forked, ForkFrom
from profopt_ci.measure.processes import Side, packages_cache, tail
from profopt_ci.measure.proctree import tag_env
from profopt_ci.measure.zygote import ZygoteFailed
from profopt_ci.specfile.keys import SHORT_STEP_MS
from profopt_ci.specfile.load import Benchmark


class RoundFailed(Exception):
    def __init__(self, side: str, status: str, message: str) -> None:
        super().__init__(message)
        self.side, self.status, self.message = side, status, message


class WorkerProcess:
    """A lockstep worker (worker.serve_job) on its own pipe pair: a fresh `profopt_ci.measure.worker
    --serve` process, or one the side's zygote forked (zygote.py). It starts unpinned, so its import
    and build use every CPU of the pool, or on `cpus` (a forked one only: a worker started ahead,
    building while another round measures); `pin` moves all its threads onto the round's CPU set."""

    def __init__(self, side: Side, bench: Benchmark, env: dict[str, str], workdir: Path, round_index: int,
                 fork: ForkFrom | None = None) -> None:
        self.side, self.what = side.name, f"the worker for {bench.name} on {side.name}"
        self.timeout_s = bench.settings.timeout_s
        to_r, self._w = os.pipe()
        self._r, from_w = os.pipe()
        s = bench.settings
        job = {"callable": bench.callable, "params": bench.params, "warmup": s.warmup, "value_ms": s.value_ms,
               "round_ms": s.round_ms, "short_round_ms": s.short_round_ms, "short_step_ms": SHORT_STEP_MS,
               "fd_in": to_r, "fd_out": from_w, "threadpoolctl": threadpoolctl_path(),
               "packages": round_index == 0, "packages_cache": packages_cache(workdir, side), "lead": lead_steps()}
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self._buf = b""
        self._killed = False
        env, self._tag = tag_env(env)  # so kill() also reaches what the step started with setsid
        self.forked = fork is not None
        try:
            if fork is not None:
                pid = fork.zygote.fork({"job": job, "tag": self._tag, "root": str(side.root), "env": env,
                                        "pad": fork.pad, "cpus": fork.cpus},
                                       [to_r, from_w, self._out.fileno(), self._err.fileno()])
                self.proc: subprocess.Popen | Forked = Forked(fork.zygote, pid)
            else:
                path = workdir / f"serve-{file_part(f'{side.name}-{bench.name}')}-{round_index}.json"
                path.write_text(json.dumps(job))
                self.proc = subprocess.Popen(
                    [side.python, "-m", "profopt_ci.measure.worker", "--serve", str(path)], cwd=side.root,
                    env=env, stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
                    pass_fds=(to_r, from_w), preexec_fn=child_preexec(None), start_new_session=True)
        except (OSError, ZygoteFailed) as exc:
            self._close_files()
            for fd in (self._r, self._w):
                os.close(fd)
            raise RoundFailed(side.name, "failed", f"cannot start {self.what}: {exc}") from None
        finally:
            os.close(to_r)
            os.close(from_w)

    @classmethod
    def start(cls, side: Side, bench: Benchmark, env: dict[str, str], workdir: Path, round_index: int,
              fork: ForkFrom | None = None) -> WorkerProcess:
        """The worker, started (RoundFailed when it cannot be): it imports and builds the step while
        the caller goes on, and says `built` when it is ready."""
        return cls(side, bench, env, workdir, round_index, fork)

    def ask(self, op: str) -> str:
        """One request (protocol: measure/worker.py), and the line it answers."""
        self.send(op)
        return self.reply()

    def send(self, op: str) -> None:
        try:
            os.write(self._w, op.encode("ascii") + b"\n")
        except OSError:
            raise self.lost() from None

    def reply(self) -> str:
        deadline = time.monotonic() + self.timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.lost(timed_out=True)
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._r, 65536)
            if not chunk:
                raise self.lost()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode("utf-8", "replace")

    def expect(self, word: str, line: str) -> str:
        head, _, rest = line.partition(" ")
        if head != word:
            raise self.lost(f"answered {line[:80]!r} where `{word}` was expected")
        return rest

    def answer(self, word: str, op: str | None = None) -> dict:
        """The JSON after `word` in the reply to `op` (or in the next line)."""
        rest = self.expect(word, self.ask(op) if op else self.reply())
        try:
            data = json.loads(rest) if rest else {}
        except json.JSONDecodeError:
            raise self.lost(f"sent a corrupt `{word}` answer") from None
        if not isinstance(data, dict):
            raise self.lost(f"sent a `{word}` answer that is not an object")
        return data

    def pin(self, cpus: list[int]) -> None:
        self.expect("pinned", self.ask("a " + ",".join(map(str, cpus))))

    def value_ns(self) -> int:
        line = self.ask("v")
        try:
            ns = int(line)
        except ValueError:
            raise self.lost(f"answered {line[:80]!r} instead of a value") from None
        if ns <= 0:
            raise self.lost(f"answered a non-positive duration {ns}")
        return ns

    def lost(self, why: str | None = None, *, timed_out: bool = False) -> RoundFailed:
        """The round's failure, with the cause and the worker's stderr tail."""
        code = None
        if why is None and not timed_out:
            # EOF on the pipe comes a moment before the exit status: wait for it, or a worker that
            # exited by itself would be reported as killed by our own SIGKILL
            try:
                code = self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                pass
        if code is None:
            self.kill()
            code = self.proc.wait()
        self._err.seek(0)
        err = tail(self._err.read().decode("utf-8", "replace"))
        if timed_out:
            return RoundFailed(self.side, "timeout", f"{self.what} sent nothing for timeout_s={self.timeout_s:g} "
                                                     f"and was killed\n{err}")
        if why is None and code < 0:
            hint = " (out of memory?)" if -code == signal.SIGKILL else ""
            why = f"was killed by signal {-code}{hint} mid-round"
        elif why is None:
            why = f"exited {code} mid-round"
        return RoundFailed(self.side, "failed", f"{self.what} {why}\n{err}")

    def hold(self) -> None:
        self._signal(signal.SIGSTOP)

    def release(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> None:
        # the worker leads its own process group (a new session: Popen's, or setsid in the fork)
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass  # it exited: the next request says how

    def kill(self) -> None:
        kill_workers([self])

    def close(self) -> None:
        self.kill()
        self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._close_files()

    def _close_files(self) -> None:
        self._out.close()
        self._err.close()


def kill_workers(workers: list[WorkerProcess]) -> None:
    """Each live worker as `kill_all` kills a child, with one /proc scan for all of them."""
    live = [w for w in workers if not w._killed and w.proc.poll() is None]
    for w in live:
        w._killed = True
    if live:
        kill_groups([(w.proc.pid, w._tag) for w in live])


LEAD_STEPS = 1  # untimed steps before each value (harness.timing.Stepper); PROFOPT_LEAD_STEPS overrides, 0 none


def lead_steps() -> int:
    text = os.environ.get("PROFOPT_LEAD_STEPS", "").strip()
    return int(text) if text.isdigit() else LEAD_STEPS


@functools.lru_cache(maxsize=1)
def threadpoolctl_path() -> str | None:
    """threadpoolctl's module file in profopt's own environment, for the workers' probe (threads.py)."""
    try:
        spec = importlib.util.find_spec("threadpoolctl")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None
