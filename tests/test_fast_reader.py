"""The fast reader (documents/fast.py) and the compact records it reads into (documents/records.py).

What must hold: documents profopt writes are taken by the fast path (or 10⁵ benchmarks take
minutes again); whatever it takes, the plain reader (json + documents.check) takes too, with the
same data; rows and metrics read like the dicts and lists they replace; and the streamed writer
of big documents writes what reads back equal.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from comparison_fixtures import keep, reject_constraint
from conftest import run_cli, write_files
from test_fuzz import JSON_VALUES, SEED, mutate_doc
from test_run import SPEC, WORKLOADS

from profopt_ci.documents import fast
from profopt_ci.documents.read import load_json, parse_plain
from profopt_ci.documents.records import Metric, Rows, json_default
from profopt_ci.documents.results import STREAM_MIN_BENCHMARKS, save_json
from profopt_ci.errors import UsageError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from scale_data import results  # noqa: E402

WANTED = ("profopt/results@1", "profopt/comparison@1")


def plain(doc) -> object:
    """A document as plain JSON values: records as dicts, Rows as lists."""
    return json.loads(json.dumps(doc, default=json_default))


def test_what_profopt_writes_takes_the_fast_path(tmp_path):
    write_files(tmp_path, {**WORKLOADS, "profopt.yml": SPEC})
    for name in ("a", "b"):
        proc = run_cli(["run", "--out", f"{name}.json"], tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli(["diff", "a.json", "b.json", "--out", "c.json", "--fail-on", "none"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(["merge", "a.json", "--out", "m.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("a.json", "c.json", "m.json"):
        raw = (tmp_path / name).read_bytes()
        taken = fast.decode(raw)
        assert taken is not None, f"{name} fell back to the plain reader"
        assert plain(taken) == plain(parse_plain([raw], name, WANTED))
    c = load_json(tmp_path / "c.json", "profopt/comparison@1")
    rows = c["benchmarks"][0]["samples"]["base"]
    assert isinstance(rows, Rows) and type(rows[0]) is dict  # read anew as plain dicts
    assert isinstance(c["benchmarks"][0]["metrics"]["step_time_ms"], Metric)


def _results_doc(rng: random.Random) -> dict:
    doc = results(3, rng.randint(0, 99), 1.0, samples=2)
    doc["benchmarks"]["b1"]["samples"][0]["quality"] = {"loss": 0.5, "tag": "x"}
    return doc


@pytest.mark.parametrize("kind", ["comparison", "results"])
def test_the_fast_path_never_takes_what_the_plain_reader_refuses(kind):
    """Mutated documents: when the fast path takes one, the plain reader takes it with equal data."""
    rng = random.Random(SEED)
    seeds = [keep(), reject_constraint()] if kind == "comparison" else [_results_doc(rng), _results_doc(rng)]
    taken = refused = fell_back = 0
    for case in range(300):
        doc = mutate_doc(rng, rng.choice(seeds))
        raw = json.dumps(doc).encode()
        got = fast.decode(raw)
        try:
            expected = parse_plain([raw], "fuzz.json", WANTED)
        except UsageError as exc:
            assert got is None, f"case {case}: the fast path took what the plain one refuses: {exc}"
            refused += 1
            continue
        if got is None:
            fell_back += 1
            continue
        taken += 1
        assert plain(got) == plain(expected), f"case {case}"
    assert taken > 40 and refused > 40, (taken, refused, fell_back)


@pytest.mark.parametrize("text", [
    '{"step_time_ms": 0}', '{"step_time_ms": 1e101}',
    '{"step_time_ms": 1, "values_ms": []}', '{"step_time_ms": 1, "loops": 0}', '{"step_time_ms": true}',
    '{"step_time_ms": 1, "quality": {"a": 1e200}}', '{"step_time_ms": 1, "quality": {"a": %s}}' % ("9" * 45),
])
def test_a_row_the_schema_refuses_is_refused_by_both(text):
    doc = results(1, 0, 1.0, samples=1)
    raw = json.dumps(doc).replace(json.dumps(doc["benchmarks"]["b0"]["samples"][0]), text).encode()
    assert fast.decode(raw) is None
    with pytest.raises(UsageError, match="b0"):
        parse_plain([raw], "r.json", WANTED)


def test_a_row_with_a_key_profopt_does_not_write_is_read_by_the_plain_reader():
    doc = results(1, 0, 1.0, samples=1)
    doc["benchmarks"]["b0"]["samples"][0]["extra"] = [1]
    raw = json.dumps(doc).encode()
    assert fast.decode(raw) is None  # the schema allows the key; a Row has no place for it
    assert load_json_bytes(raw)["benchmarks"]["b0"]["samples"][0]["extra"] == [1]


def load_json_bytes(raw: bytes) -> dict:
    from profopt_ci.documents.read import parse_document

    return parse_document(raw, "r.json", WANTED)


def test_rows_and_records_read_like_dicts_and_lists():
    doc = results(2, 0, 1.0, samples=3)
    doc["benchmarks"]["b0"]["samples"][1]["quality"] = {"loss": 2}
    got = fast.decode(json.dumps(doc).encode())
    rows, want = got["benchmarks"]["b0"]["samples"], doc["benchmarks"]["b0"]["samples"]
    assert len(rows) == 3 and bool(rows) and rows == want and want == rows and rows[1] == want[1]
    row = rows[1]
    assert row["quality"] == {"loss": 2} and row.get("nope", 7) == 7 and "loops" in row and "nope" not in row
    assert dict(row) == want[1] and {**row} == want[1] and list(row) == list(want[1])
    with pytest.raises(KeyError):
        row["nope"]
    del want[1]["cpu_time_ms"]
    partial = fast.decode(json.dumps(doc).encode())["benchmarks"]["b0"]["samples"][1]
    assert "cpu_time_ms" not in partial and partial.get("cpu_time_ms", "absent") == "absent"
    assert json.loads(json.dumps(partial, default=json_default)) == want[1]  # absent stays absent
    assert not Rows.checked(__import__("msgspec").Raw(b"[]"))[0]


@pytest.mark.parametrize("n", [3, STREAM_MIN_BENCHMARKS + 5])
def test_a_read_document_written_back_reads_equal(tmp_path, n):
    """Small documents go through json.dumps (rows via json_default), big ones through msgspec in
    chunks (rows written as the text they were read from)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results(n, 3, 1.0, samples=2)))
    first = load_json(path, "profopt/results@1")
    save_json(first, tmp_path / "again.json")
    again = load_json(tmp_path / "again.json", "profopt/results@1")
    assert plain(again) == plain(first) and list(again["benchmarks"]) == list(first["benchmarks"])
    assert (n > STREAM_MIN_BENCHMARKS) == ("\n  " not in (tmp_path / "again.json").read_text()[:200])


def test_odd_values_keep_their_type():
    """An integer stays one (the report prints 5, not 5.0); JSON_VALUES that are numbers round-trip."""
    doc = results(1, 0, 1.0, samples=1)
    doc["benchmarks"]["b0"]["samples"][0].update(step_time_ms=5, throughput=None, peak_memory_mb=2**62)
    row = fast.decode(json.dumps(doc).encode())["benchmarks"]["b0"]["samples"][0]
    assert type(row["step_time_ms"]) is int and row["throughput"] is None and row["peak_memory_mb"] == 2**62
    assert all(v is None or isinstance(v, (bool, int, float, str, list, dict)) for v in JSON_VALUES)


def test_a_file_past_the_cap_is_refused_unread_and_a_device_past_its_own(tmp_path, monkeypatch):
    """A comparison of 10⁶ benchmarks is ~4.5 GB and must read back (the cap was 4 GiB); a bigger
    regular file is refused from its size, a device (/dev/zero) after MAX_STREAM_BYTES."""
    from profopt_ci.documents import read

    assert read.MAX_DOCUMENT_BYTES >= 16 * 1024 ** 3
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results(3, 0, 1.0, samples=1)))
    assert load_json(path, "profopt/results@1")["benchmarks"]["b0"]
    monkeypatch.setattr(read, "MAX_DOCUMENT_BYTES", path.stat().st_size - 1)
    with pytest.raises(UsageError, match="larger than 16 GiB"):
        load_json(path, "profopt/results@1")
    monkeypatch.setattr(read, "MAX_STREAM_BYTES", 1000)
    with pytest.raises(UsageError, match="1 GiB for a pipe or device"):
        load_json("/dev/zero", "profopt/results@1")
