"""One profiled run of a benchmark, separate from the timed runs, summarized as docs/data-model.md's
"profile summary".

In: a zero-arg step (or a command), the mode (auto | torch | cprofile | off), steps, where traces go.
Out: the profile summary dict (kind, step_time_ms, phases, ops, counters, …, trace_path), or
`{"kind": "none", "reason": …}` when nothing could be taken.

- `capture(step, mode, steps=5, trace_dir=…, name=…)`: mode "auto" is "torch" when the factory
  imported torch, else "cprofile"; "off" takes nothing.
  torch: torch.profiler over wait=1, warmup=1, active=`steps` steps (fewer for a step longer than
  TRACE_BUDGET_S / steps, at least 2: the trace of a long step is big) (CPU, plus CUDA when the step
  initialized it; record_shapes, profile_memory, with_flops); the chrome trace goes to
  trace_dir/{name}.trace.json and is summarized by `kineto.summarize_trace`. Step time and phases
  are those of the profiled steps (the profiler's per-op cost included: shares, not absolute
  times, are what to read).
  cprofile: one untraced pass of `steps` steps gives the step time and the user's phase() times;
  then cProfile over `steps` steps, or more for a short step (about PROFILE_BUDGET_S of unprofiled
  step time, at most PROFILE_MAX_STEPS), gives the hot functions by self time (tottime, per step,
  cProfile overhead included); pstats go to trace_dir/{name}.pstats. The profiled steps run in
  CHUNKS chunks, each under a profiler of its own, so each function's self time per step has a
  spread over the chunks (`self_ms_range`): what the hot-op diff weighs a base/head delta against.
  A line counter over one step gives py_lines_per_ms (Python lines executed per ms of step time),
  which tells an interpreter-bound loop (thousands) from a step whose time goes to C code that
  cProfile cannot see into (a handful).
  Both kinds say whether the step ran CUDA (`cuda`); a CUDA step's summary has the caching
  allocator's retries and OOMs in this process (`memory.alloc_retries`, `memory.alloc_ooms`): an
  allocator that had to free its cache and retry is at the device's limit.
- `capture_command(cmd, …)` (profile/capture_command.py): a Python process is re-run under `python -m cProfile -o …` once;
  any other command gets {"kind": "none", "reason": …}.
"""
from __future__ import annotations

import contextlib
import cProfile
import json
import math
import pstats
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from profopt_ci.errors import UsageError
from profopt_ci.figures import sig as _r
from profopt_ci.filenames import file_part
from profopt_ci.profile import machine as machine_mod
from profopt_ci.profile.kineto import CAPTURE_SYNC, summarize_trace

MODES = ("auto", "torch", "cprofile", "off")
TRACE_BUDGET_S = 0.25  # unprofiled step time worth of active torch.profiler steps
PROFILE_BUDGET_S = 0.1  # unprofiled step time worth of cProfile steps, for a step shorter than that / steps
PROFILE_MAX_STEPS = 1000
CHUNKS = 5  # cProfile's steps in this many chunks, a profiler each: the spread of a function's self time
LINE_BUDGET = 200_000  # lines counted at most in the line-rate pass (a lower bound past it)
_PYTHON = re.compile(r"^python[0-9.]*$")


def resolve_mode(mode: str) -> str:
    """auto → torch when torch is loaded in this process, else cprofile."""
    if mode not in MODES:
        raise UsageError(f"profile: {mode!r} is not one of {', '.join(MODES)}")
    if mode == "auto":
        return "torch" if "torch" in sys.modules else "cprofile"
    return mode


def no_profile(reason: str) -> dict:
    return {"kind": "none", "reason": reason}


def capture(step: Callable[[], object], mode: str, *, steps: int = 5, trace_dir: Path | None = None,
            name: str, machines: dict | None = None) -> dict:
    """Profile `steps` calls of `step` and return the profile summary (kind torch | cprofile | none).
    `machines`: the machine's balance already measured on CPUs like these, per backend; a torch
    profile measures it here otherwise (this process runs where the step ran, with its threads)."""
    kind = resolve_mode(mode)
    if kind == "off":
        return no_profile("profile: off")
    if steps < 1:
        raise UsageError("profile steps must be at least 1")
    if kind == "torch" and "torch" not in sys.modules:
        try:
            import torch  # noqa: F401  (the user asked for torch explicitly)
        except ImportError as exc:
            raise UsageError("profile: torch, but torch is not installed in the benchmark's environment") from exc
    summary = _capture_torch(step, steps, trace_dir, name) if kind == "torch" \
        else _capture_cprofile(step, steps, trace_dir, name)
    summary["machine"] = _balance(kind, machines or {})
    return summary


def _balance(kind: str, machines: dict) -> dict:
    """The FLOP and byte rates the torch rules weigh a step against; a cProfile summary needs only
    the RAM (its rules read no FLOPs or bytes)."""
    if kind != "torch":
        return machine_mod.host_memory()
    machine = machines.get("torch") or machine_mod.probe()
    if "device" not in machine:  # measured by a pass whose step never touched the GPU
        device = machine_mod.probe_device()
        machine = {**machine, "device": device} if device else machine
    return machine


# ---- torch --------------------------------------------------------------------------------------

def _capture_torch(step: Callable[[], object], steps: int, trace_dir: Path | None, name: str) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    def sync() -> None:
        if cuda:  # a step's span must hold its device work, as in the timed runs
            with torch.profiler.record_function(CAPTURE_SYNC):
                torch.cuda.synchronize()

    active = _active_steps(step, steps, sync)
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=active),
                 record_shapes=True, profile_memory=True, with_flops=True) as prof:
        for _ in range(active + 2):
            step()
            sync()
            prof.step()
    with trace_file(trace_dir, f"{file_part(name)}.trace.json") as path:
        prof.export_chrome_trace(str(path))
        with open(path, encoding="utf-8") as fh:
            trace = json.load(fh)
    summary = {"kind": "torch", "reason": None, "cuda": cuda,
               "trace_path": str(path) if trace_dir is not None else None}
    summary.update(summarize_trace(trace))
    if cuda:
        summary["memory"] = {**(summary.get("memory") or {}), **_allocator(torch)}
    return summary


def _allocator(torch) -> dict:
    """The caching allocator's retries and OOMs in this process: a retry means a request did not fit
    until the allocator freed its cache, i.e. the step ran at the device's limit."""
    try:
        stats = torch.cuda.memory_stats()
    except (RuntimeError, AttributeError):
        return {}
    return {"alloc_retries": int(stats.get("num_alloc_retries", 0)), "alloc_ooms": int(stats.get("num_ooms", 0))}


def _active_steps(step: Callable[[], object], steps: int, sync: Callable[[], None]) -> int:
    """`steps`, or fewer for a long step: about TRACE_BUDGET_S of unprofiled step time, at least 2
    (so one stalled step can be told apart): a long step's trace is large (docs/experiments.md)."""
    step()
    sync()
    start = time.perf_counter()
    step()
    sync()
    took = time.perf_counter() - start
    return max(min(steps, 2), min(steps, math.ceil(TRACE_BUDGET_S / max(took, 1e-9))))


@contextlib.contextmanager
def trace_file(trace_dir: Path | None, filename: str) -> Iterator[Path]:
    if trace_dir is not None:
        Path(trace_dir).mkdir(parents=True, exist_ok=True)
        yield Path(trace_dir) / filename
        return
    with tempfile.TemporaryDirectory(prefix="profopt-trace-") as tmp:
        yield Path(tmp) / filename


# ---- cProfile -----------------------------------------------------------------------------------

def _timed_pass(step: Callable[[], object], steps: int) -> tuple[float, dict[str, float]]:
    """Mean step ms and the user's phase() ms per step, without any profiler attached."""
    from profopt_ci.harness import timing as harness

    m = harness.measure(step, warmup=1, values=1, loops=steps)
    return m.values_ms[0], dict(m.phases_ms)


def _line_rate(step: Callable[[], object], step_ms: float) -> float | None:
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count >= LINE_BUDGET:
                return None
        return local

    def global_(frame, event, arg):
        return local if count < LINE_BUDGET else None

    old = sys.gettrace()
    sys.settrace(global_)
    try:
        step()
    finally:
        sys.settrace(old)
    return round(count / step_ms, 1) if step_ms > 0 else None


def profiled_steps(steps: int, step_ms: float) -> tuple[int, int]:
    """(chunks, steps per chunk) for cProfile: `steps`, or about PROFILE_BUDGET_S of a short step
    (at most PROFILE_MAX_STEPS), cut into up to CHUNKS equal chunks."""
    total = steps
    if step_ms > 0:
        total = max(steps, min(PROFILE_MAX_STEPS, math.ceil(PROFILE_BUDGET_S * 1000 / step_ms)))
    chunks = min(CHUNKS, total)
    return chunks, total // chunks


def _capture_cprofile(step: Callable[[], object], steps: int, trace_dir: Path | None, name: str) -> dict:
    step_ms, phases = _timed_pass(step, steps)
    chunks, per = profiled_steps(steps, step_ms)
    profs = []
    start = time.perf_counter()
    for _ in range(chunks):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(per):
            step()
        prof.disable()
        profs.append(prof)
    profiled_ms = (time.perf_counter() - start) * 1000 / (chunks * per)
    stats = pstats.Stats(profs[0])
    for prof in profs[1:]:
        stats.add(prof)
    trace_path = None
    if trace_dir is not None:
        Path(trace_dir).mkdir(parents=True, exist_ok=True)
        trace_path = Path(trace_dir) / f"{file_part(name)}.pstats"
        stats.dump_stats(str(trace_path))
    summary = {"kind": "cprofile", "reason": None, "cuda": _cuda_ran(),
               "trace_path": str(trace_path) if trace_path else None}
    summary.update(summarize_pstats(stats, steps=chunks * per, step_ms=step_ms, phases_ms=phases))
    summary["steps"], summary["chunks"] = chunks * per, chunks
    if chunks >= 2:
        spread(summary["ops"], [pstats.Stats(p) for p in profs], per)
    summary["counters"]["profiled_step_ms"] = round(profiled_ms, 4)
    summary["counters"]["py_lines_per_ms"] = _line_rate(step, step_ms)
    return summary


def _cuda_ran() -> bool:
    """Whether the step initialized CUDA (through torch): a cProfile summary says so too."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())
    except (RuntimeError, AttributeError):
        return False


def spread(rows: list[dict], chunks: list[pstats.Stats], per: int) -> None:
    """Each row's `self_ms_range`: the least and the most self ms per step over the chunks (0 in a
    chunk that never called it)."""
    by_chunk = [{name: acc[0] for name, acc in _by_name(c).items()} for c in chunks]
    for row in rows:
        per_step = [c.get(row["name"], 0.0) * 1000 / per for c in by_chunk]
        row["self_ms_range"] = [_r(min(per_step)), _r(max(per_step))]


def _func_name(key: tuple) -> tuple[str, bool]:
    """`file.py(func)`, without the line number, so an edit above a function does not rename it in
    the base/head diff (same-named functions of one file are summed)."""
    filename, line, func = key
    if filename == "~" and line == 0:
        return func, False  # a builtin / C function
    return f"{Path(filename).name}({func})", True


_SKIP = ("<method 'disable' of '_lsprof.Profiler' objects>",)


def _by_name(stats: pstats.Stats) -> dict[str, list]:
    """{name: [self s, total s, calls, is Python]} over a pstats' functions, the profiler's own left out."""
    by_name: dict[str, list] = {}
    for key, (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        name, is_py = _func_name(key)
        if name in _SKIP:
            continue
        acc = by_name.setdefault(name, [0.0, 0.0, 0, is_py])
        acc[0], acc[1], acc[2] = acc[0] + tt, acc[1] + ct, acc[2] + nc
    return by_name


def summarize_pstats(stats: pstats.Stats, *, steps: int, step_ms: float | None,
                     phases_ms: dict[str, float] | None = None, top: int = 30) -> dict:
    """Hot functions by self time (tottime) per step, python_share = pure-Python self time share."""
    by_name = _by_name(stats)
    all_s = sum(acc[0] for acc in by_name.values())
    py_s = sum(acc[0] for acc in by_name.values() if acc[3])
    calls = sum(acc[2] for acc in by_name.values())
    rows = [{"name": name, "self_ms": _r(tt * 1000 / steps), "total_ms": _r(ct * 1000 / steps),
             "calls": _r(nc / steps), "category": "python" if is_py else "builtin",
             "self_memory_mb": None, "flops": None}
            for name, (tt, ct, nc, is_py) in by_name.items()]
    rows.sort(key=lambda r: -r["self_ms"])
    phases = {k: _r(v) for k, v in (phases_ms or {}).items()}
    if step_ms and step_ms > 0:
        rest = step_ms - sum(phases.values())
        if phases and rest > 1e-9:
            phases["other"] = _r(rest)
        shares = {k: _r(v / step_ms) for k, v in phases.items()}
    else:
        shares = {}
    return {
        "step_time_ms": _r(step_ms) if step_ms else None,
        "phases": phases,
        "phase_shares": shares,
        "ops": rows[:top],
        "counters": {"ops_per_step": None, "calls_per_step": _r(calls / steps), "small_ops_share": None,
                     "sync_ms": None, "python_share": _r(py_s / all_s) if all_s > 0 else None,
                     "flops_per_step": None, "bytes_per_step": None},
    }
