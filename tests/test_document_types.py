"""The typed document model (documents/types*.py): the packaged schemas are generated from it,
`profopt schema NAME` prints them byte for byte, and reading is one decode into the types whose
errors name the file and the JSON path (exit 2)."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import comparison_fixtures as fixtures
import jsonschema
import msgspec
import pytest
from conftest import run_cli

from profopt_ci.documents import schemas, types, types_comparison
from profopt_ci.documents.names import SCHEMA_FILES
from profopt_ci.documents.read import check_document, load_json, parse_document
from profopt_ci.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from scale_data import results as scale_results  # noqa: E402  # the synthetic results bench/scale.py reads

FIXTURES = [fixtures.keep, fixtures.reject_constraint, fixtures.trade_off, fixtures.failed, fixtures.inconclusive,
            fixtures.aa, fixtures.no_change, fixtures.unpaired, fixtures.bare, fixtures.hostile,
            fixtures.instructions, lambda: fixtures.huge_error_tail(3, 5000)]
C = ("profopt/comparison@1",)
R = ("profopt/results@1",)


def packaged(name: str) -> str:
    return resources.files("profopt_ci").joinpath(f"schema/{name}.schema.json").read_text(encoding="utf-8")


def plain(doc: dict) -> dict:
    return json.loads(json.dumps(doc, default=types.json_default))


@pytest.mark.parametrize("schema", sorted(schemas.DOCUMENTS))
def test_each_packaged_schema_is_what_the_types_generate(schema):
    assert packaged(SCHEMA_FILES[schema]) == schemas.schema_text(schema), \
        "run `python -m profopt_ci.documents.schemas --write`"
    jsonschema.Draft202012Validator.check_schema(json.loads(packaged(SCHEMA_FILES[schema])))


def test_the_generator_says_when_a_file_is_stale():
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.documents.schemas", "--check"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("name, file", [*[(f, f) for f in SCHEMA_FILES.values()], ("spec", "profopt")])
def test_profopt_schema_prints_the_packaged_file_byte_for_byte(tmp_path, name, file):
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "schema", name], capture_output=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "src" / "profopt_ci" / "schema" / f"{file}.schema.json").read_bytes()


def test_an_unknown_schema_name_is_exit_2_with_the_names(tmp_path):
    proc = run_cli(["schema", "resultz"], tmp_path)
    assert proc.returncode == 2
    assert "unknown schema 'resultz'" in proc.stderr and "results, comparison" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("make", FIXTURES)
def test_a_comparison_reads_back_with_every_key_and_value(make):
    doc = make()
    jsonschema.Draft202012Validator(json.loads(packaged("comparison"))).validate(doc)
    read = parse_document(json.dumps(doc).encode(), "c.json", C)
    assert plain(read) == json.loads(json.dumps(doc))
    entry = read["benchmarks"][0]
    assert type(entry) is dict and type(read["counts"]) is dict  # the stages annotate plain dicts
    for rows in (entry.get("samples") or {}).values():
        assert all(isinstance(r, types.Sample) for r in rows)


def test_a_results_file_reads_back_as_written_with_its_samples_typed(tmp_path):
    doc = scale_results(3, seed=1, scale=1.0)
    (tmp_path / "r.json").write_text(json.dumps(doc))
    read = load_json(tmp_path / "r.json", R)
    assert plain(read) == doc
    row = read["benchmarks"]["b1"]["samples"][2]
    assert isinstance(row, types.Sample) and row == doc["benchmarks"]["b1"]["samples"][2]
    assert row["step_time_ms"] == row.step_time_ms and row.get("pairing") is None and "pairing" not in row
    assert dict(row) == doc["benchmarks"]["b1"]["samples"][2]
    with pytest.raises(KeyError):
        row["pairing"]


def test_samples_and_metrics_read_like_the_dicts_the_stages_build():
    m = types_comparison.Metric(base=1.0, head=2, verdict="regressed")
    assert m == {"base": 1.0, "head": 2, "verdict": "regressed"} and len(m) == 3 and list(m) == ["base", "head", "verdict"]
    m = msgspec.structs.replace(m, p_adjusted=0.5)  # frozen: a pass makes a new one
    assert m.get("p_adjusted") == 0.5 and "p_value" not in m and m.get("p_value", "none") == "none"
    with pytest.raises(TypeError):
        m["p_adjusted"] = 1
    with pytest.raises(AttributeError):
        m.p_adjusted = 1
    assert json.loads(json.dumps({"m": m}, default=types.json_default)) == {"m": {**m}}
    rows = [types.Sample(step_time_ms=1.5, throughput=2.0), types.Sample(step_time_ms=2, peak_memory_mb=3.0)]
    unset = types.UNSET
    assert types.picked(rows, ("step_time_ms", "throughput", "peak_memory_mb")) == [(1.5, 2.0, unset), (2, unset, 3.0)]


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["policy"].update(fail_on="sometimes"), "$.policy.fail_on"),
    (lambda d: d["benchmarks"][0].update(rounds=-1), "$.benchmarks[0].rounds"),
    (lambda d: d["benchmarks"][0]["samples"]["head"][1].update(step_time_ms=0), '$.benchmarks[0].samples["head"][1].step_time_ms'),
    (lambda d: d["benchmarks"][0]["metrics"]["step_time_ms"].update(delta_pct=1e200), '$.benchmarks[0].metrics["step_time_ms"].delta_pct'),
    (lambda d: d["benchmarks"][0].update(nonsense=1), "$.benchmarks[0]"),
    (lambda d: d.pop("decision"), "$"),
])
def test_a_bad_field_names_the_file_and_its_json_path(mutate, where):
    doc = fixtures.keep()
    doc["policy"] = {"fail_on": "regression", "failing": []}
    mutate(doc)
    with pytest.raises(UsageError) as err:
        parse_document(json.dumps(doc).encode(), "c.json", C)
    assert str(err.value).startswith(f"c.json: {where}: "), err.value
    assert "profopt/comparison@1 schema" in str(err.value)


def test_not_json_nan_and_the_wrong_document_are_exit_2_errors(tmp_path):
    (tmp_path / "c.json").write_text('{\n  "schema": "profopt/comparison@1",\n  "decision": oops}')
    with pytest.raises(UsageError, match=r"c\.json:3:15: not valid JSON"):
        load_json(tmp_path / "c.json", C)
    doc = fixtures.keep()
    doc["benchmarks"][0]["metrics"]["step_time_ms"]["base"] = float("nan")
    with pytest.raises(UsageError, match="not valid JSON"):
        parse_document(json.dumps(doc).encode(), "c.json", C)
    with pytest.raises(UsageError, match=r"r\.json: schema is 'profopt/comparison@1' — expected 'profopt/results@1'"):
        parse_document(json.dumps(fixtures.keep()).encode(), "r.json", R)
    with pytest.raises(UsageError, match=r"x\.json: schema is 'None' — expected 'profopt/results@1' or 'profopt/baseline@1'"):
        parse_document(b'{"benchmarks": {}}', "x.json", ("profopt/results@1", "profopt/baseline@1"))
    with pytest.raises(UsageError, match="nested too deeply"):
        parse_document(b'{"schema": "profopt/results@1", "benchmarks": {}, "fingerprint": {"a": ' + b'[' * 100_000
                       + b']' * 100_000 + b'}}', "r.json", R)


def test_an_already_parsed_document_is_checked_by_the_same_types():
    doc = scale_results(2, seed=3, scale=1.0)
    assert plain(check_document(doc, "stored", R)) == doc
    doc["benchmarks"]["b0"]["status"] = "fine"
    with pytest.raises(UsageError, match=r'stored: \$\.benchmarks\["b0"\]\.status: '):
        check_document(doc, "stored", R)


@pytest.mark.parametrize("make", [fixtures.keep, fixtures.unpaired, fixtures.hostile, lambda: scale_results(4, seed=2, scale=1.0)])
def test_a_big_file_read_in_parts_is_the_file_read_at_once(make, tmp_path, monkeypatch):
    """documents/parts.py (past PARTS_MIN_BYTES): the same data, and a bad entry named by its path."""
    import profopt_ci.documents.read as reader

    doc = make()
    kind = R if doc["schema"] == R[0] else C
    (tmp_path / "d.json").write_text(json.dumps(doc))
    at_once = load_json(tmp_path / "d.json", kind)
    monkeypatch.setattr(reader, "PARTS_MIN_BYTES", 0)
    monkeypatch.setattr("profopt_ci.documents.parts.PART_BYTES", 256)  # several reads back from the file
    in_parts = load_json(tmp_path / "d.json", kind)
    assert plain(in_parts) == plain(at_once) == json.loads(json.dumps(doc))
    if kind == C:
        doc["benchmarks"][-1]["rounds"] = -1
        (tmp_path / "d.json").write_text(json.dumps(doc))
        with pytest.raises(UsageError, match=rf"d\.json: \$\.benchmarks\[{len(doc['benchmarks']) - 1}\]\.rounds: "):
            load_json(tmp_path / "d.json", kind)


def test_the_schema_named_first_picks_the_type_and_one_named_later_still_reads(tmp_path, monkeypatch):
    import profopt_ci.documents.read as reader

    either = ("profopt/results@1", "profopt/baseline@1")
    doc = scale_results(2, seed=3, scale=1.0)
    later = {**{k: v for k, v in doc.items() if k != "schema"}, "schema": doc["schema"]}
    for name, data in (("first.json", doc), ("later.json", later)):
        (tmp_path / name).write_text(json.dumps(data))
    peeked = []
    monkeypatch.setattr(reader, "_schema_of", lambda *a, **k: peeked.append(a[1]) or "profopt/results@1")
    assert plain(load_json(tmp_path / "first.json", either)) == doc  # named first: no pass to find it
    assert plain(load_json(tmp_path / "later.json", either)) == later
    assert [Path(p).name for p in peeked] == ["later.json"]
    (tmp_path / "lies.json").write_text('{"schema": "profopt/results@1", "benchmarks": {}, "schema": "profopt/baseline@1"}')
    monkeypatch.undo()
    with pytest.raises(UsageError, match=r"lies\.json"):
        load_json(tmp_path / "lies.json", either)


def test_every_struct_of_the_model_is_frozen():
    import profopt_ci.documents.types_sections as types_sections
    import profopt_ci.documents.types_stored as types_stored

    structs = [c for m in (types, types_comparison, types_sections, types_stored) for c in vars(m).values()
               if isinstance(c, type) and issubclass(c, msgspec.Struct) and c.__module__ == m.__name__]
    assert len(structs) > 40
    assert [c.__name__ for c in structs if not c.__struct_config__.frozen] == []
    entry = msgspec.convert(fixtures.keep()["benchmarks"][0], types_comparison.Entry)
    with pytest.raises(AttributeError):
        entry.decision = "reject"


def _build_keep(**change):
    from profopt_ci.documents import comparison as comparison_doc

    doc = fixtures.keep()
    kw = dict(mode=doc["mode"], hardware_label=doc["hardware_label"], entries=doc["benchmarks"],
              verdict={k: doc[k] for k in ("decision", "summary", "counts")}, base=doc["base"], head=doc["head"],
              diffs=[], seed=doc["seed"], notes=doc["notes"], threshold_pct=doc["threshold_pct"],
              confidence=doc["confidence"])
    return comparison_doc.build(**{**kw, **change})


def test_the_builders_construct_the_frozen_document():
    from profopt_ci.documents import sides

    built = _build_keep()
    assert isinstance(built, types_comparison.Comparison) and isinstance(built.benchmarks[0], types_comparison.Entry)
    assert check_document(json.loads(msgspec.json.encode(built)), "built", ("profopt/comparison@1",))["decision"] == "keep"
    side = sides.side_record(name="base", root="/r", python="python3", env={}, ref=None, commit="a" * 40)
    assert isinstance(sides.build("/r", [side, {**side, "name": "head"}], {}), types.Struct)


@pytest.mark.parametrize("change, where", [
    (lambda e: {**e[0], "nonsense": 1}, r"unknown field `nonsense`.*\$\.benchmarks\[0\]"),
    (lambda e: {**e[0], "rounds": "20"}, r"Expected `int`.*rounds.*\$\.benchmarks\[0\]"),
    (lambda e: {**e[0], "decision": "maybe"}, r"decision.*\$\.benchmarks\[0\]"),
])
def test_a_builder_handed_a_field_the_model_does_not_allow_raises(change, where):
    # The builders' input is profopt's own: a bad field is a bug, and it must not reach a file.
    entries = fixtures.keep()["benchmarks"]
    with pytest.raises(msgspec.ValidationError, match=where):
        _build_keep(entries=[change(entries)])
    with pytest.raises(msgspec.ValidationError, match=r"mode"):
        _build_keep(mode="sideways")
