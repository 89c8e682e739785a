"""A Kineto chrome trace as nested host events, cut into profiler steps.

In: the trace dict `prof.export_chrome_trace` writes. Out: `Ev` host events nested per thread
(parent, children, self time), the device events and memory instants apart, the `ProfilerStep#N`
spans (a trace without a schedule is one step), the typical steps (a step longer than STALL_FACTOR ×
the median was interrupted and is left out), each event's step, and interval helpers (outermost
events of a kind, covered time). The pieces profile/kineto.py summarizes.
"""
from __future__ import annotations

import bisect
import functools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from profopt_ci.profile.kineto_device import union_us

STALL_FACTOR = 1.5
CAPTURE_SYNC = "profopt.capture.sync"
_HOST_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
EPS = 0.01  # µs: chrome traces round timestamps to ns


@dataclass(eq=False)
class Ev:
    name: str
    cat: str
    ts: float
    dur: float
    thread: tuple
    args: dict = field(default_factory=dict)
    parent: Ev | None = None
    children: list[Ev] = field(default_factory=list)
    step: int = -1

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @functools.cached_property
    def self_us(self) -> float:  # read after nesting is complete
        return max(0.0, self.dur - sum(c.dur for c in self.children))

    @property
    def native(self) -> bool:
        return self.cat == "cpu_op"


def load(trace: dict) -> tuple[list[Ev], list[Ev], list[dict]]:
    host, gpu, mem = [], [], []
    for raw in trace.get("traceEvents", []):
        ph, cat = raw.get("ph"), raw.get("cat")
        if ph == "X" and (cat in _HOST_CATS or cat in _GPU_CATS):
            ev = Ev(raw["name"], cat, float(raw["ts"]), float(raw.get("dur", 0.0)),
                    (raw.get("pid"), raw.get("tid")), raw.get("args") or {})
            (gpu if cat in _GPU_CATS else host).append(ev)
        elif ph == "i" and raw.get("name") == "[memory]":
            mem.append(raw)
    return host, gpu, mem


def nest(host: list[Ev]) -> None:
    by_thread: dict[tuple, list[Ev]] = defaultdict(list)
    for ev in host:
        by_thread[ev.thread].append(ev)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.ts, -e.dur))
        stack: list[Ev] = []
        for ev in evs:
            while stack and ev.ts >= stack[-1].end - EPS:
                stack.pop()
            if stack and ev.end <= stack[-1].end + EPS:
                ev.parent = stack[-1]
                stack[-1].children.append(ev)
            stack.append(ev)


def profiler_steps(host: list[Ev]) -> list[Ev]:
    steps = sorted((e for e in host if e.name.startswith("ProfilerStep#")), key=lambda e: e.ts)
    if steps:
        return steps
    # A trace without a schedule: the whole host span is one step.
    start = min(e.ts for e in host)
    whole = Ev("ProfilerStep#0", "user_annotation", start, max(e.end for e in host) - start, (None, None))
    whole.children = [e for e in host if e.parent is None]
    return [whole]


def in_capture_sync(ev: Ev) -> bool:
    """The capture's own end-of-step device sync is not the user's work (nor the user's sync)."""
    while ev is not None:
        if ev.name == CAPTURE_SYNC:
            return True
        ev = ev.parent
    return False


def typical(steps: list[Ev]) -> list[Ev]:
    """Steps no longer than STALL_FACTOR × the median: a longer one was interrupted (scheduler,
    GC, another process) and would blame whichever op it stalled in."""
    median = statistics.median(s.dur for s in steps)
    return [s for s in steps if s.dur <= STALL_FACTOR * median]


def assign_steps(events: list[Ev], steps: list[Ev]) -> list[Ev]:
    starts = [s.ts for s in steps]
    kept = []
    for ev in events:
        i = bisect.bisect_right(starts, ev.ts + EPS) - 1
        if i >= 0 and ev.ts <= steps[i].end + EPS and not ev.name.startswith("ProfilerStep#"):
            ev.step = i
            kept.append(ev)
    return kept


def union_ms(intervals: list[tuple[float, float]]) -> float:
    """Covered time of µs intervals, in ms."""
    return union_us(intervals) / 1000


def outermost(events: list[Ev], pred) -> list[Ev]:
    out = []
    for ev in events:
        if not pred(ev):
            continue
        p = ev.parent
        while p is not None and not pred(p):
            p = p.parent
        if p is None:
            out.append(ev)
    return out
