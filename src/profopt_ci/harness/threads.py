"""The step's own parallelism, found in the worker before it is pinned; then all its threads pinned.

In (inside a worker, standard library only): the built step, and optionally the path of
threadpoolctl's module file (the parent's copy: the side's environment may not have it). Out:
`probe()` → {"declared": {"torch": n, "env": n, "<pool>": n…}, "busy": how many of its threads run at
once (90th percentile), "parallelism": the mean of that, "need": CPUs the step wants}; `pin_all(cpus)`
moves every thread of the process (the thread pools the factory started included) onto `cpus`.

Why here: a parent that sizes the CPU set from environment variables alone pins a step that calls
`torch.set_num_threads(2)` in its factory, or runs its own threads, onto one CPU, which halves the
effect the user would see and doubles the step time. The probe runs the step unpinned for about
PROBE_MS (the lockstep worker: one round's `round_ms` when that is shorter, at least 50 ms),
sampling each thread's CPU clock (Linux: the per-thread CPU-time clock of its tid).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable

PROBE_MS = 200.0
SAMPLE_S = 0.002  # how often the probe reads every thread's CPU clock
RAN_SHARE = 0.25  # a thread that ran this share of an interval was one of those running in it
ENV_VARS = ("PROFOPT_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _thread_clock(tid: int) -> int:
    return ((~tid) << 3) | 6  # MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): that thread's CPU time


def _cpu_ns() -> dict[int, int]:
    out = {}
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return out
    for tid in tids:
        try:
            out[tid] = time.clock_gettime_ns(_thread_clock(tid))
        except (OSError, OverflowError):
            pass  # the thread ended meanwhile
    return out


def env_threads(environ: dict[str, str] | os._Environ = os.environ) -> int | None:
    for key in ENV_VARS:
        value = str(environ.get(key, "")).strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def declared(threadpoolctl_path: str | None = None) -> dict[str, int]:
    """What the step's libraries say they will use: torch, the thread variables, BLAS/OpenMP pools."""
    out: dict[str, int] = {}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            out["torch"] = int(torch.get_num_threads())
        except Exception:  # a broken torch install: nothing declared
            pass
    env = env_threads()
    if env:
        out["env"] = env
    for pool, n in _pools(threadpoolctl_path).items():
        out[pool] = n
    return out


def _pools(path: str | None) -> dict[str, int]:
    """{"openblas": 2, "openmp": 2, …} from threadpoolctl, loaded from the parent's file when given."""
    if not path:
        return {}
    name = "_profopt_threadpoolctl"
    try:
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                return {}
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # its dataclasses look their module up there
            spec.loader.exec_module(module)
        info = module.threadpool_info()
    except Exception:  # threadpoolctl is a help, never a failure of the benchmark
        return {}
    out: dict[str, int] = {}
    for pool in info:
        key = str(pool.get("internal_api") or pool.get("user_api") or "pool")
        try:
            out[key] = max(out.get(key, 0), int(pool.get("num_threads") or 0))
        except (TypeError, ValueError):
            continue
    return out


def observe(step: Callable[[], object], budget_ms: float = PROBE_MS) -> dict:
    """Run the step for about `budget_ms` (one untimed call first: pools start lazily) and count how
    many of its threads run at once.

    A sampler thread reads every thread's CPU clock every SAMPLE_S; a thread whose clock advanced by
    at least RAN_SHARE of the interval ran in it. `busy` is the 90th percentile of that count over
    the intervals, `parallelism` its mean. Threads the step starts and joins within one call count
    while they run; a pool's idle threads do not. On a loaded machine each thread gets less of each
    interval, which RAN_SHARE leaves room for; the sampler leaves itself out."""
    step()
    counts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        me = threading.get_native_id()
        prev, t0 = _cpu_ns(), time.perf_counter_ns()
        while not stop.wait(SAMPLE_S):
            now, t1 = _cpu_ns(), time.perf_counter_ns()
            floor = RAN_SHARE * (t1 - t0)
            counts.append(sum(1 for tid, ns in now.items() if tid != me and ns - prev.get(tid, 0) >= floor))
            prev, t0 = now, t1

    sampler = threading.Thread(target=sample, name="profopt-probe", daemon=True)
    start = time.perf_counter_ns()
    sampler.start()
    calls = 0
    while calls < 2 or time.perf_counter_ns() - start < budget_ms * 1e6:
        step()
        calls += 1
    stop.set()
    sampler.join()
    ran = sorted(c for c in counts if c > 0) or [1]
    return {"busy": max(1, ran[min(len(ran) - 1, int(0.9 * len(ran)))]),
            "parallelism": round(sum(ran) / len(ran), 2), "calls": calls}


def probe(step: Callable[[], object], threadpoolctl_path: str | None = None, budget_ms: float = PROBE_MS) -> dict:
    """Declared and observed parallelism, and the CPUs the step needs: its busy threads, or what
    torch or the thread variables declare when that is more (a pool not busy in the probe only counts
    through them: numpy's BLAS pool is as large as the machine whether the step uses it or not)."""
    said = declared(threadpoolctl_path)
    seen = observe(step, budget_ms)
    need = max(seen["busy"], said.get("torch", 1), said.get("env", 1))
    return {"declared": said, **seen, "need": need, "cuda": _cuda_in_use()}


def _cuda_in_use() -> bool:
    """The step initialized CUDA (its CPU set is then taken near the GPU: topology.pick)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # a torch without CUDA support, or a broken one
        return False


def pin_all(cpus: list[int], pid: int | None = None) -> int:
    """Every thread of this process (or of process `pid`) onto `cpus` (new threads inherit it); how
    many were moved."""
    moved = 0
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid or 'self'}/task")]
    except OSError:
        tids = [0] if pid is None else []  # another process that has exited: nothing to move
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
            moved += 1
        except OSError:
            pass  # ended meanwhile
    return moved
