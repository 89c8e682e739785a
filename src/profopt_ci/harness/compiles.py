"""A torch.compile step inside its worker: its compiles settled before anything is timed, a value
during which something compiled taken again, and the counts the parent reports (measure/lockstep).
Standard library only: dynamo is read from `sys.modules`, never imported here."""
from __future__ import annotations

import sys
from collections.abc import Callable

SETTLED_CALLS = 3  # calls in a row that compiled nothing: a torch.compile step's recompiles have stopped
SETTLE_MAX_CALLS = 500  # a step that recompiles on every call is measured anyway (its compiles are counted)
RETAKES = 5  # times a value during which something compiled is taken again


def _dynamo_counters():
    """torch._dynamo's counters when the step loaded dynamo (torch.compile, or an optimizer that
    imported it), else None: never imported here."""
    utils = sys.modules.get("torch._dynamo.utils")
    return getattr(utils, "counters", None) if utils is not None else None


def compiled_frames() -> int:
    """Frames dynamo has compiled in this process so far, recompiles included (0 without dynamo)."""
    counters = _dynamo_counters()
    if counters is None:
        return 0
    try:
        return int((counters.get("frames") or {}).get("total", 0))
    except (TypeError, ValueError, AttributeError):
        return 0


class Compiles:
    """A torch.compile step's compiles in this worker: the first call's, those after it
    (recompiles, until they stop: `settle`), and the timed values taken again because something
    compiled during them (`retaken`)."""

    __slots__ = ("first", "settle_calls", "retaken", "seen")

    def __init__(self) -> None:
        self.first = self.settle_calls = self.retaken = 0
        self.seen = False  # the first call has been made

    def settle(self, step: Callable[[], object], sync: Callable[[], None] | None) -> None:
        """Untimed calls until SETTLED_CALLS in a row compile nothing (at most SETTLE_MAX_CALLS). The
        first call sets what the step compiles as it is first called (with whatever calls came
        before it here: the first round's thread probe); a step nothing compiled by then is left
        alone."""
        if _dynamo_counters() is None:  # nothing can compile: no call spent
            return
        if not self.seen:
            lead_in(step, 1, sync)
            self.settle_calls += 1
            self.seen, self.first = True, compiled_frames()
        if not self.first and not compiled_frames():
            return
        calm = 0
        while calm < SETTLED_CALLS and self.settle_calls < SETTLE_MAX_CALLS:
            before = compiled_frames()
            lead_in(step, 1, sync)
            self.settle_calls += 1
            calm = 0 if compiled_frames() != before else calm + 1

    def counts(self) -> dict | None:
        """What the parent reports (measure.lockstep), or None for a step dynamo never compiled."""
        counters = _dynamo_counters()
        frames = compiled_frames()
        if counters is None or not frames:
            return None
        breaks = counters.get("graph_break") or {}
        reasons = sorted({str(r).strip().splitlines()[0][:160] for r in breaks if str(r).strip()})
        stats = counters.get("stats") or {}
        # recompiles: every frame compiled after the first call's (in the settling calls, the warm-up
        # or a value taken again)
        return {"frames": frames, "recompiles": max(0, frames - self.first),
                "graph_breaks": int(sum(breaks.values())), "break_reasons": reasons[:5],
                "graphs": int(stats.get("unique_graphs", 0)), "retaken": self.retaken,
                "settle_calls": self.settle_calls}


def timed_clean(take: Callable[[], tuple[int, int]], compiles: Compiles) -> tuple[int, int]:
    """`take()`, taken again (up to RETAKES times) while something compiled during it: compile time
    is never inside a timed value."""
    for _ in range(RETAKES):
        before = compiled_frames()
        got = take()
        if compiled_frames() == before:
            return got
        compiles.retaken += 1
    return take()


def lead_in(step: Callable[[], object], n: int, sync: Callable[[], None] | None) -> None:
    """`n` untimed calls of the step (a prepared step's untimed part too), then its sync."""
    untimed = getattr(step, "profopt_untimed", None)
    for _ in range(n):
        if untimed is not None:
            call, after = untimed()
            call()
            if after is not None:
                after()
        else:
            step()
    if sync is not None:
        sync()
