"""The bottleneck rules as data (shared/research/bottlenecks.md): signal → class → next action.

In: `Facts` (profile summaries and metrics). Out: `RULES`, an ordered list of (class, signal,
next action), read by `bottleneck`; `memory_cost`, what a memory regression costs.

`RULES` is ordered by priority; the first rule whose signal fires names the class. The order is
capacity > sync > data > communication > launch > bandwidth/compute, because a fix for an earlier
class changes what the later ones measure (an OOM hides everything; a per-step sync or a starving
input pipeline makes every other share look smaller than it is).

Memory capacity is named only near a real limit: an OOM, a peak that is most of the device's or the
host's memory, the CUDA allocator's retries, a KV cache growing into half the device. Every other
rule names the resource that limits the step's time. A memory regression is neither: it is what the
change costs, said apart (`memory_cost`) whatever limits the time.

A next action fits the step (`Facts.platform`): torch or CUDA advice only where the step ran them, CPU
advice for a CPU step, and for plain Python the hot function and what fits Python code.

A signal reads `Facts` (one side's profile summary, the comparison's metrics, the base profile)
and returns the evidence — messages (words/i18n.message: an id, the figures that fired it, the
English) — or None. A rule's next action is a message id too; the words are in the report's
catalogs (words/messages_en.py, messages_zh.py).
Thresholds marked † in the research are module constants here, so they can be tuned in one place.
CUDA-only rules read the summary's "gpu" block and never fire on a host-only profile.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from profopt_ci.analyze.facts import Evidence, Facts, op_pairs
from profopt_ci.analyze.memory_rules import _capacity_advice, _kv_growth, _near_capacity
from profopt_ci.words.i18n import message

CLASSES = ("compute", "memory capacity", "memory bandwidth", "communication", "launch/framework overhead",
           "interpreter overhead", "data loading", "host-device sync")

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
OVERHEAD_SHARE = 0.5       # torch: time outside native ops + time in sub-10 µs ops, of the step…
OPS_PER_MS = 20.0          # † …with op calls this dense (≤ 50 µs a call): the framework's per-op cost
RATE_SHARE = 0.3           # † the share of the measured FLOP (compute) or copy (bandwidth) rate a step
                           #   must reach for that resource to be what limits it
PY_LINES_PER_MS = 100.0    # an interpreter-bound step runs thousands of lines per ms
DECODE_BW_SHARE = 0.6      # achieved decode traffic / measured copy bandwidth
DOMINANT = 0.5
_MEMORYISH = ("elementwise", "copy/memory", "reduction/norm", "optimizer")

@dataclass(frozen=True)
class Rule:
    name: str
    cls: str
    signal: Callable[[Facts], Evidence | None]
    advice: Callable[[Facts], dict] | None = None  # the next action fitted to the step; None: `action`

    @property
    def action(self) -> str:
        """The next action's message id: `next_action.` and the rule's name as a key."""
        return action_id(self.name)

    @property
    def next_action(self) -> str:
        """The next action in English, as the comparison's `next_action` holds it."""
        return message(self.action)["text"]

    def action_for(self, f: Facts) -> dict:
        """The next action as a message, for the step these facts describe."""
        return self.advice(f) if self.advice is not None else message(self.action)


def action_id(rule: str) -> str:
    return "next_action." + re.sub(r"[^a-z0-9]+", "_", rule.lower()).strip("_")


def leading(ops: list[dict], share: float = 0.05) -> list[dict]:
    """The first op and those after it with at least `share` of its self time: a function a hundred
    times smaller than the hottest is not worth naming beside it."""
    return [o for o in ops if (o.get("self_ms") or 0.0) >= share * (ops[0].get("self_ms") or 0.0)] if ops else []


# ---- sync, data, communication ------------------------------------------------------------------

def _host_device_sync(f: Facts) -> Evidence | None:
    if not f.gpu or f.step_ms <= 0:
        return None
    sync = f.gpu.get("sync_ms") or 0.0
    if sync / f.step_ms < SYNC_SHARE:
        return None
    ev = [message("bottleneck.sync_wait", sync_ms=sync, share=sync / f.step_ms, step_ms=f.step_ms)]
    ops = f.ops_in("sync")
    if ops:
        ev.append(message("bottleneck.sync_points", ops=op_pairs(ops, "calls")))
    if f.gpu.get("dtoh_per_step"):
        ev.append(message("bottleneck.dtoh", copies=f.gpu["dtoh_per_step"]))
    return ev


def _data_loading(f: Facts) -> Evidence | None:
    share = f.share("data_loading")
    if share <= DATA_SHARE:
        return None
    ms = (f.profile.get("phases") or {}).get("data_loading", 0.0)
    return [message("bottleneck.data_loading", share=share, ms=ms, step_ms=f.step_ms, limit=DATA_SHARE)]


def _data_advice(f: Facts) -> dict:
    return message("next_action.data_loading" if f.platform in ("cuda", "torch") else "next_action.data_loading_python")


def _transfer(f: Facts) -> Evidence | None:
    if not f.gpu or f.step_ms <= 0:
        return None
    pageable = f.gpu.get("pageable_memcpy_ms") or 0.0
    moved = (f.gpu.get("memcpy_ms") or 0.0) + (f.gpu.get("memset_ms") or 0.0)
    ev = []
    if pageable / f.step_ms >= PAGEABLE_SHARE:
        ev.append(message("bottleneck.pageable", ms=pageable, share=pageable / f.step_ms))
    if moved / f.step_ms >= TRANSFER_SHARE:
        ev.append(message("bottleneck.memcpy", ms=moved, share=moved / f.step_ms))
    return ev or None


def _communication(f: Facts) -> Evidence | None:
    if f.gpu:
        share, overlap = f.gpu.get("comm_share") or 0.0, f.gpu.get("comm_overlap")
    else:
        comm = sum(o.get("total_ms") or 0.0 for o in f.ops_in("communication", top=30))
        share, overlap = (comm / f.step_ms if f.step_ms > 0 else 0.0), None
    if share <= COMM_SHARE:
        return None
    ev = [message("bottleneck.collectives", share=share, limit=COMM_SHARE)]
    if overlap is not None:
        ev.append(message("bottleneck.nccl_overlap", overlap=overlap))
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
    kernels = g.get("kernels_per_step", 0)
    return [message("bottleneck.gpu_idle", idle=idle, limit=GPU_IDLE),
            message("bottleneck.kernels_short", kernels=kernels, median_us=median, short=short) if short
            else message("bottleneck.kernels", kernels=kernels, median_us=median)]


def _optimizer_overhead(f: Facts) -> Evidence | None:
    share = f.share("optimizer")
    detail = (f.profile.get("phase_detail") or {}).get("optimizer") or {}
    ops, small = detail.get("ops_per_step") or 0, detail.get("small_ops_share") or 0.0
    if share < OPTIMIZER_SHARE or ops < OPTIMIZER_MIN_OPS or small < SMALL_OPS_SHARE:
        return None
    if detail.get("multi_tensor_ops_per_step"):
        return None  # already foreach / fused: what remains is not the per-parameter loop
    return [message("bottleneck.optimizer_share", share=share),
            message("bottleneck.optimizer_ops", ops=ops, small=small)]


def _interpreter_overhead(f: Facts) -> Evidence | None:
    """Python code, not the framework: cProfile's self time in pure-Python functions with many lines
    per ms (a function whose time goes to numpy under a few lines has a high share but a low line
    rate); or a torch profile whose step is mostly outside native ops with few op calls in it (a
    pure-Python loop in a module that also imports torch)."""
    c = f.counters
    if f.kind == "torch" and not f.gpu:
        py, density = c.get("python_share"), f.ops_per_ms()
        if py is None or py < PYTHON_SHARE or density is None or density >= OPS_PER_MS:
            return None
        ev = [message("bottleneck.python_outside_ops", share=py, ops=c.get("ops_per_step") or 0, per_ms=density)]
        hot = [o for o in f.profile.get("ops") or [] if o.get("category") == "python"][:1]
        return ev + ([message("bottleneck.hottest", ops=op_pairs(hot))] if hot else [])
    py, lines = c.get("python_share"), c.get("py_lines_per_ms")
    if f.kind != "cprofile" or py is None or py < PYTHON_SHARE:
        return None
    if lines is not None and lines < PY_LINES_PER_MS:
        return None
    ev = [message("bottleneck.python_time", share=py)]
    if lines is not None:
        ev.append(message("bottleneck.python_lines", lines=lines))
    hot = leading(f.ops_in("python", top=2))
    if hot:
        ev.append(message("bottleneck.hottest", ops=op_pairs(hot)))
    return ev


def _interpreter_advice(f: Facts) -> dict:
    """Python code: its hot function by name, and what fits Python code (a torch step's Python between
    few ops: whole-tensor operations)."""
    if f.kind == "torch":
        return message("next_action.interpreter_overhead_torch")
    fn = f.hot_function()
    return message("next_action.interpreter_overhead_fn", fn=fn) if fn else message("next_action.interpreter_overhead")


def _framework_overhead(f: Facts) -> Evidence | None:
    """torch on the host: many short ops dominate — the time outside native ops plus the op calls'
    own fixed cost (op count × what a trivial op costs on this machine, over the step as the rounds
    timed it; without that figure, the time in sub-10 µs ops) is most of the step, and the calls are
    dense: a model too small for its framework. A step whose time is outside ops with few calls is
    Python's (`_interpreter_overhead`)."""
    if f.kind != "torch" or f.gpu:
        return None  # on a GPU the host's share says little: the GPU launch rule reads device idleness
    c = f.counters
    py, small, ops = c.get("python_share") or 0.0, c.get("small_ops_share"), c.get("ops_per_step") or 0
    small_time, density = c.get("small_ops_time_share") or 0.0, f.ops_per_ms()
    if density is None or density < OPS_PER_MS:
        return None
    trains = f.share("backward") > 0  # its forward ops record autograd nodes: a dearer call
    floor = f.machine.get("op_floor_grad_us" if trains else "op_floor_us") or f.machine.get("op_floor_us")
    step = f.metric("step_time_ms").get("head") or f.step_ms
    if floor and step:
        calls = min(ops * floor / 1000 / step, 1.0 - py)  # the floor is measured apart: never past the step
        if py + calls < OVERHEAD_SHARE:
            return None
        first = message("bottleneck.overhead_calls", share=py + calls, python=py, ops=ops, floor_us=floor,
                        calls=calls, step_ms=step)
    elif py + small_time >= OVERHEAD_SHARE:
        first = message("bottleneck.overhead", share=py + small_time, python=py, small_time=small_time)
    else:
        return None
    ev = [first, message("bottleneck.op_density", ops=ops, per_ms=density, us=1000 / density)]
    if small is not None and ops:
        ev.append(message("bottleneck.small_ops", ops=ops, small=small))
    return ev


# ---- bandwidth / compute ------------------------------------------------------------------------

def _decode_bandwidth(f: Facts) -> Evidence | None:
    detail = (f.profile.get("phase_detail") or {}).get("decode") or {}
    balance = f.machine.get("device") if f.gpu else f.machine
    gbps, peak = detail.get("gbps"), (balance or {}).get("copy_gbps")
    if not gbps or not peak or gbps < DECODE_BW_SHARE * peak:
        return None
    return [message("bottleneck.decode_bandwidth", gbps=gbps, share=gbps / peak, peak=peak)]


def _intensity_text(f: Facts) -> dict | None:
    ai, ridge = f.intensity(), f.ridge()
    if ai is None or ridge is None:
        return None
    return message("bottleneck.intensity", intensity=ai, ridge=ridge)


def _bandwidth(f: Facts) -> Evidence | None:
    """Memory-bound ops are most of the native time AND the step moves a real share of the measured
    copy bandwidth: a step that moves 1% of it is not limited by it, whatever its ops are."""
    shares = f.native_shares()
    memoryish = sum(shares.get(k, 0.0) for k in _MEMORYISH)
    ai, ridge = f.intensity(), f.ridge()
    rate = f.byte_rate()
    if memoryish < DOMINANT or rate is None or rate[1] < RATE_SHARE or (ai is not None and ridge is not None
                                                                         and ai >= ridge):
        return None
    parts = [[k, shares[k]] for k in _MEMORYISH if shares.get(k, 0.0) >= 0.01]
    ev = [message("bottleneck.bandwidth", gbps=rate[0], share=rate[1], peak=f.balance["copy_gbps"]),
          message("bottleneck.memory_bound", share=memoryish, shares=parts)]
    text = _intensity_text(f)
    return ev + ([text] if text else [])


def _compute(f: Facts) -> Evidence | None:
    """GEMM/conv/attention is most of the native time AND the step reaches a real share of the
    measured matmul rate."""
    gemm = f.native_shares().get("gemm", 0.0)
    ai, ridge = f.intensity(), f.ridge()
    rate = f.flop_rate()
    if gemm < DOMINANT or rate is None or rate[1] < RATE_SHARE or (ai is not None and ridge is not None
                                                                    and ai < ridge):
        return None
    ev = [message("bottleneck.flop_rate", gflops=rate[0], share=rate[1], peak=f.balance["matmul_gflops"]),
          message("bottleneck.gemm_share", share=gemm)]
    text = _intensity_text(f)
    return ev + ([text] if text else [])


def _on_device(cpu: str, cuda: str) -> Callable[[Facts], dict]:
    """A next action that differs between a CPU step and a CUDA one."""
    return lambda f: message(cuda if f.platform == "cuda" else cpu)


# Each one's next action is words/i18n_bottleneck.py's next_action.<its name as a key>, or its advice's
# variants for the step's platform.
RULES: list[Rule] = [
    Rule("near capacity", "memory capacity", _near_capacity, _capacity_advice),
    Rule("KV-cache growth", "memory capacity", _kv_growth),
    Rule("host-device sync", "host-device sync", _host_device_sync),
    Rule("data loading", "data loading", _data_loading, _data_advice),
    Rule("host-to-device transfer", "data loading", _transfer),
    Rule("communication", "communication", _communication),
    Rule("GPU launch overhead", "launch/framework overhead", _gpu_launch),
    Rule("optimizer launch overhead", "launch/framework overhead", _optimizer_overhead),
    Rule("framework overhead", "launch/framework overhead", _framework_overhead),
    Rule("interpreter overhead", "interpreter overhead", _interpreter_overhead, _interpreter_advice),
    Rule("decode bandwidth", "memory bandwidth", _decode_bandwidth),
    Rule("memory bandwidth", "memory bandwidth", _bandwidth,
         _on_device("next_action.memory_bandwidth_cpu", "next_action.memory_bandwidth")),
    Rule("compute", "compute", _compute, _on_device("next_action.compute_cpu", "next_action.compute")),
]
