"""Other work on the measured CPUs: how much CPU time processes that are not profopt's took there
while values were timed.

In: the CPU set of a round and the pids of its workers. Out: a `Window` per timed stretch (wall
seconds, the set's busy CPU seconds from the per-CPU counters of /proc/stat, and the CPU seconds of
profopt's own processes there) and `Load`, their sum over a benchmark's rounds, whose `share` is
the other work's part of the set's capacity.

Why: the idle side is held while the other is timed (turns.Turns), but nothing stops another
job on the runner. A multi-threaded step beside one busy process on two CPUs takes many times as
long (docs/experiments.md): its figures mean little then, and the report must say so rather than print
them as if the step ran alone. The counters tick at USER_HZ, so one round's figure is
coarse; the sum over a benchmark's rounds is what is reported. Linux only; elsewhere nothing is
measured and nothing is said.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from profopt_ci.cpulists import TICKS_PER_S, busy_ticks, process_ticks

NOTE_SHARE = 0.05  # other work above this share of the set's capacity is said


class Window:
    """One timed stretch on one CPU set: what the set did, and how much of it was profopt's."""

    def __init__(self, cpus: list[int]) -> None:
        self.cpus = list(cpus)
        self.wall_s = 0.0
        self.busy_s: float | None = None
        self.ours_s = 0.0


@contextlib.contextmanager
def window(cpus: list[int] | None, pids: list[int]) -> Iterator[Window]:
    """Measure the set's busy time and profopt's own (these workers and this process) around the block."""
    w = Window(cpus or [])
    mine = ["self", *pids]
    start_busy = busy_ticks(w.cpus) if w.cpus else None
    start_ours = [process_ticks(p) for p in mine]
    t0 = time.monotonic()
    try:
        yield w
    finally:
        w.wall_s = time.monotonic() - t0
        end_busy = busy_ticks(w.cpus) if start_busy is not None else None
        if end_busy is not None and start_busy is not None:
            w.busy_s = (end_busy - start_busy) / TICKS_PER_S
            w.ours_s = sum(max(0, process_ticks(p) - s) for p, s in zip(mine, start_ours, strict=True)) / TICKS_PER_S


class Load:
    """A benchmark's windows summed over its rounds."""

    def __init__(self) -> None:
        self.cpus: list[int] = []
        self.capacity_s = 0.0
        self.busy_s = 0.0
        self.ours_s = 0.0
        self.windows = 0

    def add(self, w: Window) -> None:
        if w.busy_s is None or not w.cpus:
            return
        self.cpus = w.cpus
        self.capacity_s += w.wall_s * len(w.cpus)
        self.busy_s += w.busy_s
        self.ours_s += w.ours_s
        self.windows += 1

    @property
    def other_s(self) -> float:
        return max(0.0, self.busy_s - self.ours_s)

    @property
    def share(self) -> float | None:
        return min(1.0, self.other_s / self.capacity_s) if self.capacity_s > 0 else None

    def record(self) -> dict | None:
        """The entry's `threads.other_load`: the share of the set's capacity other work took."""
        if not self.windows:
            return None
        return {"share": round(self.share or 0.0, 4), "other_cpu_s": round(self.other_s, 3),
                "capacity_cpu_s": round(self.capacity_s, 3), "rounds": self.windows, "noted": self.noted}

    @property
    def noted(self) -> bool:
        return (self.share or 0.0) > NOTE_SHARE
