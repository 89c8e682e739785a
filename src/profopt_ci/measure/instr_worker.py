"""Inside valgrind: one step function counted over a calibration step, then N and then 2N steps.

In: a job (`callable`, `params`, `warmup`, `target_ir`, `max_steps`, `seed`, `out_base`: the
`--callgrind-out-file` given to valgrind). Out: {"n", "cal_ir", "quality", "labels"} — the dumps
themselves are in `out_base.1`, `.2`, `.3` (calibration, N, 2N), read by the parent.

The measured regions hold the steps only: import, the factory and the warm-up steps run with
instrumentation off (valgrind runs them uninstrumented, several times faster). Around each region
the gc is collected and disabled (a collection's work depends on what earlier code left behind)
and `random` is seeded, so base and head start each region in the same interpreter state.

N comes from the calibration step's own count, rounded up to a power of two, so it is the same
on every run of a side (a time-based N would vary with the machine's load) and each region holds
about `target_ir` instructions: a constant cost of starting a region (the ctypes calls, the
translation cache valgrind flushes on START_INSTRUMENTATION) is then cancelled by Ir(2N) − Ir(N)
and what is left is large against the per-step jitter.
Stdlib only, like the worker.
"""
from __future__ import annotations

import gc
import random
import sys

from profopt_ci.measure import vgreq
from profopt_ci.profile import callgrind_out


def _region(step, n: int, label: str, seed: int) -> None:
    random.seed(seed)
    gc.collect()
    gc.disable()
    vgreq.request(vgreq.START_INSTRUMENTATION)
    vgreq.request(vgreq.ZERO_STATS)
    for _ in range(n):
        step()
    vgreq.request(vgreq.STOP_INSTRUMENTATION)
    vgreq.dump_stats_at(label)
    gc.enable()


def steps_for(cal_ir: int, target_ir: float, max_steps: int) -> int:
    """The smallest power of two N with N · cal_ir ≥ target_ir, within 1..max_steps."""
    n = 1
    while n * max(cal_ir, 1) < target_ir and n * 2 <= max_steps:
        n *= 2
    return n


def instructions_job(job: dict, build_step) -> dict:
    if not vgreq.running_on_valgrind():
        raise RuntimeError("the instructions job runs only under valgrind (profopt_ci.measure.callgrind starts it)")
    step = build_step(job["callable"], job.get("params") or {})
    seed = int(job.get("seed", 0))
    random.seed(seed)
    for _ in range(int(job.get("warmup", 1))):
        step()
    _region(step, 1, "profopt-cal", seed)
    cal = callgrind_out.read(f"{job['out_base']}.1").total("Ir")
    n = steps_for(cal, float(job.get("target_ir", 2e7)), int(job.get("max_steps", 1024)))
    _region(step, n, "profopt-n", seed)
    _region(step, 2 * n, "profopt-2n", seed)
    harness = sys.modules.get("profopt_ci.harness.timing")
    quality = dict(harness._state.quality) if harness is not None else {}
    return {"n": n, "cal_ir": cal, "quality": quality, "labels": ["profopt-cal", "profopt-n", "profopt-2n"]}
