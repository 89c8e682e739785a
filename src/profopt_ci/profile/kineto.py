"""Summarize a torch.profiler (Kineto) chrome trace into the profile summary of docs/data-model.md.

In: a chrome-trace dict. Out: the summary dict (step_time_ms, steps, phases, ops, counters,
category_shares, phase_detail, memory, and gpu when the trace has device events). Pure:
`summarize_trace(trace_dict)` reads only the JSON that `prof.export_chrome_trace` writes, so a
stored trace, a live capture and a synthetic CUDA trace in a test go through the same code.

How the figures are made:
- Steps are the `ProfilerStep#N` spans; every figure is per step (total over the active steps / N),
  but a phase's time is its median over the steps.
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
- Self time of a host event = its duration minus its direct children's (same thread). With two
  steps or more each op row has `self_ms_range`, the least and the most self ms in one step.
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
import statistics
from collections import defaultdict

from profopt_ci.figures import sig as _r
from profopt_ci.profile import opcats
from profopt_ci.profile.kineto_events import (
    CAPTURE_SYNC,
    EPS,
    Ev,
    assign_steps,
    in_capture_sync,
    load,
    nest,
    outermost,
    profiler_steps,
    typical,
    union_ms,
)
from profopt_ci.profile.kineto_memory import attribute_memory, memory_summary
from profopt_ci.profile.kineto_phases import label_spans, merged, resolve_phases

__all__ = ["summarize_trace", "CAPTURE_SYNC", "PY_OUTSIDE", "SMALL_OP_US"]

SMALL_OP_US = 10.0
PY_OUTSIDE = "python (outside ops)"


def _op_rows(events: list[Ev], steps: list[Ev], mem_by_ev: dict[int, float], n: int) -> list[dict]:
    rows: dict[str, dict] = {}
    per_step: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)  # self ms of each op in each step
    flops = {id(e): opcats.op_flops(e.name, e.args)
             for e in outermost(events, lambda e: e.native and opcats.counts_flops(e.name))}
    for ev in events:
        if ev.cat in ("cuda_runtime", "cuda_driver", "python_function"):
            continue
        row = rows.setdefault(ev.name, {"name": ev.name, "self_ms": 0.0, "total_ms": 0.0, "calls": 0,
                                        "category": opcats.category(ev.name, label=not ev.native),
                                        "self_memory_mb": 0.0, "flops": 0.0})
        row["self_ms"] += ev.self_us / 1000
        if 0 <= ev.step < n:
            per_step[ev.name][ev.step] += ev.self_us / 1000
        if not _nested_in_same(ev):
            row["total_ms"] += ev.dur / 1000
        row["calls"] += 1
        row["self_memory_mb"] += mem_by_ev.get(id(ev), 0.0) / 2**20
        row["flops"] += flops.get(id(ev), 0.0)
    outside = sum(s.self_us for s in steps) / 1000
    rows[PY_OUTSIDE] = {"name": PY_OUTSIDE, "self_ms": outside, "total_ms": outside, "calls": len(steps),
                        "category": "python", "self_memory_mb": 0.0, "flops": 0.0}
    per_step[PY_OUTSIDE] = [s.self_us / 1000 for s in steps]
    for row in rows.values():
        for key in ("self_ms", "total_ms", "self_memory_mb", "flops"):
            row[key] = _r(row[key] / n)
        row["calls"] = _r(row["calls"] / n)
        if n >= 2:  # the op's spread over the steps: what the hot-op diff weighs a delta against
            times = per_step[row["name"]]
            row["self_ms_range"] = [_r(min(times)), _r(max(times))]
    return list(rows.values())


def _nested_in_same(ev: Ev) -> bool:
    p = ev.parent
    while p is not None:
        if p.name == ev.name:
            return True
        p = p.parent
    return False


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
    outer = outermost(events, lambda e: e.native)
    return sum(_traffic(e) for e in outer), any("Input Dims" in e.args for e in outer)


def _counters(events: list[Ev], step_ms: float, n: int, flops_per_step: float) -> dict:
    native = [e for e in events if e.native]
    small = sum(1 for e in native if e.self_us < SMALL_OP_US)
    small_ms = sum(e.self_us for e in native if e.self_us < SMALL_OP_US) / 1000 / n
    in_native = union_ms([(e.ts, e.end) for e in outermost(events, lambda e: e.native)]) / n
    sync = union_ms([(e.ts, e.end) for e in outermost(events, lambda e: opcats.is_sync(e.name))]) / n
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


def _phase_facts(events: list[Ev], spans: list[tuple[float, float, str]], phase: str, n: int) -> dict:
    """Ops and traffic inside one phase (optimizer, decode), what its rules look at."""
    segs = merged(spans, phase)
    if not segs:
        return {}
    starts = [a for a, _ in segs]

    def inside(ev: Ev) -> bool:
        i = bisect.bisect_right(starts, ev.ts + EPS) - 1
        return i >= 0 and ev.ts <= segs[i][1] + EPS

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


def _phase_medians(segments: list[tuple[float, float, str]], windows: list[tuple[float, float]]) -> dict[str, float]:
    """Each phase's ms per step: the median over the steps of its time in each (0 where a step has
    none), so a stall that lands in one step's data loading does not make the input pipeline look
    starved; what it added stays in the mean step and so in "other"."""
    starts = [w0 for w0, _ in windows]
    per_step: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(windows))
    for a, b, name in segments:
        per_step[name][bisect.bisect_right(starts, a + EPS) - 1] += (b - a) / 1000
    return {name: statistics.median(times) for name, times in per_step.items()}


def summarize_trace(trace: dict, *, top: int = 30) -> dict:
    """The profile summary fields a torch trace gives: step time, phases, ops, counters (+ gpu)."""
    host, gpu, mem = load(trace)
    if not host:
        return {"kind": "torch", "reason": "empty trace", "step_time_ms": None, "phases": {},
                "phase_shares": {}, "ops": [], "counters": {}}
    nest(host)
    all_steps = profiler_steps(host)
    steps = typical(all_steps)
    n = len(steps)
    events = [e for e in assign_steps(host, steps) if not in_capture_sync(e)]
    step_ms = sum(s.dur for s in steps) / 1000 / n
    windows = [(s.ts, s.end) for s in steps]
    spans = label_spans(events)
    phases = _phase_medians(resolve_phases(spans, windows), windows)
    covered = sum(phases.values())
    if step_ms - covered > 1e-9:
        phases["other"] = step_ms - covered
    ops = _op_rows(events, steps, attribute_memory(events, mem), n)
    flops = sum(r["flops"] for r in ops)
    out = {
        "step_time_ms": _r(step_ms),
        "steps": n,
        "chunks": n,  # each op's self_ms_range is over the steps
        "steps_dropped": len(all_steps) - n,
        "phases": {k: _r(v) for k, v in phases.items()},
        "phase_shares": {k: _r(v / step_ms) for k, v in phases.items()} if step_ms > 0 else {},
        "ops": sorted(ops, key=lambda r: -r["self_ms"])[:top],
        "counters": _counters(events, step_ms, n, flops),
        "category_shares": _category_shares(ops),
    }
    details = {p: _phase_facts(events, spans, p, n) for p in ("optimizer", "decode")}
    out["phase_detail"] = {p: d for p, d in details.items() if d}
    out["memory"] = memory_summary(mem, windows, merged(spans, "decode"))
    if gpu:
        from profopt_ci.profile.kineto_device import gpu_block

        out["gpu"] = gpu_block(trace, gpu, events, windows, n)
        out["category_shares"] = out["gpu"].pop("category_shares") or out["category_shares"]
    return out
