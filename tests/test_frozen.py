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


def test_a_run_builds_each_results_checkpoint_afresh_from_its_tracks(tmp_path):
    """`profopt run` writes results@1 after every round: each one a new document built from the
    run's tracks (pipeline.run_tree.results_of), not a dict the run edits as it goes."""
    import copy

    from profopt_ci.documents.results import new_results
    from profopt_ci.documents.types import Results
    from profopt_ci.measure.rounds import RoundState
    from profopt_ci.pipeline.run_tree import results_of
    from profopt_ci.specfile.load import parse_spec

    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: a, callable: 'm:f'}\n  - {name: b, callable: 'm:f'}\n",
                      str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")
    meta = new_results(spec, commit="c" * 40, dirty=False, fingerprint={}, rounds=2)
    kept = copy.deepcopy(meta)
    state = RoundState()
    state.track("a", "tree").samples.append({"round": 0, "step_time_ms": 2.0, "throughput": 500.0})
    first = results_of(meta, spec.benchmarks, state, "tree", seed=7)
    state.track("a", "tree").samples.append({"round": 1, "step_time_ms": 2.2, "throughput": 450.0})
    counted = {"a": {"tree": {"status": "ok", "instructions": 1000.0, "n": 3, "runs": [1000.0, 1001.0, 999.0]}}}
    last = results_of(meta, spec.benchmarks, state, "tree", counted, seed=7, runner={"probe": "p", "ms": 1.0})
    assert meta == kept  # the run's own fields are never edited
    assert type(first) is Results and type(last) is Results
    assert len(first.benchmarks["a"].samples) == 1 and len(last.benchmarks["a"].samples) == 2
    assert first.benchmarks["b"]["status"] == "failed"  # no sample yet: never ok
    assert "instructions" not in first.benchmarks["a"] and last.benchmarks["a"]["summary"]["instructions"] == 1000.0
    assert first.seed == 7 and "runner" not in first and last["runner"]["ms"] == 1.0


def test_a_read_comparison_shares_each_equal_reason_message(tmp_path):
    """The reader keeps one object per distinct reason message (and its English beside it): most
    benchmarks of a big comparison give the same reasons. What it reads is what was written."""
    from profopt_ci.documents.comparison import load_comparison
    from profopt_ci.documents.results import save_json

    base = [10.0 + k / 50 for k in range(12)]
    for name in ("base", "head"):
        (tmp_path / f"{name}.json").write_text(json.dumps(_results(base, 50.0)))
    doc = run_diff(None, load_side(tmp_path / "base.json"), load_side(tmp_path / "head.json"), fail_on="none")
    save_json(doc, tmp_path / "c.json")
    got = load_comparison(tmp_path / "c.json")
    for metric in ("step_time_ms", "peak_memory_mb"):
        a, b = (e["metrics"][metric] for e in got["benchmarks"])
        assert a is not b and a["reason_msg"] is b["reason_msg"], metric
        assert a["reason"] is a["reason_msg"].text is b["reason"], metric
    assert got["benchmarks"] == view(doc)["benchmarks"]
