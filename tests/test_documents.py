"""Real `run`, `compare`, `diff`, `baseline refresh` and `compare --phase setup` output, validated
against the packaged JSON Schemas (generated from documents/types.py) by `jsonschema`, and read back
by documents.read (one decode into the types) without losing a key, on a tiny real repository with
real worker processes."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from conftest import CPU_STEP, git, make_repo, run_cli

from profopt_ci.documents.names import SCHEMA_FILES
from profopt_ci.documents.read import parse_document
from profopt_ci.documents.types import json_default

SCHEMAS = Path(__file__).resolve().parent.parent / "src" / "profopt_ci" / "schema"

SPEC = """\
version: 1
hardware_label: doc-cpu
defaults: {warmup: 1, min_time_ms: 2, values: 2, rounds: 3, max_rounds: 3, seed: 5, profile: "off",
           pairing: rounds}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {us: 100}
"""
# head adds a benchmark the base lacks: it lands in `new_in_pr`
HEAD_SPEC = SPEC + """\
  - name: added
    callable: bench.work:make_step
    params: {us: 50}
"""
FILES = {"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC, ".gitignore": "*.json\nst/\n"}


def full_validate(doc: dict) -> None:
    """jsonschema on the document's own schema, then the reader, which must take it and give back
    every key and value (its samples and metrics written back as they were)."""
    name = SCHEMA_FILES[doc["schema"]]
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    read = parse_document(json.dumps(doc).encode(), name, (doc["schema"],))
    assert json.loads(json.dumps(read, default=json_default)) == doc


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict]:
    """One repository, every verb once; the parsed documents by verb."""
    tmp = tmp_path_factory.mktemp("docs")
    root = tmp / "repo"
    make_repo(root, [FILES, {"profopt.yml": HEAD_SPEC}])
    got: dict[str, dict] = {}

    def ok(args: list[str]) -> None:
        proc = run_cli(args, root)
        assert proc.returncode in (0, 1), f"{args}: {proc.stderr[-2000:]}"

    git(root, "checkout", "-q", "HEAD~1")  # the nightly run of the base commit
    ok(["baseline", "refresh", "--store", f"dir:{tmp / 'st'}", "--out", str(tmp / "base.json")])
    git(root, "checkout", "-q", "main")
    ok(["run", "--out", str(tmp / "head.json")])
    ok(["compare", "--base", "HEAD~1", "--measure", "all", "--out", str(tmp / "compare.json")])
    ok(["diff", str(tmp / "base.json"), str(tmp / "head.json"), "--out", str(tmp / "diff.json")])
    ok(["compare", "--base", "HEAD~1", "--measure", "all", "--baseline", "both", "--store", f"dir:{tmp / 'st'}",
        "--out", str(tmp / "both.json")])
    ok(["compare", "--base", "HEAD~1", "--phase", "setup", "--workdir", str(tmp / "work")])
    for name in ("base", "head", "compare", "diff", "both"):
        got[name] = json.loads((tmp / f"{name}.json").read_text())
    (stored,) = (tmp / "st").rglob("*.json")
    got["baseline"] = json.loads(stored.read_text())
    got["sides"] = json.loads((tmp / "work" / "profopt-sides.json").read_text())
    got["_root"], got["_work"] = {"path": str(root)}, {"path": str(tmp / "work")}
    return got


@pytest.mark.parametrize("verb, schema", [
    ("head", "profopt/results@1"), ("base", "profopt/results@1"), ("compare", "profopt/comparison@1"),
    ("diff", "profopt/comparison@1"), ("both", "profopt/comparison@1"), ("baseline", "profopt/baseline@1"),
    ("sides", "profopt/sides@1"),
])
def test_real_output_matches_its_schema(outputs, verb, schema):
    doc = outputs[verb]
    assert doc["schema"] == schema
    full_validate(doc)


def test_the_optional_sections_are_there_and_described(outputs):
    compare, both, diff = outputs["compare"], outputs["both"], outputs["diff"]
    assert compare["pairing"]["kind"] == "rounds" and compare["dirty"] is False
    assert [e["name"] for e in compare["new_in_pr"]] == ["added"]
    assert compare["policy"] == {"fail_on": "regression", "failing": compare["policy"]["failing"]}
    assert both["baseline"]["mode"] == "both" and "busy" in both["drift"]
    assert "pairing" not in diff and diff["mode"] == "unpaired" and "policy" in diff
    assert [s["name"] for s in outputs["sides"]["sides"]] == ["base", "head"]


def test_an_undocumented_value_in_a_section_is_refused_by_both_validators(outputs):
    doc = json.loads(json.dumps(outputs["compare"]))
    doc["policy"]["fail_on"] = "sometimes"
    with pytest.raises(jsonschema.ValidationError):
        full_validate(doc)
    from profopt_ci.errors import UsageError

    with pytest.raises(UsageError, match=r"c\.json: \$\.policy\.fail_on: "):
        parse_document(json.dumps(doc).encode(), "c.json", ("profopt/comparison@1",))


def test_a_sides_file_without_its_schema_key_stops_the_measure_phase(outputs, tmp_path):
    work = Path(outputs["_work"]["path"])
    state = work / "profopt-sides.json"
    good = state.read_text()
    try:
        state.write_text(json.dumps({k: v for k, v in json.loads(good).items() if k != "schema"}))
        proc = run_cli(["compare", "--phase", "measure", "--workdir", str(work)], Path(outputs["_root"]["path"]))
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "profopt-sides.json" in proc.stderr and "profopt/sides@1" in proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        state.write_text(good)
