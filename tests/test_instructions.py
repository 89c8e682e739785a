"""instrument: instructions — real valgrind on real git repos, pure-Python steps (no torch: fast)."""
from __future__ import annotations

import json
import os
import shutil

import jsonschema
import pytest
from conftest import SRC, make_repo, run_cli

from profopt_ci.measure.instruction_runs import NOISE_FLOOR_PCT, instruction_change
from profopt_ci.profile import callgrind_out
from profopt_ci.specfile.load import parse_spec

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

# n scales the loop; crc_kb adds work in one C function (zlib's crc32) that the diff must name;
# abort_under_valgrind crashes only the counted run, so the walltime rounds still succeed.
WORK = """\
import os, zlib

DATA = bytes(range(256)) * 1024

def make_step(n=5000, crc_kb=1, abort_under_valgrind=False):
    if abort_under_valgrind:
        from profopt_ci.measure import vgreq
        if vgreq.running_on_valgrind():
            os.abort()
    chunk = DATA[: crc_kb * 1024]
    def step():
        s = 0
        for i in range(n):
            s += i * i
        zlib.crc32(chunk)
        return s
    return step
"""

SPEC = """\
version: 1
defaults: {{instrument: {instrument}, warmup: 1, min_time_ms: 5, values: 2, rounds: 3, max_rounds: 3, profile: "off"}}
benchmarks:
  - name: loop
    callable: bench.work:make_step
    params: {params}
"""


def repo(tmp_path, base_params: str, head_params: str | None, instrument: str = "instructions"):
    base = {"bench/__init__.py": "", "bench/work.py": WORK,
            "profopt.yml": SPEC.format(instrument=instrument, params=base_params)}
    head = {"profopt.yml": SPEC.format(instrument=instrument, params=head_params)} if head_params else {"README": "a\n"}
    root = tmp_path / "repo"
    make_repo(root, [base, head])
    return root


def compare(root, *extra: str):
    proc = run_cli(["compare", "--base", "HEAD~1", "--out", "comparison.json", "--report", "report.md", *extra], root, timeout=600)
    c = json.loads((root / "comparison.json").read_text())
    return proc, c, c["benchmarks"][0]


@pytest.mark.slow
@needs_valgrind
def test_one_percent_more_work_is_regressed_at_half_a_percent(tmp_path):
    root = repo(tmp_path, "{n: 5000}", "{n: 5050}")
    proc, c, b = compare(root)
    assert proc.returncode == 1, proc.stderr
    m = b["metrics"]["instructions"]
    assert m["verdict"] == "regressed" and m["threshold_pct"] == 0.5
    assert 0.7 < m["delta_pct"] < 1.3, m
    assert m["p_value"] is None and m["ci_low_pct"] > 0.5
    assert b["decision"] == "reject" and "instructions regressed" in b["reason"]
    assert all(len(b["instructions"][s]["runs"]) >= 2 for s in ("base", "head"))
    report = (root / "report.md").read_text()
    assert "instructions, not time" in report and "AVX2" in report


@pytest.mark.slow
@needs_valgrind
def test_a_a_is_unchanged_and_the_counts_agree(tmp_path):
    root = repo(tmp_path, "{n: 5000}", None)
    proc, c, b = compare(root, "--measure", "all")  # the same code on both sides: measured all the same
    assert proc.returncode == 0, proc.stderr
    m = b["metrics"]["instructions"]
    assert m["verdict"] == "unchanged" and abs(m["delta_pct"]) <= NOISE_FLOOR_PCT, m
    assert b["decision"] == "no-change"


@pytest.mark.slow
@needs_valgrind
def test_function_diff_names_the_c_function_that_changed(tmp_path):
    # run + run + diff: results@1 carries the counts, and diff compares them
    root = repo(tmp_path, "{n: 2000, crc_kb: 1}", "{n: 2000, crc_kb: 64}")
    assert run_cli(["run", "--out", "head.json"], root, timeout=600).returncode == 0
    doc = json.loads((root / "head.json").read_text())
    schema = json.loads((SRC / "profopt_ci/schema/results.schema.json").read_text())
    jsonschema.validate(doc, schema)
    head = doc["benchmarks"]["loop"]
    assert head["summary"]["instructions"] == head["instructions"]["instructions"] > 0
    (root / "profopt.yml").write_text(SPEC.format(instrument="instructions", params="{n: 2000, crc_kb: 1}"))
    proc = run_cli(["run", "--out", "base.json"], root, timeout=600)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(["diff", "base.json", "head.json", "--out", "c.json", "--report", "r.md"], root)
    b = json.loads((root / "c.json").read_text())["benchmarks"][0]
    top = b["instructions"]["function_diff"][0]
    assert "crc32" in top["name"] and top["delta_ir"] > 0, b["instructions"]["function_diff"]
    assert b["metrics"]["instructions"]["verdict"] == "regressed"
    assert "crc32" in (root / "r.md").read_text()


def test_missing_valgrind_is_exit_2_with_the_install_command(tmp_path):
    root = repo(tmp_path, "{n: 100}", None)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    proc = run_cli(["run", "--out", "r.json"], root, env={"PATH": str(bin_dir)})
    assert proc.returncode == 2, proc.stderr
    assert "valgrind" in proc.stderr and "apt-get install valgrind" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (root / "r.json").exists()


@pytest.mark.slow
@needs_valgrind
def test_valgrind_crash_is_exit_3_with_its_tail_and_the_walltime_kept(tmp_path):
    root = repo(tmp_path, "{n: 2000}", "{n: 2000, abort_under_valgrind: true}", instrument="[walltime, instructions]")
    proc, c, b = compare(root)
    assert proc.returncode == 3, proc.stderr
    assert b["decision"] == "failed" and b["error"]["side"] == "head"
    assert b["error"]["instrument"] == "instructions"
    assert "valgrind log" in b["error"]["message"] and "signal 6" in b["error"]["message"]
    assert b["metrics"]["step_time_ms"]["base"] > 0 and len(b["samples"]["head"]) == 3
    assert "instructions" not in b["metrics"]


def test_instrument_keys_resolve_and_bad_values_are_located():
    spec = parse_spec("version: 1\ndefaults: {instrument: [instructions, walltime], instructions_threshold: 0.2%}\n"
                      "benchmarks:\n  - {name: a, callable: m:f, cache_sim: true}\n  - {name: b, callable: m:f}\n",
                      "p.yml")
    a, b = spec.benchmarks
    assert a.settings.instrument == ("walltime", "instructions") and a.settings.cache_sim
    assert b.settings.instructions_threshold == 0.2 and not b.settings.cache_sim
    default = parse_spec("version: 1\nbenchmarks: [{name: a, callable: m:f}]\n", "p.yml").benchmarks[0].settings
    assert default.instrument == ("walltime",) and default.instructions_threshold == 0.5
    with pytest.raises(Exception) as err:
        parse_spec("version: 1\nbenchmarks: [{name: a, callable: m:f, instrument: cycles}]\n", "p.yml")
    assert "p.yml:2:" in str(err.value) and "expected walltime, instructions" in str(err.value)


def test_cli_instrument_flag_rejects_unknown_values(tmp_path):
    root = repo(tmp_path, "{n: 100}", None)
    proc = run_cli(["run", "--instrument", "walltime,cycles"], root)
    assert proc.returncode == 2 and "--instrument: cycles" in proc.stderr


def test_verdict_rules():
    same = instruction_change([1_000_000.0] * 2, [1_000_000.0] * 2, threshold_pct=0.5)
    assert same["verdict"] == "unchanged" and same["delta_pct"] == 0
    up = instruction_change([1_000_000.0] * 2, [1_010_000.0] * 2, threshold_pct=0.5)
    assert up["verdict"] == "regressed" and up["ci_low_pct"] > 0.5
    down = instruction_change([1_000_000.0] * 2, [990_000.0] * 2, threshold_pct=0.5)
    assert down["verdict"] == "improved"
    small = instruction_change([1_000_000.0] * 2, [1_004_000.0] * 2, threshold_pct=0.5)
    assert small["verdict"] == "unchanged"
    tiny_tau = instruction_change([1_000_000.0] * 2, [1_000_100.0] * 2, threshold_pct=0.001)
    assert tiny_tau["verdict"] == "unchanged" and "noise floor" in tiny_tau["reason"]
    noisy = instruction_change([1_000_000.0, 1_006_000.0], [1_007_000.0] * 2, threshold_pct=0.5)
    assert noisy["verdict"] == "inconclusive" and "base's runs disagree" in noisy["reason"]
    assert noisy["ci_low_pct"] < 0.5 < noisy["ci_high_pct"]


def test_callgrind_format_reader_skips_call_costs_and_resolves_names():
    text = """\
# callgrind format
version: 1
positions: line
events: Ir Dr
summary: 18446744073709536129
ob=(1) /usr/lib/libpython3.11.so
fl=(1) x.c
fn=(1) outer
10 5 1
cfn=(2) inner'2
calls=3 20
* 100 7
fn=(2)
20 40 2
+1 2
fn=(1)
11 3
totals: 50 3
"""
    d = callgrind_out.parse(text)
    assert d.functions["outer"] == {"Ir": 8, "Dr": 1}
    assert d.functions["inner"] == {"Ir": 42, "Dr": 2}
    assert d.total("Ir") == 50 and d.objects["outer"] == "libpython3.11.so"


def test_the_action_input_instrument_reaches_compare_and_refresh(tmp_path):
    from profopt_ci.action import inputs as action_inputs
    from profopt_ci.action import workspace
    from profopt_ci.errors import UsageError

    s = action_inputs.settings_from_args(["--workspace", str(tmp_path)], {"INPUT_INSTRUMENT": "instructions, walltime"})
    assert s.instrument == "walltime,instructions"
    argv = workspace.compare_argv(s, "measure", "/work")
    assert argv[argv.index("--instrument") + 1] == "walltime,instructions"
    assert workspace.baseline_argv(s, "dir:b")[-2:] == ["--instrument", "walltime,instructions"]
    assert "--instrument" not in workspace.compare_argv(action_inputs.settings_from_args(["--workspace", str(tmp_path)], {}), "all", "/w")
    with pytest.raises(UsageError, match="instrument: cycles"):
        action_inputs.settings_from_args(["--workspace", str(tmp_path)], {"INPUT_INSTRUMENT": "cycles"})
