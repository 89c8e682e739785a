"""A worker a zygote forked (zygote.py), seen from the parent: its exit, waited for without waking.

In: a `Zygote` and a forked pid, or a JSON job (worker.run_job: a sample of `profopt run`, a
profiled run) to fork. Out: `Forked`, the part of Popen's interface live_worker.WorkerProcess uses;
`run_forked` / `forked_worker`, a job run to its end as processes.run_worker runs a fresh one.

Why a pidfd: the parent waits on the worker's exit while its values are timed; a poll through the
zygote every few ms woke both ~200 times a second on the measured CPUs (bench/wakeups.py).
"""
from __future__ import annotations

import os
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from profopt_ci.filenames import file_part
from profopt_ci.measure.children import ChildResult, answer_of, kill_all, tail
from profopt_ci.measure.zygote import Zygote


class Forked:
    """A worker a zygote forked, with the part of Popen's interface live_worker.WorkerProcess uses."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.status(self.pid, block=False)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code, blocking. A pidfd (readable once the worker has exited) wakes the parent and
        the zygote once, at the exit: a poll every few ms woke both ~200 times a second for a
        whole sample, on the CPUs a 2-thread step was being timed on (bench/wakeups.py)."""
        if self.returncode is not None:
            return self.returncode
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = _pidfd(self.pid)
        try:
            pause = 0.0002  # without a pidfd: polled, a killed worker is gone at once
            while True:
                code = self.poll()
                if code is not None:
                    return code
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
                if fd is not None:  # readable at the exit (a spurious wake-up only polls once more)
                    select.select([fd], [], [], left)
                else:
                    time.sleep(pause if left is None else min(pause, left))
                    pause = min(pause * 2, 0.005)
        finally:
            if fd is not None:
                os.close(fd)


def _pidfd(pid: int) -> int | None:
    """A file descriptor that becomes readable when `pid` exits (Linux 5.3+), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class ForkedJob:
    """A JSON job (worker.run_job) to fork from a zygote, and how its child runs: in `root` with
    `env`, killed after `timeout_s`, on `cpus` when given; `pad`: it draws a heap layout of its own."""

    job: dict
    env: dict[str, str]
    root: Path
    timeout_s: float
    pad: bool = False
    cpus: list[int] | None = None


def run_forked(zygote: Zygote, task: ForkedJob, out: Path) -> tuple[int | None, str]:
    """The job forked from the zygote, its answer written to `out`: (exit code or None on timeout,
    stderr tail)."""
    from profopt_ci.measure.proctree import tag_env

    env, tag = tag_env(task.env)
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        pid = zygote.fork({"job": task.job, "tag": tag, "out": str(out), "root": str(task.root), "env": env,
                           "pad": task.pad, "cpus": task.cpus}, [so.fileno(), se.fileno()])
        child = Forked(zygote, pid)
        try:
            code: int | None = child.wait(timeout=task.timeout_s)
        except subprocess.TimeoutExpired:
            kill_all(pid, tag)
            child.wait()
            code = None
        se.seek(0)
        return code, tail(se.read().decode("utf-8", "replace"))


def forked_worker(zygote: Zygote, task: ForkedJob, workdir: Path, tag: str):
    """processes.run_worker for a job forked from the zygote: (a ChildResult, the JSON answer or None),
    so processes.failure_of words its failure as a fresh worker's. The child is not profopt's own, so
    the result has no wall, CPU time or ru_maxrss: a worker reports its own peak (VmHWM)."""
    out = workdir / f"out-{file_part(tag)}.json"
    out.unlink(missing_ok=True)
    code, err = run_forked(zygote, task, out)
    res = ChildResult(returncode=-9 if code is None else code, wall_ns=0, cpu_s=0.0, maxrss_kb=0, stdout="",
                      stderr=err, timed_out=code is None)
    return res, answer_of(res, out)
