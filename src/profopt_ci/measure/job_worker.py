"""The one interface every worker has — start, ask, hold, release, close — and the one-shot worker.

A worker is a process of profopt's on one side's code. Two kinds speak the interface:
- `live_worker.WorkerProcess`, a lockstep worker (worker.serve_job) asked one value at a time;
- `JobWorker` here, a worker on one JSON job (worker.run_job) that writes its answer and exits:
  a sample of `profopt run` or of `pairing: rounds`, a profile or quality pass, a reach record.
Either is a fresh `python -m profopt_ci.measure.worker` in the side's interpreter, or a child of
the side's zygote when `fork` names one: the caller says which, and nothing else changes for it.

In: the job, a `Launch` (where and how it runs) and optionally a `forked.ForkFrom`. Out: from
`ask`, (ChildResult, the JSON answer or None when it failed), worded by processes.failure_of as
any child's; `run_job` is start, ask and close in one call.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from profopt_ci.filenames import file_part
from profopt_ci.measure.children import Child, ChildResult, answer_of, kill_all, tail
from profopt_ci.measure.forked import Forked, ForkFrom
from profopt_ci.measure.proctree import tag_env

if TYPE_CHECKING:
    from profopt_ci.measure.processes import Side


@runtime_checkable
class Worker(Protocol):
    """What the measuring code may do with a worker, of either kind."""

    def ask(self, *args: Any) -> Any: ...  # live: one request, its line; job: its end, its answer
    def hold(self) -> None: ...  # SIGSTOP to its process group: it takes no CPU while another is timed
    def release(self) -> None: ...
    def close(self) -> None: ...  # killed with all it started, and reaped


@dataclass(frozen=True)
class Launch:
    """Where and how a one-shot worker runs: the side's interpreter in its checkout, with `env` (an
    allowlist: processes.child_env), its files in `workdir` named after `tag`, killed after
    `timeout_s`, on `cpus` when given."""

    side: Side
    env: dict[str, str]
    workdir: Path
    tag: str
    timeout_s: float
    cpus: list[int] | None = None


class JobWorker:
    """One worker on one JSON job, fresh or forked (`start`); `ask` waits for its end and reads its
    answer. A forked one is not profopt's own child, so its result has no wall, CPU time or
    ru_maxrss: a worker reports its own peak (VmHWM)."""

    def __init__(self, launch: Launch, out: Path, child: Child | Forked, tag: str, files: tuple = ()) -> None:
        self.launch, self._out, self._child, self._tag, self._files = launch, out, child, tag, files
        self._result: tuple[ChildResult, dict | None] | None = None

    @classmethod
    def start(cls, job: dict, launch: Launch, fork: ForkFrom | None = None) -> JobWorker:
        """The job's worker, started: forked from `fork.zygote` (ZygoteFailed when it cannot fork),
        else a fresh process (BenchmarkFailed when it cannot start)."""
        part = file_part(launch.tag)  # a suite benchmark's name may hold `/`, `..`, spaces, 300 characters
        out = launch.workdir / f"out-{part}.json"
        out.unlink(missing_ok=True)
        if fork is None:
            path = launch.workdir / f"job-{part}.json"
            path.write_text(json.dumps(job))
            argv = [launch.side.python, "-m", "profopt_ci.measure.worker", str(path), str(out)]
            child = Child(argv, cwd=launch.side.root, env=launch.env, cpus=launch.cpus)
            return cls(launch, out, child, child.tag)
        env, tag = tag_env(launch.env)
        so, se = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        try:
            pid = fork.zygote.fork({"job": job, "tag": tag, "out": str(out), "root": str(launch.side.root),
                                    "env": env, "pad": fork.pad, "cpus": fork.cpus or launch.cpus},
                                   [so.fileno(), se.fileno()])
        except BaseException:
            so.close()
            se.close()
            raise
        return cls(launch, out, Forked(fork.zygote, pid), tag, (so, se))

    @property
    def pid(self) -> int:
        return self._child.pid

    def ask(self) -> tuple[ChildResult, dict | None]:
        """Its end (killed at the timeout) and its answer: (result, JSON answer or None)."""
        if self._result is None:
            res = self._wait() if isinstance(self._child, Forked) else self._child.wait(self.launch.timeout_s)
            self._result = res, answer_of(res, self._out)
        return self._result

    def _wait(self) -> ChildResult:
        child = self._child
        assert isinstance(child, Forked)
        try:
            code: int | None = child.wait(timeout=self.launch.timeout_s)
        except subprocess.TimeoutExpired:
            self._kill_forked(child)
            code = None
        err = self._files[1]
        err.seek(0)
        return ChildResult(returncode=-9 if code is None else code, wall_ns=0, cpu_s=0.0, maxrss_kb=0, stdout="",
                           stderr=tail(err.read().decode("utf-8", "replace")), timed_out=code is None)

    def _kill_forked(self, child: Forked) -> None:
        """A forked worker and all it started (by its tag: it is the zygote's child, not ours), reaped."""
        kill_all(child.pid, self._tag)
        child.wait()

    def hold(self) -> None:
        self._signal(signal.SIGSTOP)

    def release(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> None:
        try:  # it leads its own process group: a new session, Popen's or setsid in the fork
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass  # it exited: `ask` says how

    def close(self) -> None:
        if isinstance(self._child, Child):
            self._child.close()
        elif self._child.poll() is None:
            self._kill_forked(self._child)
        for f in self._files:
            f.close()
        self._files = ()


def run_job(job: dict, launch: Launch, fork: ForkFrom | None = None) -> tuple[ChildResult, dict | None]:
    """The job run to its end: start, ask, close."""
    worker = JobWorker.start(job, launch, fork)
    try:
        return worker.ask()
    finally:
        worker.close()
