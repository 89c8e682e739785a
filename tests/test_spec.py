"""The spec loader: good specs resolve, bad specs get FILE:LINE:COL, what is wrong, what was expected."""
from __future__ import annotations

import textwrap

import pytest
from conftest import run_cli

from profopt_ci.errors import SpecError
from profopt_ci.specfile.load import parse_percent, parse_spec

GOOD = """\
version: 1
hardware_label: cpu-2vcpu
setup: pip install -e .
env: {OMP_NUM_THREADS: "1", SEED: 3}
defaults: {warmup: 3, min_time_ms: 100, values: 5, rounds: 20, max_rounds: 60, threshold: 3%, timeout_s: 600}
benchmarks:
  - name: train-step
    callable: bench.train:make_step
    params: {batch_size: 64, seq_len: 128, dtype: float32}
    items_per_iteration: 64
    unit: samples
    goal: {metric: step_time, direction: decrease, target: 10%}
    constraints:
      - {metric: loss, rel_tol: 0.01}
      - {metric: output_digest, equal: true}
    profile: auto
  - name: cli
    command: python -m mypkg.bench
    rounds: 10
    threshold: 5%
"""


def test_good_spec_resolves_defaults_and_overrides():
    spec = parse_spec(GOOD, "profopt.yml")
    train, cli = spec.benchmarks
    assert spec.hardware_label == "cpu-2vcpu"
    assert spec.setup == ["pip install -e ."]
    assert spec.env == {"OMP_NUM_THREADS": "1", "SEED": "3"}
    assert train.kind == "callable" and cli.kind == "command"
    assert train.params == {"batch_size": 64, "seq_len": 128, "dtype": "float32"}
    assert train.goal.metric == "step_time_ms" and train.goal.target_pct == 10.0
    assert [(c.metric, c.rule, c.limit) for c in train.constraints] == [("loss", "rel_tol", 0.01), ("output_digest", "equal", True)]
    assert train.settings.rounds == 20 and train.settings.threshold == 3.0
    assert cli.settings.rounds == 10 and cli.settings.threshold == 5.0 and cli.settings.max_rounds == 60


def test_spec_hash_ignores_formatting():
    a = parse_spec(GOOD, "a.yml")
    b = parse_spec(GOOD.replace("version: 1\n", "version: 1   # a comment\n"), "b.yml")
    assert a.hash == b.hash
    c = parse_spec(GOOD.replace("batch_size: 64", "batch_size: 32"), "c.yml")
    assert c.hash != a.hash


MIN = "version: 1\nbenchmarks:\n  - name: a\n    callable: m:f\n"

# (id, spec text, expected "LINE:COL", substrings that must appear)
BAD = [
    ("yaml-syntax", "version: 1\nbenchmarks: [\n  - name: a\n", None, ["YAML syntax error"]),
    ("yaml-tab-indent", "version: 1\nbenchmarks:\n\t- name: a\n", "3:1", ["YAML syntax error"]),
    ("empty", "", "1:1", ["empty", "version: 1"]),
    ("not-a-mapping", "- a\n- b\n", "1:1", ["a list", "expected a mapping"]),
    ("unknown-top-key", "version: 1\nbenchmark:\n  - name: a\n    callable: m:f\n", "2:1", ["unknown key `benchmark`", "did you mean `benchmarks`"]),
    ("missing-benchmarks", "version: 1\n", "1:1", ["missing `benchmarks`"]),
    ("wrong-version", MIN.replace("version: 1", "version: 2"), "1:10", ["`version`", "expected 1"]),
    ("unknown-bench-key", MIN + "    parms: {a: 1}\n", "5:5", ["unknown key `parms`", "did you mean `params`"]),
    ("unknown-default-key", MIN + "defaults: {warmpu: 3}\n", "5:12", ["unknown key `warmpu`", "`warmup`"]),
    ("missing-name", "version: 1\nbenchmarks:\n  - callable: m:f\n", "3:5", ["missing `name`", "every benchmark"]),
    ("wrong-type-rounds", MIN + "defaults: {rounds: many}\n", "5:20", ["`defaults.rounds`", "the string 'many'", "a whole number"]),
    ("wrong-type-params", MIN + "    params: [1, 2]\n", "5:13", ["`benchmarks[0].params`", "a list", "mapping"]),
    ("duplicate-names", MIN + "  - name: a\n    command: echo hi\n", "5:11", ["`a` is used twice", "unique"]),
    ("both-callable-command", MIN + "    command: echo hi\n", "5:14", ["both `callable` and `command`", "exactly one"]),
    ("neither-callable-command", "version: 1\nbenchmarks:\n  - name: a\n", "3:5", ["neither `callable` nor `command`"]),
    ("bad-threshold", MIN + "defaults: {threshold: lots}\n", "5:23", ["not a percentage", "3%"]),
    ("ambiguous-threshold", MIN + "    threshold: 0.03\n", "5:16", ["ambiguous", "3%"]),
    ("bad-callable", "version: 1\nbenchmarks:\n  - name: a\n    callable: bench.train.make_step\n", "4:15", ["module:function"]),
    ("bad-name", "version: 1\nbenchmarks:\n  - name: my bench\n    callable: m:f\n", "3:11", ["no spaces"]),
    ("negative-warmup", MIN + "    warmup: -1\n", "5:13", ["≥ 0"]),
    ("bad-profile", MIN + "    profile: perf\n", "5:14", ["one of: auto, torch, cprofile, off"]),
    ("duplicate-key", "version: 1\nversion: 1\nbenchmarks: []\n", "2:1", ["`version` appears twice"]),
    ("max-below-rounds", MIN + "defaults: {rounds: 30, max_rounds: 10}\n", "5:36", ["max_rounds", "≥ rounds"]),
    ("constraint-two-rules", MIN + "    constraints: [{metric: loss, rel_tol: 0.1, abs_tol: 1}]\n", "5:19", ["exactly one of rel_tol, abs_tol, equal"]),
    ("goal-bad-metric", MIN + "    goal: {metric: speed}\n", "5:20", ["one of: step_time"]),
    ("empty-benchmarks", "version: 1\nbenchmarks: []\n", "2:13", ["empty", "at least 1"]),
    ("params-on-command", "version: 1\nbenchmarks:\n  - name: a\n    command: echo\n    params: {x: 1}\n", "5:13", ["params only with `callable`"]),
    ("above-range", MIN + "    quality_steps: 1000000\n", "5:20", ["`benchmarks[0].quality_steps` is 1000000 — expected at most 100000"]),
    ("fraction-for-count", MIN + "    warmup: 2.5\n", "5:13", ["the number 2.5 — expected a whole number"]),
    ("empty-unit", MIN + "    unit: ''\n", "5:11", ["`benchmarks[0].unit` is empty"]),
    ("env-value", MIN + "    env: {A: [1]}\n", "5:14", ["`benchmarks[0].env.A` is a list — expected a string, a number"]),
    ("env-key", MIN + "    env: {1: x}\n", "5:14", ["has the key 1 (int) — expected string keys"]),
    ("suite-unknown-key", MIN + "suites: [{pytest: a, selct: x}]\n", "5:22", ["unknown key `selct` — did you mean `select`?"]),
    ("suite-two-kinds", MIN + "suites: [{pytest: a, asv: b}]\n", "5:10", ["names pytest, asv — expected exactly one of"]),
    ("suite-absolute", MIN + "suites: [{pytest: /}]\n", "5:19", ["`suites[0].pytest` is '/', outside the repository"]),
    ("percent-as-bool", MIN + "defaults: {threshold: true}\n", "5:23", ["a boolean — expected a string or a number"]),
]


@pytest.mark.parametrize("text,where,needles", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_spec_is_located_and_explained(text, where, needles):
    with pytest.raises(SpecError) as err:
        parse_spec(text, "profopt.yml")
    message = str(err.value)
    first = err.value.problems[0]
    assert first.startswith("profopt.yml:"), first
    if where is not None:
        assert first.startswith(f"profopt.yml:{where}:"), message
    assert " — " in first or "YAML" in first
    for needle in needles:
        assert needle in message, message


def test_many_problems_are_all_reported_in_file_order():
    text = "version: 1\nbenchmarks:\n  - name: a\n    callable: m:f\n    parms: 1\n  - name: b\n    callable: 3\n"
    with pytest.raises(SpecError) as err:
        parse_spec(text, "p.yml")
    assert len(err.value.problems) == 2
    assert err.value.problems[0].startswith("p.yml:5:")
    assert err.value.problems[1].startswith("p.yml:7:")


@pytest.mark.parametrize("value,expected", [("3%", 3.0), (" 2.5 % ", 2.5), (5, 5.0), ("0%", 0.0)])
def test_parse_percent(value, expected):
    assert parse_percent(value) == expected


@pytest.mark.parametrize("value", ["3", "three%", 0.5, True, None, "-3%"])
def test_parse_percent_refuses(value):
    with pytest.raises(ValueError):
        parse_percent(value)


def test_validate_cli_exit_codes_and_messages(tmp_path):
    (tmp_path / "profopt.yml").write_text(textwrap.dedent(GOOD))
    ok = run_cli(["validate", "--no-import"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "2 benchmark(s): train-step, cli" in ok.stdout
    # without --no-import each callable is imported in a worker: the key's place and the exception
    # (--no-setup: in profopt's own environment, said so; this tree's `pip install -e .` cannot run)
    unimportable = run_cli(["validate", "--no-setup"], tmp_path)
    assert unimportable.returncode == 2
    assert "profopt.yml:8:5: callable `bench.train:make_step` of benchmark `train-step` does not import" in unimportable.stderr
    assert "ModuleNotFoundError: No module named 'bench'" in unimportable.stderr
    assert "--no-setup: profopt's own environment" in unimportable.stderr
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "train.py").write_text("def other():\n    pass\n")
    no_attr = run_cli(["validate", "--no-setup"], tmp_path)
    assert no_attr.returncode == 2 and "has no attribute 'make_step'" in no_attr.stderr
    (tmp_path / "bench" / "train.py").write_text("def make_step(**params):\n    return lambda: None\n")
    imports = run_cli(["validate", "--no-setup"], tmp_path)
    assert imports.returncode == 0 and "every callable imports" in imports.stdout, imports.stderr
    assert "--no-setup: checked with profopt's own interpreter and packages" in imports.stdout
    # by default the setup runs first, as in compare: this one cannot install the tree (exit 3, its output)
    setup = run_cli(["validate"], tmp_path, env={"PROFOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert setup.returncode == 3 and "setup failed on tree ('pip install -e .'" in setup.stderr, setup.stderr
    (tmp_path / "bad.yml").write_text("version: 1\nbenchmark:\n  - name: a\n")
    bad = run_cli(["validate", "--spec", "bad.yml"], tmp_path)
    assert bad.returncode == 2
    assert "bad.yml:2:1: unknown key `benchmark` — did you mean `benchmarks`?" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run_cli(["validate", "--spec", "nope.yml"], tmp_path)
    assert missing.returncode == 2 and "nope.yml: no such file" in missing.stderr
    none = run_cli(["validate"], tmp_path / "..")
    assert none.returncode == 2 and "no spec found" in none.stderr


def test_schema_is_published_and_valid():
    import json
    from pathlib import Path

    import jsonschema

    from profopt_ci.specfile.load import schema

    jsonschema.Draft202012Validator.check_schema(schema())
    reference = (Path(__file__).parent.parent / "docs" / "spec.md").read_text(encoding="utf-8")
    assert "# yaml-language-server: $schema=" in reference
    assert json.loads(json.dumps(schema()))["title"].startswith("profopt.yml")


def test_the_packaged_schema_is_what_the_model_generates():
    """profopt.schema.json is generated from specfile/keys.py: a hand edit or a model change without
    `--write` fails here; the generator's --check says so too."""
    import subprocess
    import sys
    from importlib import resources

    from profopt_ci.specfile import keys, schema

    packaged = resources.files("profopt_ci").joinpath("schema/profopt.schema.json").read_text(encoding="utf-8")
    assert packaged == schema.schema_text(), "run `python -m profopt_ci.specfile.schema --write`"
    props = schema.schema()["$defs"]["BenchmarkKeys"]["properties"]
    assert props["rounds"]["default"] == keys.DEFAULTS.rounds and props["rounds"]["maximum"] == 10**6
    assert props["threshold"]["default"] == "3%"
    check = subprocess.run([sys.executable, "-m", "profopt_ci.specfile.schema", "--check"], capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stdout


def test_the_defaults_are_the_models():
    """A spec that sets nothing gets the model's defaults (lockstep's own rounds)."""
    from profopt_ci.specfile import keys

    (b,) = parse_spec(MIN, "p.yml").benchmarks
    assert (b.settings.warmup, b.settings.threshold, b.settings.pairing) == (keys.DEFAULTS.warmup, 3.0, "lockstep")
    assert (b.settings.rounds, b.settings.max_rounds) == (12, 48) and b.unit == "items"
    rounds = parse_spec(MIN + "    pairing: rounds\n", "p.yml").benchmarks[0].settings
    assert (rounds.rounds, rounds.max_rounds) == (keys.DEFAULTS.rounds, keys.DEFAULTS.max_rounds) == (20, 60)


def test_cli_first_contact_messages(tmp_path):
    """A spec that is a directory or binary, no hardware_label, one error prefix, demo's examples."""
    (tmp_path / "dir.yml").mkdir()
    d = run_cli(["validate", "--spec", "dir.yml"], tmp_path)
    assert d.returncode == 2 and "dir.yml:1:1: is a directory" in d.stderr
    (tmp_path / "bin.yml").write_bytes(b"version: 1\nbench\xff\xfe\x00")
    b = run_cli(["validate", "--spec", "bin.yml"], tmp_path)
    assert b.returncode == 2 and "bin.yml:2:6: not UTF-8 text (byte 0xff)" in b.stderr
    (tmp_path / "nolabel.yml").write_text("version: 1\nbenchmarks:\n  - {name: c, command: 'true'}\n")
    w = run_cli(["validate", "--spec", "nolabel.yml"], tmp_path)
    assert w.returncode == 0 and "warning: nolabel.yml sets no hardware_label" in w.stderr
    lang = run_cli(["demo", "--lang", "xx"], tmp_path)
    assert lang.returncode == 2 and "profopt: demo: argument --lang: invalid choice" in lang.stderr
    assert "profopt: profopt" not in lang.stderr
    helped = run_cli(["demo", "--help"], tmp_path)
    assert "examples:" in helped.stdout and "python_func" in helped.stdout and "torch_train" in helped.stdout
    report_help = run_cli(["report", "--help"], tmp_path).stdout
    assert "report language" in report_help and "for a terminal" in report_help
