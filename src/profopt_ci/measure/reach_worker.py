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
    seed = int(job.get("seed", 0)) if _required(where) else None
    rec.start()
    return _finished(rec, lambda: with_step(job, lambda step: _run_steps(where, step), seed=seed))


def _required(where: dict) -> int:
    return int(where.get("required") or 0)


def _run_steps(where: dict, step) -> int:
    """The record's steps (harness/reach.run_steps) as the job's `reach` settings say."""
    from profopt_ci.harness import reach

    return reach.run_steps(step, required=_required(where), at_least=int(where.get("at_least", 5)),
                           min_ms=float(where.get("min_ms", 300)), max_ms=float(where.get("max_ms", 3000)))


def _finished(rec, run: Callable[[], int]) -> dict:
    """The record once `run` (the build and steps; it returns the steps run) is over: a failure of
    any kind leaves it unknown with its cause, and the rounds show it."""
    ran, failed = 0, None
    try:
        ran = run()
    except (Exception, SystemExit) as exc:
        failed = f"{type(exc).__name__}: {str(exc)[:300]}"
    record = {**rec.stop(), "steps": ran}
    if failed is not None:
        record["unknown"] = record["unknown"] or "failed"
        record["failed"] = failed
    return record


def reach_each_job(job: dict, out: str) -> dict:
    """The reach of several tests of one pytest file (job["callables"]), the file collected once
    under the record, then each test in a child forked from there (pytest_suite.run_each): each
    child's record is the collection's and its own test's, as a worker of that test alone records.
    Out: {"records": {callable: record}}; a test no child answered for records unknown (failed)."""
    from profopt_ci.harness import pytest_suite, reach
    from profopt_ci.harness.suite_targets import parse_target

    where, targets = job["reach"], list(job["callables"])
    index = {parse_target(t)[1]: i for i, t in enumerate(targets)}  # a test's locator → its answer's file
    folder = out + ".each"
    os.makedirs(folder, exist_ok=True)
    rec = reach.Recorder(where["repo"], where.get("venv"))

    def use(step):
        if _required(where):  # as suite_run seeds a quality pass's steps
            from profopt_ci.harness import timing as harness

            harness.seed_all(int(job.get("seed", 0)))
        return _run_steps(where, step)

    def fork() -> int:
        rec.active = False  # profopt's own fork is not the step's
        try:
            return os.fork()
        finally:
            rec.active = True

    def done(loc: str, outcome: Callable[[], int]) -> None:
        if loc not in index:
            return
        path = os.path.join(folder, f"{index[loc]}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(json.dumps(_finished(rec, outcome)))
        os.replace(path + ".tmp", path)

    rec.start()
    try:
        pytest_suite.run_each(list(index), use, fork, done)
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
