"""A worker a zygote forked (zygote.py), seen from the parent: its exit, waited for without waking.

In: a `Zygote` and a forked pid. Out: `Forked`, the part of Popen's interface the workers
(live_worker.WorkerProcess, job_worker.JobWorker) use; `ForkFrom`, how a worker is forked.

Why a pidfd: the parent waits on the worker's exit while its values are timed; a poll through the
zygote every few ms woke both all through a sample, on the measured CPUs (bench/wakeups.py).
"""
from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass

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
        the zygote once, at the exit; a poll every few ms woke both all through a sample, on the
        CPUs a 2-thread step was being timed on (bench/wakeups.py)."""
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
class ForkFrom:
    """A worker forked from its side's zygote: `pad`, it draws a heap layout of its own (per-side
    zygotes, see lockstep.start_workers); `cpus`, where it starts (one started ahead, a pass on its
    own CPU set), else unpinned."""

    zygote: Zygote
    pad: bool = False
    cpus: list[int] | None = None
