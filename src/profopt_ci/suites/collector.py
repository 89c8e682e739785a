"""`python -m profopt_ci.suites.collector JOB.json OUT.json`: one suite collected, or probed, in the side's process.

In: a job {"kind", "path", "select"} (collect) or {"kind", "probe": [locators]} (run each once;
kind "callable": [[name, module:factory, params]], suites/callables.py),
run in the side's checkout with its environment (collect.py starts it). Out: OUT.json —
{"benchmarks": [...], "skipped": [...], "errors": [...], "note"} or {"probe": {locator: why or
null}}. A suite that cannot be collected at all is one entry of `errors`, never a traceback; the
exit code is 0 whenever OUT.json was written. Two processes, not one: pytest's collection and a
second pytest session in one process would share imported test modules.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

_MODULES = {"pytest": "profopt_ci.harness.pytest_suite", "asv": "profopt_ci.harness.asv_suite",
            "pyperf": "profopt_ci.harness.pyperf_suite", "callable": "profopt_ci.suites.callable_probe"}


def _module(kind: str):
    """The kind's in-side module, and only it: a side's own venv holds profopt_ci but none of the
    parent's packages (yaml, jsonschema), so nothing of the parent's side may be imported here."""
    import importlib

    # "callable": only probed — a `module:factory` the base must build and run (benchmarks_from: head)
    return importlib.import_module(_MODULES[kind])


def handle(job: dict) -> dict:
    kind = job["kind"]
    try:
        mod = _module(kind)
        if "probe" in job:
            return {"probe": mod.probe(list(job["probe"]))}
        if not os.path.exists(job["path"]):
            raise FileNotFoundError(f"{job['path']}: no such file or directory in this checkout")
        return mod.collect(job["path"], job.get("select"))
    except Exception as exc:  # the suite as a whole: one clear error, the traceback's end for context
        from profopt_ci.harness.suite_errors import where_raised

        tb = "".join(traceback.format_exception(exc)[-3:]) if not isinstance(exc, (FileNotFoundError, ImportError)) else ""
        where = {"file": job.get("path"), "line": None, **where_raised(exc, os.getcwd())}
        said = f"{type(exc).__name__}: {exc}{_runner_hint(exc)}\n{tb}".strip()
        return {"benchmarks": [], "skipped": [], "errors": [{**where, "error": said}]}


def _runner_hint(exc: Exception) -> str:
    """A suite's runner (asv_runner, pyperf) missing: where this side runs, and where profopt adds it."""
    if not isinstance(exc, ImportError) or (exc.name or "").partition(".")[0] not in ("asv_runner", "pyperf"):
        return ""
    return (f" — the suite's runner is not installed in the environment this side runs in ({sys.prefix}): profopt "
            "adds it to a side's `setup` venv, and without `setup` a side runs in profopt's own environment")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m profopt_ci.suites.collector JOB.json OUT.json", file=sys.stderr)
        return 2
    sys.path.insert(0, os.getcwd())
    job = json.loads(Path(args[0]).read_text())
    where = job.get("reach")
    if where:  # what collecting runs and reads (harness/reach.py): a kept collection holds while none of it changes
        from profopt_ci.harness.reach import Recorder

        rec = Recorder(where["repo"], where.get("venv"))
        rec.start()
        result = handle(job)
        result["reach"] = rec.stop()
    else:
        result = handle(job)
    tmp = Path(args[1] + ".tmp")
    tmp.write_text(json.dumps(result, default=repr))
    tmp.replace(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
