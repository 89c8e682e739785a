"""Seeded fuzzing of the two documents users hand us (issue 14): mutated specs and comparisons.

Each case goes through the real CLI entry point (`cli.main`, in-process for speed; a handful as real
subprocesses) and must exit 0 or 2 — never "internal error", never a hang.
"""
from __future__ import annotations

import json
import random
import signal
import time

import pytest
from comparison_fixtures import keep, reject_constraint
from conftest import run_cli
from hostile_campaign import SPEC, mutate_doc, mutate_spec  # the campaign's seed and mutations

from profopt_ci.cli import command_line as cli

SEED = 1414
CASES = 320


def _guard(seconds: int):
    def on_alarm(*_):
        raise TimeoutError(f"a fuzz case took more than {seconds} s (a hang?)")
    return signal.signal(signal.SIGALRM, on_alarm)


@pytest.fixture
def cli_in_process(capsys):
    """Run `cli.main` here; its signal handlers are put back afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    old_alarm = _guard(20)

    def run(argv: list[str]) -> tuple[int, str]:
        signal.alarm(20)
        try:
            code = cli.main(argv)
        finally:
            signal.alarm(0)
        return code, capsys.readouterr().err

    yield run
    for s, h in saved.items():
        signal.signal(s, h)
    signal.signal(signal.SIGALRM, old_alarm)


def test_fuzzed_specs_exit_0_or_2(tmp_path, cli_in_process):
    rng = random.Random(SEED)
    path = tmp_path / "profopt.yml"
    start, codes = time.monotonic(), {0: 0, 2: 0}
    for case in range(CASES):
        text = mutate_spec(rng, SPEC)
        if rng.random() < 0.3:
            text = mutate_spec(rng, text)
        path.write_text(text, encoding="utf-8")
        code, err = cli_in_process(["validate", "--no-import", "--spec", str(path)])
        assert code in (0, 2) and "internal error" not in err, f"case {case}:\n{text}\n{err}"
        codes[code] += 1
    assert codes[2] > CASES // 3 and codes[0] > 0  # the mutations do reach both outcomes
    assert time.monotonic() - start < 60


def test_fuzzed_comparisons_exit_0_or_2(tmp_path, cli_in_process):
    rng = random.Random(SEED)
    path, out = tmp_path / "comparison.json", tmp_path / "report.md"
    seeds = [keep(), reject_constraint()]
    start, codes = time.monotonic(), {0: 0, 2: 0}
    for case in range(CASES):
        doc = mutate_doc(rng, rng.choice(seeds))
        path.write_text(json.dumps(doc), encoding="utf-8")
        fmt = rng.choice(["md", "md", "html"])
        code, err = cli_in_process(["report", str(path), "--format", fmt, "--out", str(out)])
        assert code in (0, 2) and "internal error" not in err, f"case {case}: {err}"
        codes[code] += 1
    assert codes[2] > CASES // 4 and codes[0] > CASES // 10
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("case", range(4))
def test_a_few_fuzzed_documents_through_the_real_cli(tmp_path, case):
    rng = random.Random(SEED + case)
    (tmp_path / "profopt.yml").write_text(mutate_spec(rng, SPEC))
    proc = run_cli(["validate"], tmp_path, timeout=60)
    assert proc.returncode in (0, 2) and "internal error" not in proc.stderr, proc.stderr
    (tmp_path / "c.json").write_text(json.dumps(mutate_doc(rng, keep())))
    proc = run_cli(["report", "c.json", "--out", "r.md"], tmp_path, timeout=60)
    assert proc.returncode in (0, 2) and "internal error" not in proc.stderr, proc.stderr


def test_the_typed_reader_never_accepts_what_jsonschema_refuses():
    """documents.read decodes into documents/types.py; the packaged schema is generated from the
    same types: whatever the reader takes, jsonschema on that schema takes too."""
    from importlib import resources

    import jsonschema

    from profopt_ci.documents.read import parse_document
    from profopt_ci.errors import UsageError

    schema = json.loads(resources.files("profopt_ci").joinpath("schema/comparison.schema.json").read_text())
    reference = jsonschema.Draft202012Validator(schema)
    rng = random.Random(SEED)
    accepted = 0
    for _ in range(200):
        raw = json.dumps(mutate_doc(rng, keep())).encode()  # NaN/inf survive json.dumps; the reader refuses them
        try:
            parse_document(raw, "fuzz", ("profopt/comparison@1",))
        except UsageError:
            continue
        accepted += 1
        doc = json.loads(raw)
        assert reference.is_valid(doc), list(reference.iter_errors(doc))[:1]
    assert accepted > 20
