"""The step's own parallelism, found in the worker before it is pinned; then all its threads pinned.

In (inside a worker: the standard library and cpulists only): the built step, and optionally the path of
threadpoolctl's module file (the parent's copy: the side's environment may not have it). Out:
`probe()` → {"declared": {"torch": n, "env": n, "<pool>": n…}, "busy": how many of its threads run at
once (90th percentile), "parallelism": the mean of that, "crowded": the share of the CPUs other work
took meanwhile, "tries", "need": CPUs the step wants}; `pin_all(cpus)`
moves every thread of the process (the thread pools the factory started included) onto `cpus`.

Why here: a parent that sizes the CPU set from environment variables alone pins a step that calls
`torch.set_num_threads(2)` in its factory, or runs its own threads, onto one CPU, which halves the
effect the user would see and doubles the step time. The probe runs the step unpinned for about
PROBE_MS (the lockstep worker: one round's length when that is shorter, half a round for a step
under 1 ms, at least 50 ms), sampling each thread's CPU clock (Linux: the per-thread CPU-time clock
of its tid).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable

from profopt_ci.cpulists import TICKS_PER_S, busy_ticks, process_ticks

PROBE_MS = 200.0
SHORT_CALLS = 5  # calls whose fastest says whether a step is short (observe's `short`)
SAMPLE_S = 0.002  # how often the probe reads every thread's CPU clock
RAN_SHARE = 0.25  # a thread that ran this share of an interval was one of those running in it
CROWDED = 0.25  # other work above this share of the CPUs the probe could use: it is taken again
PROBE_TRIES = 3
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


def _process_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)


def _at_least(cpu_ns: int, span_ns: int, floor_ns: float) -> int:
    """How many threads must have run at once for the process to use `cpu_ns` of CPU in `span_ns`:
    one thread cannot use more than the span, so each whole span of CPU time is one more thread, and
    a remainder of at least `floor_ns` one more again. It counts threads that started and ended
    between two samples, which the per-thread clocks cannot see (a step whose threads live for a
    few ms each call), and it errs low, never high, when other work takes the CPUs."""
    if span_ns <= 0 or cpu_ns <= 0:
        return 0
    whole, rest = divmod(cpu_ns, span_ns)
    return int(whole) + (1 if rest >= floor_ns else 0)


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


def observe(step: Callable[[], object], budget_ms: float = PROBE_MS, short: tuple[float, float] | None = None) -> dict:
    """Run the step for about `budget_ms` (one untimed call first: pools start lazily) and count how
    many of its threads run at once; `short` = (step ms, budget ms): a step shorter than that, over
    its first calls, is probed for the shorter budget (its round is shorter too).

    A sampler thread reads every thread's CPU clock every SAMPLE_S; a thread whose clock advanced by
    at least RAN_SHARE of the interval ran in it; more ran where the process's CPU time in the
    interval says more must have run at once (_at_least). `busy` is the 90th percentile of that
    count over the intervals, `parallelism` its mean. Threads the step starts and joins within one call count
    while they run; a pool's idle threads do not. On a loaded machine each thread gets less of each
    interval, which RAN_SHARE leaves room for; the sampler leaves itself out."""
    step()
    counts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        me = threading.get_native_id()
        prev, t0 = _cpu_ns(), time.perf_counter_ns()
        prev_all, prev_own = _process_ns(), time.thread_time_ns()
        while not stop.wait(SAMPLE_S):
            now, t1 = _cpu_ns(), time.perf_counter_ns()
            now_all, now_own = _process_ns(), time.thread_time_ns()
            span = t1 - t0
            floor = RAN_SHARE * span
            seen = sum(1 for tid, ns in now.items() if tid != me and ns - prev.get(tid, 0) >= floor)
            counts.append(max(seen, _at_least(now_all - prev_all - (now_own - prev_own), span, floor)))
            prev, t0, prev_all, prev_own = now, t1, now_all, now_own

    sampler = threading.Thread(target=sample, name="profopt-probe", daemon=True)
    pool = _pool()
    busy0, own0 = busy_ticks(pool), process_ticks("self")
    start = time.perf_counter_ns()
    sampler.start()
    calls, limit_ns, fastest = 0, budget_ms * 1e6, float("inf")
    while calls < 2 or time.perf_counter_ns() - start < limit_ns:
        t0 = time.perf_counter_ns()
        step()
        calls += 1
        if short is not None and calls <= SHORT_CALLS:
            # the fastest of the first calls: one the machine did not interrupt (a busy CI runner)
            fastest = min(fastest, time.perf_counter_ns() - t0)
            if calls == SHORT_CALLS and fastest < short[0] * 1e6:
                limit_ns = min(limit_ns, short[1] * 1e6)
    stop.set()
    sampler.join()
    wall_s = (time.perf_counter_ns() - start) / 1e9
    busy1, own1 = busy_ticks(pool), process_ticks("self")
    ran = sorted(c for c in counts if c > 0) or [1]
    out = {"busy": max(1, ran[min(len(ran) - 1, int(0.9 * len(ran)))]),
           "parallelism": round(sum(ran) / len(ran), 2), "calls": calls}
    if busy0 is not None and busy1 is not None and pool and wall_s > 0:
        other_s = max(0, (busy1 - busy0) - (own1 - own0)) / TICKS_PER_S
        out["crowded"] = round(min(1.0, other_s / (wall_s * len(pool))), 3)
    return out


def probe(step: Callable[[], object], threadpoolctl_path: str | None = None, budget_ms: float = PROBE_MS,
          short: tuple[float, float] | None = None) -> dict:
    """Declared and observed parallelism, and the CPUs the step needs: its busy threads, or what
    torch or the thread variables declare when that is more (a pool not busy in the probe only counts
    through them: numpy's BLAS pool is as large as the machine whether the step uses it or not)."""
    said = declared(threadpoolctl_path)
    seen, tries = observe(step, budget_ms, short), 1
    # other work on the CPUs can hold a step's second thread off them for the whole probe, and a
    # probe that saw one thread pins a two-thread step onto one CPU: a crowded probe is taken again
    while tries < PROBE_TRIES and seen.get("crowded", 0.0) > CROWDED and seen["busy"] < len(_pool()):
        again, tries = observe(step, budget_ms, short), tries + 1
        seen = again if again["busy"] > seen["busy"] else seen
    need = max(seen["busy"], said.get("torch", 1), said.get("env", 1))
    return {"declared": said, **seen, "tries": tries, "need": need, "cuda": _cuda_in_use()}


def _pool() -> list[int]:
    """The CPUs this worker may run on (unpinned while it probes)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


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
