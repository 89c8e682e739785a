"""Lockstep pairing: one round of base vs head, the two sides measured value by value, alternately.

In: each side's benchmark (the plan's settings), its environment, the two `Side`s, the CPU set both
share, a seeded rng. Out: {side: sample} with the keys of docs/data-model.md — `step_time_ms` is
the median of the side's values this round, `values_ms` the values, `pairs` how many — or
`RoundFailed` naming the side, the cause and its stderr tail.

Why: on a shared VM the CPU changes speed within tens of milliseconds, so two fresh processes
measured hundreds of ms apart are not really paired (per-round CV 11–16%). Two live workers pinned
to the same CPUs and asked for one ~2 ms value each, in an order drawn per pair, see the same
machine state; a fresh pair of processes each round keeps process-level effects (layout, hash seed,
allocator) in the round-to-round spread, where the paired statistics account for them.

A callable runs in `profopt_ci.measure.worker --serve` (protocol in worker.py) over a private pipe pair,
never stdout; a command alternates whole processes (COMMAND_PAIRS pairs a round). Each worker is
pinned (sched_setaffinity in its preexec) and dies with us (PR_SET_PDEATHSIG); both are killed
when the round ends, however it ends.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import select
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from random import Random
from typing import Protocol

from profopt_ci.figures import sig
from profopt_ci.filenames import file_part
from profopt_ci.measure.cpus import Placement, child_preexec
from profopt_ci.measure.processes import (
    Side,
    _throughput,
    command_argv,
    failure_of,
    kill_all,
    parse_metrics,
    run_command,
    tail,
)
from profopt_ci.measure.proctree import tag_env
from profopt_ci.measure.zygote import Forked, Zygote, ZygoteFailed, shared
from profopt_ci.specfile.load import Benchmark

MIN_PAIRS = 10
MAX_PAIRS = 2000
COMMAND_PAIRS = 3


class RoundFailed(Exception):
    def __init__(self, side: str, status: str, message: str) -> None:
        super().__init__(message)
        self.side, self.status, self.message = side, status, message


class Channel(Protocol):
    """One side's live worker as the scheduler sees it."""

    def value_ns(self) -> int: ...


def pair_count(round_ms: float, value_ns: Mapping[str, int]) -> int:
    """Pairs that fill about `round_ms`, given one value's duration per side."""
    per_pair = max(sum(value_ns.values()), 1)
    return max(MIN_PAIRS, min(MAX_PAIRS, int(round_ms * 1e6 / per_pair)))


def drive(channels: Mapping[str, Channel], pairs: int, rng: Random) -> tuple[dict[str, list[int]], list[str]]:
    """`pairs` pairs of values (ns), the order drawn afresh for each pair; also who went first each time."""
    names = sorted(channels)
    values: dict[str, list[int]] = {n: [] for n in names}
    first: list[str] = []
    for _ in range(pairs):
        order = names[:]
        rng.shuffle(order)
        first.append(order[0])
        for n in order:
            values[n].append(channels[n].value_ns())
    return values, first


class WorkerProcess:
    """A lockstep worker (worker.serve_job) on its own pipe pair: a fresh `profopt_ci.measure.worker
    --serve` process, or one the side's zygote forked (zygote.py). It starts unpinned, so its import
    and build use every CPU of the pool; `pin` moves all its threads onto the round's CPU set."""

    def __init__(self, side: Side, bench: Benchmark, env: dict[str, str], workdir: Path, round_index: int,
                 zygote: Zygote | None = None, pad: bool = False) -> None:
        self.side, self.what = side.name, f"the worker for {bench.name} on {side.name}"
        self.timeout_s = bench.settings.timeout_s
        to_r, self._w = os.pipe()
        self._r, from_w = os.pipe()
        s = bench.settings
        job = {"callable": bench.callable, "params": bench.params, "warmup": s.warmup, "value_ms": s.value_ms,
               "round_ms": s.round_ms, "fd_in": to_r, "fd_out": from_w, "threadpoolctl": threadpoolctl_path()}
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self._buf = b""
        env, self._tag = tag_env(env)  # so kill() also reaches what the step started with setsid
        self.forked = zygote is not None
        try:
            if zygote is not None:
                pid = zygote.fork({"job": job, "tag": self._tag, "root": str(side.root), "env": env, "pad": pad},
                                  [to_r, from_w, self._out.fileno(), self._err.fileno()])
                self.proc: subprocess.Popen | Forked = Forked(zygote, pid)
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

    def request(self, op: str) -> str:
        try:
            os.write(self._w, op.encode("ascii") + b"\n")
        except OSError:
            raise self.lost() from None
        return self.reply()

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
        rest = self.expect(word, self.request(op) if op else self.reply())
        try:
            data = json.loads(rest) if rest else {}
        except json.JSONDecodeError:
            raise self.lost(f"sent a corrupt `{word}` answer") from None
        if not isinstance(data, dict):
            raise self.lost(f"sent a `{word}` answer that is not an object")
        return data

    def pin(self, cpus: list[int]) -> None:
        self.expect("pinned", self.request("a " + ",".join(map(str, cpus))))

    def value_ns(self) -> int:
        line = self.request("v")
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

    def kill(self) -> None:
        if self.proc.poll() is None:
            kill_all(self.proc.pid, self._tag)

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


@functools.lru_cache(maxsize=1)
def threadpoolctl_path() -> str | None:
    """threadpoolctl's module file in profopt's own environment, for the workers' probe (threads.py)."""
    try:
        spec = importlib.util.find_spec("threadpoolctl")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def callable_round(benches: Mapping[str, Benchmark], envs: Mapping[str, dict[str, str]], sides: list[Side],
                   workdir: Path, *, round_index: int, rng: Random, placement: Placement,
                   zygotes: Mapping[str, Zygote] | None = None) -> dict[str, dict]:
    """One lockstep round of a callable benchmark: {side name: sample}. The first round (no CPU set
    settled yet) probes both steps before they are pinned; every sample says what its worker could
    preload (`preload`: the zygote's packages for the next rounds)."""
    workers: dict[str, WorkerProcess] = {}
    zygotes = zygotes or {}
    try:
        pad = bool(zygotes) and not shared(zygotes)  # per-side zygotes: each child draws its own layout
        started = list(sides)
        rng.shuffle(started)  # forked from one zygote, neither side may always be its first child
        for side in started:  # both start at once, unpinned: start-up is not measured
            workers[side.name] = WorkerProcess(side, benches[side.name], envs[side.name], workdir, round_index,
                                               zygotes.get(side.name), pad)
        workers = {side.name: workers[side.name] for side in sides}
        built = {name: w.answer("built") for name, w in workers.items()}
        if placement.cpus is None:  # one at a time: each probe sees the pool to itself
            placement.settle({name: w.answer("threads", "p") for name, w in workers.items()},
                             benches[sides[0].name].name)
        if placement.cpus:
            for w in workers.values():
                w.pin(placement.cpus)
        # One at a time, so each calibration sees the CPU to itself; then one loop count for both:
        # values of unequal length would meet a competing process's time slices unequally.
        loops = min(_int(w, w.expect("loops", w.request("c"))) for w in workers.values())
        warm = {name: _int(w, w.expect("ready", w.request(f"w {loops}"))) for name, w in workers.items()}
        pairs = pair_count(benches[sides[0].name].settings.round_ms, warm)
        values, first = drive(workers, pairs, rng)
        finals = {}
        for name, w in workers.items():
            try:
                finals[name] = json.loads(w.expect("done", w.request("q")))
            except json.JSONDecodeError:
                raise w.lost("sent a corrupt final answer") from None
    finally:
        for w in workers.values():
            w.close()
    out = {}
    for side in sides:
        sample = _sample(benches[side.name], round_index, first, side.name, values[side.name], loops,
                         finals[side.name])
        sample["forked"] = workers[side.name].forked
        preload = built[side.name].get("preload")
        if isinstance(preload, list):
            sample["preload"] = [str(p) for p in preload][:20000]
        out[side.name] = sample
    return out


def _int(w: WorkerProcess, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise w.lost(f"answered {text[:80]!r} instead of a number") from None


def _sample(bench: Benchmark, round_index: int, first: list[str], side: str, values_ns: list[int], loops: int,
            final: dict) -> dict:
    ms = [sig(ns / loops / 1e6, 6) for ns in values_ns]
    step = statistics.median(ms)
    hwm = final.get("vm_hwm_kb")
    return {
        "round": round_index, "order": 0 if first and first[0] == side else 1, "pairing": "lockstep",
        "pairs": len(ms), "first_share": sig(first.count(side) / len(first), 6) if first else None,
        "step_time_ms": step, "values_ms": ms, "loops": loops, "throughput": _throughput(bench, step),
        "peak_memory_mb": hwm / 1024.0 if hwm else None, "cpu_time_ms": None,
        "cuda_max_allocated_mb": final.get("cuda_max_allocated_mb"),
        "cuda_max_reserved_mb": final.get("cuda_max_reserved_mb"),
        "phases_ms": final.get("phases_ms") or {}, "quality": final.get("quality") or {},
    }


def command_round(benches: Mapping[str, Benchmark], envs: Mapping[str, dict[str, str]], sides: list[Side],
                  workdir: Path, *, round_index: int, rng: Random, placement: Placement,
                  pairs: int = COMMAND_PAIRS, zygotes: Mapping[str, Zygote] | None = None) -> dict[str, dict]:
    """One round of a command benchmark: whole processes alternated base/head, `pairs` pairs (on the
    CPU set its warm-up runs settled: rounds.lockstep_round)."""
    cpus = placement.cpus
    runs: dict[str, list] = {s.name: [] for s in sides}
    first: list[str] = []
    for _ in range(pairs):
        order = list(sides)
        rng.shuffle(order)
        first.append(order[0].name)
        for side in order:
            b = benches[side.name]
            res = run_command(command_argv(b.command), cwd=side.root, env=dict(envs[side.name]),
                              timeout_s=b.settings.timeout_s, workdir=workdir, cpus=cpus)
            if res.timed_out or res.returncode != 0:
                exc = failure_of(res, b.settings.timeout_s, f"the command of {b.name} on {side.name}")
                raise RoundFailed(side.name, exc.status, exc.message)
            runs[side.name].append(res)
    out = {}
    for side in sides:
        res, b = runs[side.name], benches[side.name]
        walls = [sig(r.wall_ns / 1e6, 6) for r in res]
        step = statistics.median(walls)
        out[side.name] = {
            "round": round_index, "order": 0 if first[0] == side.name else 1, "pairing": "lockstep",
            "pairs": pairs, "step_time_ms": step, "values_ms": walls, "loops": 1,
            "throughput": _throughput(b, step), "peak_memory_mb": max(r.maxrss_kb for r in res) / 1024.0,
            "cpu_time_ms": statistics.median(r.cpu_s for r in res) * 1000.0, "cuda_max_allocated_mb": None,
            "cuda_max_reserved_mb": None, "phases_ms": {}, "quality": parse_metrics(res[-1].stdout),
        }
    return out


def run_round(benches: Mapping[str, Benchmark], envs: Mapping[str, dict[str, str]], sides: list[Side],
              workdir: Path, *, round_index: int, rng: Random, placement: Placement,
              zygotes: Mapping[str, Zygote] | None = None) -> dict[str, dict]:
    """One lockstep round of either kind."""
    kind = command_round if benches[sides[0].name].command is not None else callable_round
    return kind(benches, envs, sides, workdir, round_index=round_index, rng=rng, placement=placement,
                zygotes=zygotes)
