"""In the worker: a reach record job (reach/runs.py), one benchmark's or one pytest file's.

In: the JOB (mode "reach": the checkout and venv to record under, the steps to run; `callables` for
several tests of one file). Out: the record (harness/reach.Recorder.stop, with `steps`), or
{"records": {callable: record}}. Standard library only, as the worker is.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable


def reach_job(job: dict, with_step: Callable) -> dict:  # with_step: worker.with_step (it imports this module)
    """The benchmark's reach (harness/reach.py), recorded from before its module is imported, through
    its build, to the end of the steps the record runs; a step that fails leaves the record unknown
    (the benchmark is then measured, and fails there, with its cause)."""
    from profopt_ci.harness import reach

    where = job["reach"]
    rec = reach.Recorder(where["repo"], where.get("venv"))
    steps = int(where.get("required") or 0)
    rec.start()
    ran, failed = 0, None
    try:
        ran = with_step(job, lambda step: reach.run_steps(
            step, required=steps, at_least=int(where.get("at_least", 5)), min_ms=float(where.get("min_ms", 300)),
            max_ms=float(where.get("max_ms", 3000))), seed=int(job.get("seed", 0)) if steps else None)
    except (Exception, SystemExit) as exc:  # any failure: the record says so and the rounds show it
        failed = f"{type(exc).__name__}: {str(exc)[:300]}"
    record = rec.stop()
    if failed is not None:
        record["unknown"] = record["unknown"] or "failed"
        record["failed"] = failed
    return {**record, "steps": ran}


def reach_each_job(job: dict, out: str) -> dict:
    """The reach of several tests of one pytest file (job["callables"]), the file collected once
    under the record, then each test in a child forked from there (pytest_suite.run_each): each
    child's record is the collection's and its own test's, as a worker of that test alone records.
    Out: {"records": {callable: record}}; a test no child answered for records unknown (failed)."""
    from profopt_ci.harness import pytest_suite, reach
    from profopt_ci.harness.suite_targets import parse_target

    where, targets = job["reach"], list(job["callables"])
    by_loc = {parse_target(t)[1]: t for t in targets}
    steps, seed = int(where.get("required") or 0), int(job.get("seed", 0))
    folder = out + ".each"
    os.makedirs(folder, exist_ok=True)
    rec = reach.Recorder(where["repo"], where.get("venv"))

    def use(step):
        if steps:
            from profopt_ci.harness import timing as harness

            harness.seed_all(seed)
        return reach.run_steps(step, required=steps, at_least=int(where.get("at_least", 5)),
                               min_ms=float(where.get("min_ms", 300)), max_ms=float(where.get("max_ms", 3000)))

    def fork() -> int:
        rec.active = False  # profopt's own fork is not the step's
        try:
            return os.fork()
        finally:
            rec.active = True

    def done(loc: str, outcome) -> None:
        ran, failed = 0, None
        try:
            ran = outcome()
        except (Exception, SystemExit) as exc:
            failed = f"{type(exc).__name__}: {str(exc)[:300]}"
        record = {**rec.stop(), "steps": ran}
        if failed is not None:
            record["unknown"] = record["unknown"] or "failed"
            record["failed"] = failed
        path = os.path.join(folder, f"{targets.index(by_loc[loc])}.json") if loc in by_loc else None
        if path is not None:
            with open(path + ".tmp", "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record))
            os.replace(path + ".tmp", path)

    rec.start()
    try:
        pytest_suite.run_each(list(by_loc), use, fork, done)
    finally:
        rec.stop()
    records = {}
    for i, target in enumerate(targets):
        try:
            with open(os.path.join(folder, f"{i}.json"), encoding="utf-8") as fh:
                records[target] = json.load(fh)
        except (OSError, ValueError):
            records[target] = {"unknown": "failed", "failed": f"{parse_target(target)[1]}: pytest did not run it, "
                                                              "or its process died"}
    return {"records": records}
