"""The bottleneck rules as data (shared/research/bottlenecks.md): signal → class → next action.

In: `Facts` (profile summaries and metrics). Out: `RULES`, an ordered list of (class, signal,
next action), read by `bottleneck`.

`RULES` is ordered by priority; the first rule whose signal fires names the class. The order is
capacity > sync > data > communication > launch > bandwidth/compute, because a fix for an earlier
class changes what the later ones measure (an OOM hides everything; a per-step sync or a starving
input pipeline makes every other share look smaller than it is).

A signal reads `Facts` (one side's profile summary, the comparison's metrics, the base profile)
and returns the evidence — strings naming the figures that fired it — or None.
Thresholds marked † in the research are module constants here, so they can be tuned in one place.
CUDA-only rules read the summary's "gpu" block and never fire on a host-only profile.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

CLASSES = ("compute", "memory capacity", "memory bandwidth", "communication", "launch/framework overhead",
           "interpreter overhead", "data loading", "host-device sync")

CAPACITY_SHARE = 0.90      # † peak memory / total
RESERVED_RATIO = 1.5       # † reserved ≫ allocated
RESERVED_GAP_MB = 1024.0
PROFILE_MEM_GROWTH = 0.10  # head's profiled peak vs base's, when no metrics are given…
PROFILE_MEM_MIN_MB = 64.0  # …and at least this much
KV_GROWTH_R = 0.9          # allocated memory rises with every decode span…
KV_CAPACITY_SHARE = 0.5    # …and already holds half the device
SYNC_SHARE = 0.05
DATA_SHARE = 0.05
TRANSFER_SHARE = 0.10      # memcpy + memset / step
PAGEABLE_SHARE = 0.02
COMM_SHARE = 0.10
GPU_IDLE = 0.20            # †
SHORT_KERNEL_US = 20.0     # †
OPTIMIZER_SHARE = 0.20
OPTIMIZER_MIN_OPS = 50
SMALL_OPS_SHARE = 0.5      # † share of optimizer op calls with self time < 10 µs
PYTHON_SHARE = 0.5         # cProfile: self time in pure-Python functions
OVERHEAD_SHARE = 0.5       # torch: time outside native ops + time in sub-10 µs ops, of the step
PY_LINES_PER_MS = 100.0    # an interpreter-bound step runs thousands of lines per ms
DECODE_BW_SHARE = 0.6      # achieved decode traffic / measured copy bandwidth
DOMINANT = 0.5
_MEMORYISH = ("elementwise", "copy/memory", "reduction/norm", "optimizer")
_NOT_NATIVE = ("python", "data", "builtin")

Evidence = list[str]


@dataclass
class Facts:
    """What the rules read, with the derived figures they share."""

    profile: dict
    metrics: dict = field(default_factory=dict)
    base_profile: dict | None = None

    @property
    def kind(self) -> str:
        return self.profile.get("kind") or "none"

    @property
    def step_ms(self) -> float:
        return float(self.profile.get("step_time_ms") or 0.0)

    @property
    def counters(self) -> dict:
        return self.profile.get("counters") or {}

    @property
    def gpu(self) -> dict | None:
        return self.profile.get("gpu")

    @property
    def memory(self) -> dict:
        return self.profile.get("memory") or {}

    @property
    def machine(self) -> dict:
        return self.profile.get("machine") or {}

    def share(self, phase: str) -> float:
        return float((self.profile.get("phase_shares") or {}).get(phase) or 0.0)

    def native_shares(self) -> dict[str, float]:
        """Category shares of time spent in native ops (labels' Python self time left out)."""
        cats = {k: v for k, v in (self.profile.get("category_shares") or {}).items() if k not in _NOT_NATIVE}
        whole = sum(cats.values())
        return {k: v / whole for k, v in cats.items()} if whole > 0 else {}

    def intensity(self) -> float | None:
        flops, nbytes = self.counters.get("flops_per_step"), self.counters.get("bytes_per_step")
        return flops / nbytes if flops is not None and nbytes else None

    def ridge(self) -> float | None:
        balance = self.machine.get("device") if self.gpu else self.machine
        return (balance or {}).get("ridge_flops_per_byte")

    def metric(self, name: str) -> dict:
        return (self.metrics or {}).get(name) or {}

    def ops_in(self, category: str, top: int = 3) -> list[dict]:
        return [o for o in self.profile.get("ops") or [] if o.get("category") == category][:top]


@dataclass(frozen=True)
class Rule:
    name: str
    cls: str
    signal: Callable[[Facts], Evidence | None]
    next_action: str


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(x: float) -> str:
    return f"{x:.3g} ms"


def _op_list(ops: list[dict], key: str = "self_ms", unit: str = "ms") -> str:
    return ", ".join(f"{o['name']} {o[key]:.3g} {unit}" for o in ops)


# ---- capacity -----------------------------------------------------------------------------------

def _near_capacity(f: Facts) -> Evidence | None:
    ev: Evidence = []
    text = " ".join(str(x) for x in (f.profile.get("reason"), f.metrics.get("error")) if x).lower()
    if "out of memory" in text or "memoryerror" in text:
        ev.append("the run failed with out-of-memory")
    total = (f.gpu or {}).get("total_mb") or (f.machine.get("device") or {}).get("memory_mb")
    peak = f.memory.get("device_peak_reserved_mb") or f.metric("cuda_max_reserved_mb").get("head")
    if total and peak and peak > CAPACITY_SHARE * total:
        ev.append(f"device memory peak {peak:.0f} MB of {total:.0f} MB ({_pct(peak / total)})")
    rss, ram = f.metric("peak_memory_mb").get("head"), f.machine.get("ram_mb")
    if rss and ram and rss > CAPACITY_SHARE * ram:
        ev.append(f"peak RSS {rss:.0f} MB of {ram:.0f} MB RAM ({_pct(rss / ram)})")
    return ev or None


def _memory_regression(f: Facts) -> Evidence | None:
    ev: Evidence = []
    for key in ("peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb"):
        m = f.metric(key)
        if m.get("verdict") == "regressed":
            ev.append(f"{key.removesuffix('_mb')} {m.get('base', 0):.1f} → {m.get('head', 0):.1f} MB "
                      f"({m.get('delta_pct') or 0:+.1f}% vs base)")
    if not ev and f.base_profile:  # no metrics (a profile-only call): compare the profiles' peaks
        base_mem = f.base_profile.get("memory") or {}
        for key in ("device_peak_allocated_mb", "host_peak_allocated_mb"):
            b, h = base_mem.get(key), f.memory.get(key)
            if b and h and h > (1 + PROFILE_MEM_GROWTH) * b and h - b >= PROFILE_MEM_MIN_MB:
                ev.append(f"{key} {b:.0f} → {h:.0f} MB in the profiles ({100 * (h / b - 1):+.0f}% vs base)")
    alloc = f.metric("cuda_max_allocated_mb").get("head") or f.memory.get("device_peak_allocated_mb")
    resv = f.metric("cuda_max_reserved_mb").get("head") or f.memory.get("device_peak_reserved_mb")
    if alloc and resv and resv > RESERVED_RATIO * alloc and resv - alloc > RESERVED_GAP_MB:
        ev.append(f"reserved {resv:.0f} MB ≫ allocated {alloc:.0f} MB (fragmentation)")
    if not ev:
        return None
    top = sorted((o for o in f.profile.get("ops") or [] if o.get("self_memory_mb")),
                 key=lambda o: -o["self_memory_mb"])[:3]
    if top:
        ev.append("top ops by self memory: " + _op_list(top, "self_memory_mb", "MB/step"))
    return ev


def _kv_growth(f: Facts) -> Evidence | None:
    growth = (f.memory.get("decode_growth") or {}).get("device")
    total = (f.gpu or {}).get("total_mb") or (f.machine.get("device") or {}).get("memory_mb")
    peak = f.memory.get("device_peak_allocated_mb")
    if not (f.gpu and growth and total and peak):
        return None
    if growth["mb_per_span"] > 0 and growth["r"] >= KV_GROWTH_R and peak >= KV_CAPACITY_SHARE * total:
        return [f"device memory grows {growth['mb_per_span']:.3g} MB per decode step "
                f"(r={growth['r']:.2f} over {growth['spans']} steps)",
                f"peak {peak:.0f} MB of {total:.0f} MB ({_pct(peak / total)}): longer contexts will not fit"]
    return None


# ---- sync, data, communication ------------------------------------------------------------------

def _host_device_sync(f: Facts) -> Evidence | None:
    if not f.gpu or f.step_ms <= 0:
        return None
    sync = f.gpu.get("sync_ms") or 0.0
    if sync / f.step_ms < SYNC_SHARE:
        return None
    ev = [f"host waits on the device {_ms(sync)} per step ({_pct(sync / f.step_ms)} of {_ms(f.step_ms)})"]
    ops = f.ops_in("sync")
    if ops:
        ev.append("sync points: " + ", ".join(f"{o['name']} ×{o['calls']:g}/step" for o in ops))
    if f.gpu.get("dtoh_per_step"):
        ev.append(f"{f.gpu['dtoh_per_step']:g} device→host copies per step")
    return ev


def _data_loading(f: Facts) -> Evidence | None:
    share = f.share("data_loading")
    if share <= DATA_SHARE:
        return None
    ms = (f.profile.get("phases") or {}).get("data_loading", 0.0)
    return [f"data loading {_pct(share)} of the step ({_ms(ms)} of {_ms(f.step_ms)}) > {_pct(DATA_SHARE)}"]


def _transfer(f: Facts) -> Evidence | None:
    if not f.gpu or f.step_ms <= 0:
        return None
    pageable = f.gpu.get("pageable_memcpy_ms") or 0.0
    moved = (f.gpu.get("memcpy_ms") or 0.0) + (f.gpu.get("memset_ms") or 0.0)
    ev = []
    if pageable / f.step_ms >= PAGEABLE_SHARE:
        ev.append(f"pageable memcpy {_ms(pageable)} per step ({_pct(pageable / f.step_ms)})")
    if moved / f.step_ms >= TRANSFER_SHARE:
        ev.append(f"memcpy + memset {_ms(moved)} per step ({_pct(moved / f.step_ms)} of the step)")
    return ev or None


def _communication(f: Facts) -> Evidence | None:
    if f.gpu:
        share, overlap = f.gpu.get("comm_share") or 0.0, f.gpu.get("comm_overlap")
    else:
        comm = sum(o.get("total_ms") or 0.0 for o in f.ops_in("communication", top=30))
        share, overlap = (comm / f.step_ms if f.step_ms > 0 else 0.0), None
    if share <= COMM_SHARE:
        return None
    ev = [f"collectives {_pct(share)} of the step > {_pct(COMM_SHARE)}"]
    if overlap is not None:
        ev.append(f"only {_pct(overlap)} of NCCL time overlaps compute")
    return ev


# ---- launch / framework overhead ----------------------------------------------------------------

def _gpu_launch(f: Facts) -> Evidence | None:
    g = f.gpu
    if not g or g.get("busy_share") is None:
        return None
    idle = 1 - g["busy_share"]
    median = g.get("median_kernel_us")
    short = g.get("short_kernel_share") or 0.0
    if idle <= GPU_IDLE or not ((median is not None and median < SHORT_KERNEL_US) or short > 0.5):
        return None
    return [f"GPU idle {_pct(idle)} of the step > {_pct(GPU_IDLE)}",
            f"{g.get('kernels_per_step', 0):g} kernels per step, median {median:.3g} µs"
            + (f"; {_pct(short)} shorter than their launch call" if short else "")]


def _optimizer_overhead(f: Facts) -> Evidence | None:
    share = f.share("optimizer")
    detail = (f.profile.get("phase_detail") or {}).get("optimizer") or {}
    ops, small = detail.get("ops_per_step") or 0, detail.get("small_ops_share") or 0.0
    if share < OPTIMIZER_SHARE or ops < OPTIMIZER_MIN_OPS or small < SMALL_OPS_SHARE:
        return None
    if detail.get("multi_tensor_ops_per_step"):
        return None  # already foreach / fused: what remains is not the per-parameter loop
    return [f"optimizer {_pct(share)} of the step",
            f"{ops:g} ops per optimizer step, {_pct(small)} under 10 µs (a per-parameter loop)"]


def _interpreter_overhead(f: Facts) -> Evidence | None:
    """cProfile: self time in pure-Python functions, and many Python lines per ms of step (a
    function whose time goes to numpy under a few lines has a high share but a low line rate)."""
    c = f.counters
    py, lines = c.get("python_share"), c.get("py_lines_per_ms")
    if f.kind != "cprofile" or py is None or py < PYTHON_SHARE:
        return None
    if lines is not None and lines < PY_LINES_PER_MS:
        return None
    ev = [f"{_pct(py)} of profiled self time in pure-Python functions"]
    if lines is not None:
        ev.append(f"{lines:.0f} Python lines executed per ms of step")
    hot = f.ops_in("python", top=2)
    if hot:
        ev.append("hottest: " + _op_list(hot))
    return ev


def _framework_overhead(f: Facts) -> Evidence | None:
    """torch on the host: time outside native ops plus time in sub-10 µs ops, as a share of the step."""
    if f.kind != "torch" or f.gpu:
        return None  # on a GPU the host's share says little: the GPU launch rule reads device idleness
    c = f.counters
    py, small, ops = c.get("python_share") or 0.0, c.get("small_ops_share"), c.get("ops_per_step") or 0
    small_time = c.get("small_ops_time_share") or 0.0
    if py + small_time < OVERHEAD_SHARE:
        return None
    ev = [f"{_pct(py + small_time)} of the step is overhead: {_pct(py)} outside native ops (Python and "
          f"glue) + {_pct(small_time)} in ops under 10 µs"]
    if small is not None and ops:
        ev.append(f"{ops:g} ops per step, {_pct(small)} of them under 10 µs")
    return ev


# ---- bandwidth / compute ------------------------------------------------------------------------

def _decode_bandwidth(f: Facts) -> Evidence | None:
    detail = (f.profile.get("phase_detail") or {}).get("decode") or {}
    balance = f.machine.get("device") if f.gpu else f.machine
    gbps, peak = detail.get("gbps"), (balance or {}).get("copy_gbps")
    if not gbps or not peak or gbps < DECODE_BW_SHARE * peak:
        return None
    return [f"decode moves {gbps:.3g} GB/s, {_pct(gbps / peak)} of the measured {peak:.3g} GB/s copy bandwidth"]


def _intensity_text(f: Facts) -> str | None:
    ai, ridge = f.intensity(), f.ridge()
    if ai is None or ridge is None:
        return None
    return f"arithmetic intensity {ai:.3g} FLOP/byte vs ridge {ridge:.3g}"


def _bandwidth(f: Facts) -> Evidence | None:
    shares = f.native_shares()
    memoryish = sum(shares.get(k, 0.0) for k in _MEMORYISH)
    ai, ridge = f.intensity(), f.ridge()
    if memoryish < DOMINANT or (ai is not None and ridge is not None and ai >= ridge):
        return None
    parts = ", ".join(f"{k} {_pct(shares[k])}" for k in _MEMORYISH if shares.get(k, 0.0) >= 0.01)
    ev = [f"memory-bound ops {_pct(memoryish)} of native time ({parts})"]
    text = _intensity_text(f)
    nbytes, peak = f.counters.get("bytes_per_step"), f.machine.get("copy_gbps")
    if nbytes and peak and f.step_ms > 0 and not f.gpu:
        gbps = nbytes / (f.step_ms / 1000) / 1e9
        ev.append(f"moves ~{gbps:.3g} GB/s, {_pct(gbps / peak)} of the measured {peak:.3g} GB/s copy bandwidth")
    return ev + ([text] if text else [])


def _compute(f: Facts) -> Evidence | None:
    gemm = f.native_shares().get("gemm", 0.0)
    ai, ridge = f.intensity(), f.ridge()
    if gemm < DOMINANT or (ai is not None and ridge is not None and ai < ridge):
        return None
    ev = [f"GEMM/conv/attention {_pct(gemm)} of native time"]
    text = _intensity_text(f)
    return ev + ([text] if text else [])


RULES: list[Rule] = [
    Rule("near capacity", "memory capacity", _near_capacity,
         "activation checkpointing, mixed precision (bf16/fp16), a smaller micro-batch with gradient accumulation"),
    Rule("memory regression", "memory capacity", _memory_regression,
         "look at the ops that allocate most (above); preallocate buffers for variable lengths, free "
         "references early, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation"),
    Rule("KV-cache growth", "memory capacity", _kv_growth,
         "quantize the KV cache or use a paged cache; cap the context length or the batch"),
    Rule("host-device sync", "host-device sync", _host_device_sync,
         "remove .item(), print, .cpu() and tensor-dependent branches from the loop; find them with "
         "torch.cuda.set_sync_debug_mode('warn')"),
    Rule("data loading", "data loading", _data_loading,
         "DataLoader(num_workers>0, pin_memory=True, persistent_workers=True, prefetch_factor); "
         "fetch whole batches instead of collating samples one by one"),
    Rule("host-to-device transfer", "data loading", _transfer,
         "pin_memory=True and .to(device, non_blocking=True); create tensors on the device"),
    Rule("communication", "communication", _communication,
         "overlap collectives with compute (DDP bucket size/order), no_sync() with gradient "
         "accumulation, gradient compression hooks"),
    Rule("GPU launch overhead", "launch/framework overhead", _gpu_launch,
         "torch.compile, CUDA graphs (mode='reduce-overhead'), a larger batch"),
    Rule("optimizer launch overhead", "launch/framework overhead", _optimizer_overhead,
         "torch.optim with foreach=True or fused=True (one kernel for all parameters)"),
    Rule("framework overhead", "launch/framework overhead", _framework_overhead,
         "fewer, larger ops: torch.compile to fuse the small ones, whole-tensor operations instead of "
         "Python loops over tensors, a larger batch per step"),
    Rule("interpreter overhead", "interpreter overhead", _interpreter_overhead,
         "vectorize the hot loop (numpy / whole-array operations), cache repeated work, or move it to "
         "compiled code (numba, Cython, a C extension)"),
    Rule("decode bandwidth", "memory bandwidth", _decode_bandwidth,
         "quantize weights and KV cache (int8/int4), batch more requests per decode step"),
    Rule("memory bandwidth", "memory bandwidth", _bandwidth,
         "fuse elementwise ops (torch.compile), lower precision (bf16/fp16), channels_last, drop copies"),
    Rule("compute", "compute", _compute,
         "AMP/bf16 autocast (TF32 on GPU), dimensions multiple of 8, SDPA/flash attention; on CPU "
         "check the thread settings"),
]
