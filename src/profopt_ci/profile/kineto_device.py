"""The device side of a Kineto trace: what the CUDA-only bottleneck rules read.

In: the trace dict, its device events, the kept host events and step windows (profile/kineto_events.py).
Out: the summary's `gpu` block, the figures below.

All figures are per step over the step windows (first step start → last step end):
- kernels_per_step, kernel_ms, median_kernel_us, busy_share (union of kernels, memcpy and memset
  over the window: 1 − busy_share is GPU idle time);
- launches_per_step and median_launch_us (cudaLaunchKernel & co.), short_kernel_share (kernels that
  ran shorter than the median launch call: the host cannot keep such a GPU fed);
- memcpy_ms, pageable_memcpy_ms ("Pageable" in the memcpy name), dtoh_per_step, memset_ms;
- comm_ms / comm_share (NCCL kernels and gloo / c10d host ops) and comm_overlap (the part of NCCL
  kernel time that ran while a compute kernel ran on another stream);
- sync_ms (cuda*Synchronize calls plus .item() / nonzero on the host), category_shares by kernel time;
- total_mb of the device when the trace names it (deviceProperties).
"""
from __future__ import annotations

import statistics
from collections import defaultdict

from profopt_ci.figures import sig as _r
from profopt_ci.profile import opcats

_LAUNCH = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaLaunchCooperativeKernel",
           "cudaGraphLaunch")


def _clip(intervals, windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of the intervals inside the (kept) step windows."""
    return [(max(a, lo), min(b, hi)) for lo, hi in windows for a, b in intervals if b > lo and a < hi]


def union_us(intervals) -> float:
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(intervals):
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def _intersect_us(xs, ys) -> float:
    """Length of (∪xs) ∩ (∪ys)."""
    return union_us(xs) + union_us(ys) - union_us(list(xs) + list(ys))


def gpu_block(trace: dict, gpu: list, host: list, windows: list[tuple[float, float]], n: int) -> dict:
    span = sum(b - a for a, b in windows)
    dev = [e for e in gpu if any(e.end > lo and e.ts < hi for lo, hi in windows)]
    kernels = [e for e in dev if e.cat == "kernel"]
    memcpy = [e for e in dev if e.cat == "gpu_memcpy"]
    memset = [e for e in dev if e.cat == "gpu_memset"]
    comm_k = [e for e in kernels if opcats.kernel_category(e.name) == "communication"]
    compute_k = [e for e in kernels if opcats.kernel_category(e.name) != "communication"]
    launches = [e for e in host if e.name in _LAUNCH]
    comm_host = [e for e in host if e.cat == "cpu_op" and opcats.is_comm(e.name)
                 and not any(opcats.is_comm(c.name) for c in e.children)]
    sync_host = [e for e in host if opcats.is_sync(e.name)]

    def iv(evs):
        return [(e.ts, e.end) for e in evs]

    busy = union_us(_clip(iv(kernels + memcpy + memset), windows))
    comm_us = union_us(_clip(iv(comm_k) + iv(comm_host), windows))
    launch_us = statistics.median([e.dur for e in launches]) if launches else None
    kernel_us = [e.dur for e in kernels]
    cats: dict[str, float] = defaultdict(float)
    for e in kernels + memset:  # memcpy crosses the bus: the transfer rule reads it, not the roofline
        cats[opcats.kernel_category(e.name)] += e.dur
    whole = sum(cats.values())
    return {
        "kernels_per_step": _r(len(kernels) / n),
        "kernel_ms": _r(sum(kernel_us) / 1000 / n),
        "median_kernel_us": _r(statistics.median(kernel_us)) if kernel_us else None,
        "busy_share": _r(busy / span) if span > 0 else None,
        "launches_per_step": _r(len(launches) / n),
        "median_launch_us": _r(launch_us) if launch_us is not None else None,
        "short_kernel_share": _r(sum(d < launch_us for d in kernel_us) / len(kernel_us))
        if kernel_us and launch_us else None,
        "memcpy_ms": _r(sum(e.dur for e in memcpy) / 1000 / n),
        "pageable_memcpy_ms": _r(sum(e.dur for e in memcpy if "pageable" in e.name.lower()) / 1000 / n),
        "dtoh_per_step": _r(sum(1 for e in memcpy if "dtoh" in e.name.lower()) / n),
        "memset_ms": _r(sum(e.dur for e in memset) / 1000 / n),
        "comm_ms": _r(comm_us / 1000 / n),
        "comm_share": _r(comm_us / span) if span > 0 else 0.0,
        "comm_overlap": _r(_intersect_us(iv(comm_k), iv(compute_k)) / union_us(iv(comm_k))) if comm_k else None,
        "sync_ms": _r(union_us(iv(sync_host)) / 1000 / n),
        "total_mb": _device_total_mb(trace),
        "category_shares": {k: _r(v / whole) for k, v in sorted(cats.items(), key=lambda kv: -kv[1])}
        if whole else {},
    }


def _device_total_mb(trace: dict) -> float | None:
    props = trace.get("deviceProperties") or []
    for p in props:
        if isinstance(p, dict) and p.get("totalGlobalMem"):
            return _r(float(p["totalGlobalMem"]) / 2**20)
    return None
