"""The comparison is built last and nothing edits it afterwards (docs/layout.md, the fixed order).

The pipeline hands the CLI a finished document, `policy` included; writing the three files, the
summary line and the exit code read it and leave it as it was, to the last byte. A stage that set a
section, demoted a verdict or appended a note after the build would fail here.
"""
from __future__ import annotations

import argparse
import json

import msgspec
import pytest

from profopt_ci.cli import output_files
from profopt_ci.documents.read import view
from profopt_ci.errors import EXIT_OK, EXIT_POLICY
from profopt_ci.pipeline.diff_results import run_diff
from profopt_ci.store.stored_baselines import load_side


def _results(step_ms: list[float], memory_mb: float) -> dict:
    samples = [{"round": i, "order": 0, "step_time_ms": v, "values_ms": [v], "loops": 1, "throughput": 1000.0 / v,
                "peak_memory_mb": memory_mb, "cpu_time_ms": None, "phases_ms": {}, "quality": {}}
               for i, v in enumerate(step_ms)]
    bench = {"kind": "callable", "params": {}, "unit": "items", "items_per_iteration": 1, "status": "ok",
             "error": None, "samples": samples, "summary": {}}
    return {"schema": "profopt/results@1", "commit": "a" * 40, "hardware_label": "test-cpu", "spec_hash": "x",
            "fingerprint": {}, "env": {}, "rounds": len(step_ms),
            "benchmarks": {"slow": bench, "same": json.loads(json.dumps(bench))}}


def _args(tmp_path, fail_on: str) -> argparse.Namespace:
    return argparse.Namespace(out=str(tmp_path / "c.json"), report=str(tmp_path / "r.md"),
                              html=str(tmp_path / "r.html"), lang="en", template=None, fail_on=fail_on)


@pytest.mark.parametrize(("fail_on", "code"), [("regression", EXIT_POLICY), ("none", EXIT_OK)])
def test_the_cli_writes_the_document_as_the_pipeline_built_it(tmp_path, fail_on, code):
    base = [10.0 + k / 50 for k in range(12)]
    head = {"slow": [v * 1.4 for v in base], "same": base}
    for name, steps in (("base", base), ("head", base)):
        (tmp_path / f"{name}.json").write_text(json.dumps(_results(steps, 50.0)))
    doc = json.loads((tmp_path / "head.json").read_text())
    for bench, steps in head.items():  # head: `slow` 40% slower, `same` as base
        for s, v in zip(doc["benchmarks"][bench]["samples"], steps, strict=True):
            s["step_time_ms"], s["values_ms"], s["throughput"] = v, [v], 1000.0 / v
    (tmp_path / "head.json").write_text(json.dumps(doc))

    doc = run_diff(None, load_side(tmp_path / "base.json"), load_side(tmp_path / "head.json"), fail_on=fail_on)
    assert view(doc)["policy"] == {"fail_on": fail_on, "failing": ["slow"] if fail_on == "regression" else []}
    built = msgspec.json.encode(doc)

    assert output_files.finish(doc, _args(tmp_path, fail_on)) == code
    assert msgspec.json.encode(doc) == built  # nothing after the pipeline edited it
    written = json.loads((tmp_path / "c.json").read_text())
    assert written == json.loads(built)
    assert "slow" in (tmp_path / "r.md").read_text()


def test_without_a_policy_the_document_has_none_and_the_exit_reads_only_failures(tmp_path):
    steps = [10.0 + k / 50 for k in range(12)]
    results = _side(tmp_path, _results(steps, 50.0))
    doc = run_diff(None, results, results)
    assert "policy" not in view(doc)
    assert output_files.verdict_exit(doc) == EXIT_OK


def _side(tmp_path, doc: dict) -> dict:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return load_side(path)
