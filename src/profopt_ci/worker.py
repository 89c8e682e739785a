"""A worker process: import the benchmark's factory, build the step, measure or profile it once.

Run by the runner as `python -m profopt_ci.worker JOB.json OUT.json` in a fresh process, with the
checkout first on sys.path. Standard library only (plus whatever the factory imports), so the
worker measures the user's code, not ours. A failure is a traceback on stderr and a non-zero exit;
the runner keeps the tail.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path


def load_factory(target: str):
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def build_step(target: str, params: dict):
    factory = load_factory(target)
    step = factory(**params)
    if not callable(step):
        raise TypeError(f"{target}(**params) returned {type(step).__name__}, expected a zero-argument step function")
    return step


def measure_job(job: dict) -> dict:
    from profopt_ci import harness

    step = build_step(job["callable"], job.get("params") or {})
    device = harness.detect_device()
    m = harness.measure(
        step,
        warmup=int(job.get("warmup", 3)),
        values=int(job.get("values", 5)),
        min_time_ms=float(job.get("min_time_ms", 100.0)),
        device=device,
    )
    return {
        "values_ms": m.values_ms,
        "loops": m.loops,
        "phases_ms": m.phases_ms,
        "quality": m.quality,
        "vm_hwm_kb": _vm_hwm_kb(),
        **m.device_peaks,
    }


def _vm_hwm_kb() -> int | None:
    """This process's own peak RSS (its mm only; ru_maxrss would include the parent's at exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def profile_job(job: dict) -> dict:
    from profopt_ci import profile

    step = build_step(job["callable"], job.get("params") or {})
    trace_dir = Path(job["trace_dir"]) if job.get("trace_dir") else None
    return profile.capture(step, job.get("profile", "auto"), steps=int(job.get("steps", 5)), trace_dir=trace_dir,
                           name=job["name"], machine=job.get("machine"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m profopt_ci.worker JOB.json OUT.json", file=sys.stderr)
        return 2
    job = json.loads(Path(args[0]).read_text())
    sys.path.insert(0, os.getcwd())
    if job.get("mode") == "instructions":  # under valgrind, started by profopt_ci.callgrind
        from profopt_ci.instr_worker import instructions_job

        result = instructions_job(job, build_step)
    else:
        result = profile_job(job) if job.get("mode") == "profile" else measure_job(job)
    tmp = Path(args[1] + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
