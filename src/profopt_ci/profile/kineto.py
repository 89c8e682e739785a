"""Summarize a torch.profiler (Kineto) chrome trace into the profile summary of docs/data-model.md.

Pure: `summarize_trace(trace_dict)` reads only the JSON that `prof.export_chrome_trace` writes, so
a stored trace, a live capture and a synthetic CUDA trace in a test go through the same code.

How the figures are made:
- Steps are the `ProfilerStep#N` spans; every figure is per step (total over the active steps / N).
  A step longer than 1.5× the median step was interrupted (scheduler, GC, a neighbour process on a
  shared runner) and is left out ("steps_dropped"), so one stall does not land on a random op.
- Phases come from labels torch writes by itself (`enumerate(DataLoader)#…` → data_loading,
  `Optimizer.step#…` / `Optimizer.zero_grad#…` → optimizer, `autograd::engine::evaluate_function: …`
  → backward; consecutive backward spans with nothing else between them are merged so the engine's
  own gaps count as backward) and from the user's `profopt.phase.<name>` spans.
  Overlaps: each instant of a step belongs to ONE phase, the innermost label covering it (the one
  that started last). A user's phase("decode") around phase("sampling") gives decode the time
  outside sampling; a phase("train") around everything keeps only what no finer label claims.
  "other" is the step time no label covers, so the shares sum to 1.
- Self time of a host event = its duration minus its direct children's (same thread).
  Labels (user annotations) have self time too: that is Python between ops, shown with category
  "python" ("data" / "optimizer" for those labels); the step's own remainder is "python (outside ops)".
- python_share: the part of the step not inside any native op (cpu_op) — Python and its glue.
  On CUDA the capture waits for the device at the end of each step inside a `profopt.capture.sync`
  span; that wait is left out of the ops and of sync_ms (it is not the user's sync).
- small_ops_share: the share of native op calls whose self time is under 10 µs;
  small_ops_time_share: their self time as a share of the step.
- FLOPs from input shapes (torch's with_flops numbers live only in its slow event parser, not in
  the trace): mm / addmm / bmm / baddbmm, scaled_dot_product_attention and convolutions, each
  counted at the outermost op that qualifies (so SDPA's inner matmuls are not counted twice).
- bytes_per_step: per outermost op, the input tensors' bytes plus one output the size of the
  largest input (a GEMM's output is m×n; views, allocations and possibly-no-op casts move nothing),
  or its child ops' traffic when they account for at least half of that. An estimate of memory
  traffic for the roofline, null when the trace has no shapes.
- phase_detail: ops, traffic and GB/s inside the optimizer and decode phases (their rules read it).
- memory: peak allocated/reserved from the allocator events; decode_growth, the slope and fit of
  allocated memory at the end of each decode span within a step (a cache growing with length).
- GPU (only when the trace has device events): kernels per step, busy share of the step window,
  memcpy (pageable) time, NCCL/gloo time and its overlap with compute kernels, launches, device
  memory peaks, and the device-memory growth over decode spans.
"""
from __future__ import annotations

import bisect
import functools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from profopt_ci.figures import sig as _r
from profopt_ci.profile import opcats
from profopt_ci.profile.kineto_device import union_us

SMALL_OP_US = 10.0
STALL_FACTOR = 1.5
CAPTURE_SYNC = "profopt.capture.sync"
PY_OUTSIDE = "python (outside ops)"
_HOST_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_EPS = 0.01  # µs: chrome traces round timestamps to ns


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


def _load(trace: dict) -> tuple[list[Ev], list[Ev], list[dict]]:
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


def _nest(host: list[Ev]) -> None:
    by_thread: dict[tuple, list[Ev]] = defaultdict(list)
    for ev in host:
        by_thread[ev.thread].append(ev)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.ts, -e.dur))
        stack: list[Ev] = []
        for ev in evs:
            while stack and ev.ts >= stack[-1].end - _EPS:
                stack.pop()
            if stack and ev.end <= stack[-1].end + _EPS:
                ev.parent = stack[-1]
                stack[-1].children.append(ev)
            stack.append(ev)


def _steps(host: list[Ev]) -> list[Ev]:
    steps = sorted((e for e in host if e.name.startswith("ProfilerStep#")), key=lambda e: e.ts)
    if steps:
        return steps
    # A trace without a schedule: the whole host span is one step.
    start = min(e.ts for e in host)
    whole = Ev("ProfilerStep#0", "user_annotation", start, max(e.end for e in host) - start, (None, None))
    whole.children = [e for e in host if e.parent is None]
    return [whole]


def _in_capture_sync(ev: Ev) -> bool:
    """The capture's own end-of-step device sync is not the user's work (nor the user's sync)."""
    while ev is not None:
        if ev.name == CAPTURE_SYNC:
            return True
        ev = ev.parent
    return False


def _typical(steps: list[Ev]) -> list[Ev]:
    """Steps no longer than STALL_FACTOR × the median: a longer one was interrupted (scheduler,
    GC, another process) and would blame whichever op it stalled in."""
    median = statistics.median(s.dur for s in steps)
    return [s for s in steps if s.dur <= STALL_FACTOR * median]


def _assign_steps(events: list[Ev], steps: list[Ev]) -> list[Ev]:
    starts = [s.ts for s in steps]
    kept = []
    for ev in events:
        i = bisect.bisect_right(starts, ev.ts + _EPS) - 1
        if i >= 0 and ev.ts <= steps[i].end + _EPS and not ev.name.startswith("ProfilerStep#"):
            ev.step = i
            kept.append(ev)
    return kept


# ---- phases -------------------------------------------------------------------------------------

def _label_spans(events: list[Ev]) -> list[tuple[float, float, str]]:
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
    i = bisect.bisect_right(sorted_ts, a - _EPS)
    return i < len(sorted_ts) and sorted_ts[i] < b - _EPS


def resolve_phases(spans: list[tuple[float, float, str]], windows: list[tuple[float, float]]
                   ) -> list[tuple[float, float, str]]:
    """Cut the step windows into non-overlapping segments, each owned by its innermost label."""
    segments: list[tuple[float, float, str]] = []
    for w0, w1 in windows:
        inside = [(max(a, w0), min(b, w1), n) for a, b, n in spans if b > w0 and a < w1]
        bounds = sorted({w0, w1, *(a for a, _, _ in inside), *(b for _, b, _ in inside)})
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            active = [(a, n) for a, b, n in inside if a <= lo + _EPS and b >= hi - _EPS]
            if active and hi > lo:
                segments.append((lo, hi, max(active)[1]))
    return segments


# ---- ops ----------------------------------------------------------------------------------------

def _op_rows(events: list[Ev], steps: list[Ev], mem_by_ev: dict[int, float], n: int) -> list[dict]:
    rows: dict[str, dict] = {}
    flops = {id(e): opcats.op_flops(e.name, e.args)
             for e in _outermost(events, lambda e: e.native and opcats.counts_flops(e.name))}
    for ev in events:
        if ev.cat in ("cuda_runtime", "cuda_driver", "python_function"):
            continue
        row = rows.setdefault(ev.name, {"name": ev.name, "self_ms": 0.0, "total_ms": 0.0, "calls": 0,
                                        "category": opcats.category(ev.name, label=not ev.native),
                                        "self_memory_mb": 0.0, "flops": 0.0})
        row["self_ms"] += ev.self_us / 1000
        if not _nested_in_same(ev):
            row["total_ms"] += ev.dur / 1000
        row["calls"] += 1
        row["self_memory_mb"] += mem_by_ev.get(id(ev), 0.0) / 2**20
        row["flops"] += flops.get(id(ev), 0.0)
    outside = sum(s.self_us for s in steps) / 1000
    rows[PY_OUTSIDE] = {"name": PY_OUTSIDE, "self_ms": outside, "total_ms": outside, "calls": len(steps),
                        "category": "python", "self_memory_mb": 0.0, "flops": 0.0}
    for row in rows.values():
        for key in ("self_ms", "total_ms", "self_memory_mb", "flops"):
            row[key] = _r(row[key] / n)
        row["calls"] = _r(row["calls"] / n)
    return list(rows.values())


def _nested_in_same(ev: Ev) -> bool:
    p = ev.parent
    while p is not None:
        if p.name == ev.name:
            return True
        p = p.parent
    return False


def _attribute_memory(events: list[Ev], mem: list[dict]) -> dict[int, float]:
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
        i = bisect.bisect_right(starts[key], ts + _EPS) - 1
        # With proper nesting, the innermost op containing ts is the last op started before ts
        # or one of its ancestors.
        ev = by_thread[key][i] if i >= 0 else None
        while ev is not None and ev.end < ts - _EPS:
            ev = ev.parent
        if ev is not None:
            out[id(ev)] += float(m.get("args", {}).get("Bytes", 0))
    return out


# ---- counters -----------------------------------------------------------------------------------

def _union_ms(intervals: list[tuple[float, float]]) -> float:
    """Covered time of µs intervals, in ms."""
    return union_us(intervals) / 1000


def _outermost(events: list[Ev], pred) -> list[Ev]:
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


def _traffic(ev: Ev) -> float:
    """Bytes an op moves: its own estimate, unless its child ops move at least half of that (a
    composite such as linear → addmm, to → copy_): then theirs. Cached on the event."""
    cached = ev.__dict__.get("_traffic")
    if cached is not None:
        return cached
    own = opcats.op_bytes(ev.name, ev.args)
    inner = sum(_traffic(c) for c in ev.children if c.native)
    ev.__dict__["_traffic"] = value = inner if inner >= 0.5 * own else own
    return value


def _bytes(events: list[Ev]) -> tuple[float, bool]:
    """Traffic of the outermost native ops among `events`, and whether the trace had shapes."""
    outer = _outermost(events, lambda e: e.native)
    return sum(_traffic(e) for e in outer), any("Input Dims" in e.args for e in outer)


def _counters(events: list[Ev], step_ms: float, n: int, flops_per_step: float) -> dict:
    native = [e for e in events if e.native]
    small = sum(1 for e in native if e.self_us < SMALL_OP_US)
    small_ms = sum(e.self_us for e in native if e.self_us < SMALL_OP_US) / 1000 / n
    in_native = _union_ms([(e.ts, e.end) for e in _outermost(events, lambda e: e.native)]) / n
    sync = _union_ms([(e.ts, e.end) for e in _outermost(events, lambda e: opcats.is_sync(e.name))]) / n
    nbytes, has_shapes = _bytes(events)
    return {
        "ops_per_step": _r(len(native) / n),
        "small_ops_share": _r(small / len(native)) if native else 0.0,
        "sync_ms": _r(sync),
        "small_ops_time_share": _r(small_ms / step_ms) if step_ms > 0 else None,
        "python_share": _r(max(0.0, 1 - in_native / step_ms)) if step_ms > 0 else None,
        "flops_per_step": _r(flops_per_step),
        "bytes_per_step": _r(nbytes / n) if has_shapes else None,
    }


def _category_shares(ops: list[dict]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for row in ops:
        totals[row["category"]] += row["self_ms"]
    whole = sum(totals.values())
    return {k: _r(v / whole) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])} if whole else {}


def _merged(spans: list[tuple[float, float, str]], phase: str) -> list[tuple[float, float]]:
    """The union of one phase's label spans, inclusive of any finer labels inside them."""
    out: list[tuple[float, float]] = []
    for a, b in sorted((a, b) for a, b, name in spans if name == phase):
        if out and a <= out[-1][1] + _EPS:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _phase_facts(events: list[Ev], spans: list[tuple[float, float, str]], phase: str, n: int) -> dict:
    """Ops and traffic inside one phase (optimizer, decode), what its rules look at."""
    segs = _merged(spans, phase)
    if not segs:
        return {}
    starts = [a for a, _ in segs]

    def inside(ev: Ev) -> bool:
        i = bisect.bisect_right(starts, ev.ts + _EPS) - 1
        return i >= 0 and ev.ts <= segs[i][1] + _EPS

    native = [e for e in events if e.native and inside(e)]
    nbytes, has_shapes = _bytes(native)
    ms = sum(b - a for a, b in segs) / 1000
    return {"ops_per_step": _r(len(native) / n),
            "small_ops_share": _r(sum(e.self_us < SMALL_OP_US for e in native) / len(native)) if native else 0.0,
            "bytes_per_step": _r(nbytes / n) if has_shapes else None,
            "gbps": _r(nbytes / (ms / 1000) / 1e9) if has_shapes and ms > 0 else None,
            "spans_per_step": _r(len(segs) / n),
            # foreach / fused kernels: the phase already batches its per-tensor work
            "multi_tensor_ops_per_step": _r(sum(opcats.is_multi_tensor(e.name) for e in native) / n)}


def summarize_trace(trace: dict, *, top: int = 30) -> dict:
    """The profile summary fields a torch trace gives: step time, phases, ops, counters (+ gpu)."""
    host, gpu, mem = _load(trace)
    if not host:
        return {"kind": "torch", "reason": "empty trace", "step_time_ms": None, "phases": {},
                "phase_shares": {}, "ops": [], "counters": {}}
    _nest(host)
    all_steps = _steps(host)
    steps = _typical(all_steps)
    n = len(steps)
    events = [e for e in _assign_steps(host, steps) if not _in_capture_sync(e)]
    step_ms = sum(s.dur for s in steps) / 1000 / n
    windows = [(s.ts, s.end) for s in steps]
    spans = _label_spans(events)
    segments = resolve_phases(spans, windows)
    phases: dict[str, float] = defaultdict(float)
    for a, b, name in segments:
        phases[name] += (b - a) / 1000 / n
    covered = sum(phases.values())
    if step_ms - covered > 1e-9:
        phases["other"] = step_ms - covered
    ops = _op_rows(events, steps, _attribute_memory(events, mem), n)
    flops = sum(r["flops"] for r in ops)
    out = {
        "step_time_ms": _r(step_ms),
        "steps": n,
        "steps_dropped": len(all_steps) - n,
        "phases": {k: _r(v) for k, v in phases.items()},
        "phase_shares": {k: _r(v / step_ms) for k, v in phases.items()} if step_ms > 0 else {},
        "ops": sorted(ops, key=lambda r: -r["self_ms"])[:top],
        "counters": _counters(events, step_ms, n, flops),
        "category_shares": _category_shares(ops),
    }
    details = {p: _phase_facts(events, spans, p, n) for p in ("optimizer", "decode")}
    out["phase_detail"] = {p: d for p, d in details.items() if d}
    out["memory"] = _memory(mem, windows, _merged(spans, "decode"))
    if gpu:
        from profopt_ci.profile.kineto_device import gpu_block

        out["gpu"] = gpu_block(trace, gpu, events, windows, n)
        out["category_shares"] = out["gpu"].pop("category_shares") or out["category_shares"]
    return out


def _memory(mem: list[dict], windows: list[tuple[float, float]], decode: list[tuple[float, float]]) -> dict:
    """Peak allocated/reserved per device type, and allocated-memory growth across decode spans."""
    out: dict = {}
    lo, hi = windows[0][0], windows[-1][1]
    for m in mem:
        args = m.get("args", {})
        dev = "device" if args.get("Device Type") == 1 else "host"
        if not lo - _EPS <= float(m["ts"]) <= hi + _EPS:
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
            ys = [series[i][1] for _, end in decode if w0 <= end <= w1 + _EPS
                  for i in [bisect.bisect_right(ts, end + _EPS) - 1] if i >= 0]
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
