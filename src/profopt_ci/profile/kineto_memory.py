"""Memory from a Kineto trace's allocator instants: per-op allocation, peaks, decode growth.

In: the host events (profile/kineto_events.py), the `[memory]` instant events, the step windows and
the decode spans. Out: bytes allocated inside each op itself (by event id), peak allocated /
reserved MB per device type within the steps, and `decode_growth` — the median over steps of the
slope (MB per decode span) and correlation of allocated memory at each decode span's end.
"""
from __future__ import annotations

import bisect
import statistics
from collections import defaultdict

from profopt_ci.figures import sig as _r
from profopt_ci.profile.kineto_events import EPS, Ev


def attribute_memory(events: list[Ev], mem: list[dict]) -> dict[int, float]:
    """Bytes allocated (+) and freed (−) inside each op itself: the innermost op containing the event."""
    by_thread: dict[tuple, list[Ev]] = defaultdict(list)
    for ev in events:
        by_thread[ev.thread].append(ev)
    for evs in by_thread.values():
        evs.sort(key=lambda e: e.ts)
    starts = {key: [e.ts for e in evs] for key, evs in by_thread.items()}
    out: dict[int, float] = defaultdict(float)
    for m in mem:
        key = (m.get("pid"), m.get("tid"))
        if key not in by_thread:
            continue
        ts = float(m["ts"])
        i = bisect.bisect_right(starts[key], ts + EPS) - 1
        # With proper nesting, the innermost op containing ts is the last op started before ts
        # or one of its ancestors.
        ev = by_thread[key][i] if i >= 0 else None
        while ev is not None and ev.end < ts - EPS:
            ev = ev.parent
        if ev is not None:
            out[id(ev)] += float(m.get("args", {}).get("Bytes", 0))
    return out


def memory_summary(mem: list[dict], windows: list[tuple[float, float]], decode: list[tuple[float, float]]) -> dict:
    """Peak allocated/reserved per device type, and allocated-memory growth across decode spans."""
    out: dict = {}
    lo, hi = windows[0][0], windows[-1][1]
    for m in mem:
        args = m.get("args", {})
        dev = "device" if args.get("Device Type") == 1 else "host"
        if not lo - EPS <= float(m["ts"]) <= hi + EPS:
            continue
        alloc = float(args.get("Total Allocated", 0)) / 2**20
        resv = float(args.get("Total Reserved", 0)) / 2**20
        out[f"{dev}_peak_allocated_mb"] = _r(max(out.get(f"{dev}_peak_allocated_mb", 0.0), alloc))
        out[f"{dev}_peak_reserved_mb"] = _r(max(out.get(f"{dev}_peak_reserved_mb", 0.0), resv))
    growth = decode_growth(mem, decode, windows)
    if growth:
        out["decode_growth"] = growth
    return out


def decode_growth(mem: list[dict], decode: list[tuple[float, float]],
                  windows: list[tuple[float, float]]) -> dict | None:
    """How allocated memory rises across the decode spans of a step: the median over steps of the
    least-squares slope (MB per decode span) and correlation of the allocation at each span's end."""
    out = {}
    for dev_type, dev in ((1, "device"), (0, "host")):
        series = sorted((float(m["ts"]), float(m["args"].get("Total Allocated", 0)) / 2**20)
                        for m in mem if m.get("args", {}).get("Device Type") == dev_type)
        if not series:
            continue
        ts = [t for t, _ in series]
        fits = []
        for w0, w1 in windows:
            ys = [series[i][1] for _, end in decode if w0 <= end <= w1 + EPS
                  for i in [bisect.bisect_right(ts, end + EPS) - 1] if i >= 0]
            if len(ys) < 4:
                continue
            xs = list(range(len(ys)))
            flat = len(set(ys)) < 2
            fits.append((0.0 if flat else statistics.linear_regression(xs, ys).slope,
                         0.0 if flat else statistics.correlation(xs, ys), len(ys)))
        if fits:
            out[dev] = {"mb_per_span": _r(statistics.median(f[0] for f in fits)),
                        "r": _r(statistics.median(f[1] for f in fits)),
                        "spans": int(statistics.median(f[2] for f in fits))}
    return out or None
