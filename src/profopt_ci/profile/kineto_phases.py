"""The phases of a step from a Kineto trace's labels: which phase owns each instant of a step.

In: the events of the kept steps (profile/kineto_events.py) and the step windows. Out: label spans
(torch's own labels: DataLoader → data_loading, Optimizer.step / zero_grad → optimizer, autograd
engine → backward, merged across the engine's own gaps; and the user's `profopt.phase.<name>`),
non-overlapping segments each owned by its innermost label, and one phase's merged spans.
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from profopt_ci.profile import opcats
from profopt_ci.profile.kineto_events import EPS, Ev


def label_spans(events: list[Ev]) -> list[tuple[float, float, str]]:
    spans: list[tuple[float, float, str]] = []
    engine: list[Ev] = []
    for ev in events:
        name = opcats.phase_of(ev.name)
        if name == "backward" and ev.name.startswith("autograd::engine"):
            if not _under_engine(ev):
                engine.append(ev)
        elif name is not None:
            spans.append((ev.ts, ev.end, name))
    return spans + _merge_backward(engine)


def _merge_backward(engine: list[Ev]) -> list[tuple[float, float, str]]:
    """Merge sibling engine spans that follow each other with no other sibling op between them."""
    out: list[tuple[float, float, str]] = []
    groups: dict[tuple, list[Ev]] = defaultdict(list)
    for ev in engine:
        groups[(ev.thread, id(ev.parent), ev.step)].append(ev)
    for (_, _, _), evs in groups.items():
        parent = evs[0].parent
        siblings = parent.children if parent is not None else []
        others = sorted(e.ts for e in siblings if not e.name.startswith("autograd::engine"))
        evs.sort(key=lambda e: e.ts)
        lo, hi = evs[0].ts, evs[0].end
        for ev in evs[1:]:
            if _any_between(others, hi, ev.ts):
                out.append((lo, hi, "backward"))
                lo = ev.ts
            hi = max(hi, ev.end)
        out.append((lo, hi, "backward"))
    return out


def _under_engine(ev: Ev) -> bool:
    p = ev.parent
    while p is not None:
        if p.name.startswith("autograd::engine"):
            return True
        p = p.parent
    return False


def _any_between(sorted_ts: list[float], a: float, b: float) -> bool:
    i = bisect.bisect_right(sorted_ts, a - EPS)
    return i < len(sorted_ts) and sorted_ts[i] < b - EPS


def resolve_phases(spans: list[tuple[float, float, str]], windows: list[tuple[float, float]]
                   ) -> list[tuple[float, float, str]]:
    """Cut the step windows into non-overlapping segments, each owned by its innermost label."""
    segments: list[tuple[float, float, str]] = []
    for w0, w1 in windows:
        inside = [(max(a, w0), min(b, w1), n) for a, b, n in spans if b > w0 and a < w1]
        bounds = sorted({w0, w1, *(a for a, _, _ in inside), *(b for _, b, _ in inside)})
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            active = [(a, n) for a, b, n in inside if a <= lo + EPS and b >= hi - EPS]
            if active and hi > lo:
                segments.append((lo, hi, max(active)[1]))
    return segments


def merged(spans: list[tuple[float, float, str]], phase: str) -> list[tuple[float, float]]:
    """The union of one phase's label spans, inclusive of any finer labels inside them."""
    out: list[tuple[float, float]] = []
    for a, b in sorted((a, b) for a, b, name in spans if name == phase):
        if out and a <= out[-1][1] + EPS:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
