"""The machine-balance probe: how many FLOP/s and bytes/s this runner really gives.

In: nothing but the machine (and torch, when the step loaded it). Out: a dict with matmul_gflops,
copy_gbps, ridge_flops_per_byte, backend, ram_mb (and mem_limit_mb where a cgroup caps this process
below it), and a `device` dict of the same on CUDA.

CPU runners have no datasheet, so the ridge point of the roofline (FLOPs per byte at which a kernel
stops being limited by memory bandwidth) is measured once per run, in about a second:
a large float32 matmul gives FLOP/s, a large array copy gives GB/s (read + write bytes).
The best of a few repetitions is kept, because interference only ever makes a run slower.

When the step already loaded torch, the probe uses torch (its BLAS and threads are the ones the step
uses); otherwise numpy. When torch has initialized CUDA, the device is probed too and its figures
go under "device".
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable

_MATMUL_N = 1024
_COPY_MB = 64
_BUDGET_S = 0.35  # per measurement; four measurements at most


def _best_seconds(fn: Callable[[], object], budget_s: float = _BUDGET_S, min_reps: int = 3) -> float:
    fn()  # first touch: page faults, thread pool start, lazy init
    best = math.inf
    reps = 0
    deadline = time.perf_counter() + budget_s
    while reps < min_reps or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        reps += 1
        if reps >= 50:
            break
    return best


def _host_numpy() -> tuple[float, float]:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.random((_MATMUL_N, _MATMUL_N), dtype=np.float32)
    b = rng.random((_MATMUL_N, _MATMUL_N), dtype=np.float32)
    t_mm = _best_seconds(lambda: a @ b)
    src = np.ones(_COPY_MB * 2**18, dtype=np.float32)
    dst = np.empty_like(src)
    t_copy = _best_seconds(lambda: np.copyto(dst, src))
    return 2 * _MATMUL_N**3 / t_mm, 2 * src.nbytes / t_copy


def _torch_pair(torch, device: str, sync: Callable[[], None]) -> tuple[float, float]:
    a = torch.rand(_MATMUL_N, _MATMUL_N, device=device)
    b = torch.rand(_MATMUL_N, _MATMUL_N, device=device)
    scale = 4 if device != "cpu" else 1  # a GPU needs more work per call to be timed honestly
    src = torch.ones(_COPY_MB * 2**18 * scale, device=device)
    dst = torch.empty_like(src)

    def mm() -> None:
        torch.mm(a, b)
        sync()

    def copy() -> None:
        dst.copy_(src)
        sync()

    t_mm = _best_seconds(mm)
    t_copy = _best_seconds(copy)
    return 2 * _MATMUL_N**3 / t_mm, 2 * src.numel() * src.element_size() / t_copy


def _figures(flops: float, bytes_per_s: float, backend: str) -> dict:
    return {
        "matmul_gflops": round(flops / 1e9, 2),
        "copy_gbps": round(bytes_per_s / 1e9, 2),
        "ridge_flops_per_byte": round(flops / bytes_per_s, 2),
        "backend": backend,
    }


def _ram_mb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20, 1)
    except (ValueError, OSError, AttributeError):
        return None


_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def _cgroup_limit_mb() -> float | None:
    """The memory a cgroup lets this process use (a container's --memory), where one caps it: that,
    not the machine's RAM, is where a step runs out. cgroup v2's `memory.max`, else v1's limit."""
    for path in _CGROUP_LIMITS:
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except (OSError, ValueError):
            continue
        if text.isdigit():
            return round(int(text) / 2**20, 1)
        return None  # "max": no limit
    return None


def _cuda_ready(torch) -> bool:
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except RuntimeError:
        return False


def op_floor_us(torch, grad: bool = False) -> float:
    """What one trivial op call costs here (a 1-element add: the dispatcher, an allocation, no work;
    `grad`: with autograd recording it, as a training step's forward ops are), in µs: the unit of a
    step's launch/framework overhead (op calls × this)."""
    x, y = torch.ones(1, requires_grad=grad), torch.ones(1)
    calls = 500
    return round(_best_seconds(lambda: [torch.add(x, y) for _ in range(calls)], budget_s=0.05) / calls * 1e6, 3)


def probe() -> dict:
    """Measure this machine's balance: matmul GFLOP/s, copy GB/s, ridge FLOPs/byte, RAM (and GPU);
    with torch, also the cost of a trivial op."""
    torch = sys.modules.get("torch")
    if torch is not None:
        flops, bw = _torch_pair(torch, "cpu", lambda: None)
        out = _figures(flops, bw, "torch")
        out["op_floor_us"] = op_floor_us(torch)
        out["op_floor_grad_us"] = op_floor_us(torch, grad=True)
    else:
        flops, bw = _host_numpy()
        out = _figures(flops, bw, "numpy")
    out.update(host_memory())
    device = probe_device()
    if device is not None:
        out["device"] = device
    return out


def host_memory() -> dict:
    """The part of the balance that costs nothing to read: the machine's RAM, and the cgroup's limit
    where one is set below it."""
    ram, limit = _ram_mb(), _cgroup_limit_mb()
    out: dict = {"ram_mb": ram}
    if limit is not None and (ram is None or limit < ram):
        out["mem_limit_mb"] = limit
    return out


def probe_device() -> dict | None:
    """The GPU's balance (and name, memory) when this process's torch has initialized CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not _cuda_ready(torch):
        return None
    flops, bw = _torch_pair(torch, "cuda", torch.cuda.synchronize)
    device = _figures(flops, bw, "torch.cuda")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    device["name"] = props.name
    device["memory_mb"] = round(props.total_memory / 2**20, 1)
    return device
