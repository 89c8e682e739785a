"""instrument: instructions, the rest of it — cache_sim, a stored baseline, a command counted whole,
the measured noise floor, and what the report says. Real valgrind, pure-Python steps, small N."""
from __future__ import annotations

import json
import sys

import comparison_fixtures as fx
import pytest
from conftest import git, make_repo, run_cli
from test_instructions import WORK, needs_valgrind

from profopt_ci.measure import callgrind
from profopt_ci.measure.instruction_runs import NOISE_FLOOR_PCT, instruction_change
from profopt_ci.profile.callgrind_out import Dump
from profopt_ci.report.render import render

CALLABLE_SPEC = """\
version: 1
defaults: {{instrument: instructions, profile: "off"}}
benchmarks:
  - name: loop
    callable: bench.work:make_step
    params: {params}
    cache_sim: {cache_sim}
"""


@pytest.mark.slow
@needs_valgrind
def test_cache_sim_gives_est_cycles_at_least_the_instructions(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": WORK,
                      "profopt.yml": CALLABLE_SPEC.format(params="{n: 1000}", cache_sim="true")}])
    proc = run_cli(["run", "--out", "r.json"], root, timeout=600)
    assert proc.returncode == 0, proc.stderr
    side = json.loads((root / "r.json").read_text())["benchmarks"]["loop"]["instructions"]
    assert side["status"] == "ok" and len(side["est_cycles_runs"]) == len(side["runs"]) >= 2
    # every access costs at least one cycle, a miss more: est_cycles ≥ Ir (= L1 hits + misses)
    assert side["est_cycles"] >= side["instructions"] > 0
    assert all(c >= i for c, i in zip(side["est_cycles_runs"], side["runs"], strict=True))


def test_per_step_misses_never_go_negative():
    # the 2N region can miss less than the N region (it starts with warm caches): clamped at 0
    events = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
    small = Dump(events=events, totals=dict(zip(events, [1000, 400, 200, 50, 40, 30, 20, 10, 5], strict=True)))
    big = Dump(events=events, totals=dict(zip(events, [2000, 800, 400, 45, 41, 30, 25, 12, 9], strict=True)))
    fig = callgrind._figures(small, big, 1, True, {})
    assert all(v >= 0 for v in fig["events"].values()) and fig["events"]["I1mr"] == 0
    # LL misses above L1 misses (possible after the subtraction, never in one region) are capped
    assert fig["est_cycles"] >= fig["instructions"] == 1000
    assert callgrind.est_cycles(fig["events"]) == fig["est_cycles"]


@pytest.mark.slow
@needs_valgrind
def test_stored_baseline_compares_the_instruction_counts(tmp_path):
    root, store = tmp_path / "repo", f"dir:{tmp_path / 'store'}"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": WORK,
                      "profopt.yml": CALLABLE_SPEC.format(params="{n: 3000}", cache_sim="false")}])
    proc = run_cli(["baseline", "refresh", "--store", store], root, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (root / "profopt.yml").write_text(CALLABLE_SPEC.format(params="{n: 3030}", cache_sim="false"))  # +1% work
    git(root, "commit", "-qam", "more work")
    proc = run_cli(["compare", "--baseline", "stored", "--store", store, "--base", "HEAD~1", "--out", "c.json",
                    "--report", "r.md"], root, timeout=600)
    assert proc.returncode == 1, proc.stderr
    c = json.loads((root / "c.json").read_text())
    b = c["benchmarks"][0]
    m = b["metrics"]["instructions"]
    assert c["baseline"]["mode"] == "stored" and m["verdict"] == "regressed" and 0.7 < m["delta_pct"] < 1.3, m
    assert b["decision"] == "reject" and m["n_base"] >= 2 and m["n_head"] >= 2
    assert b["instructions"]["function_diff"], b["instructions"]
    assert "instructions, not time" in (root / "r.md").read_text()


COMMAND_SPEC = """\
version: 1
defaults: {{instrument: instructions, profile: "off"}}
benchmarks:
  - name: script
    command: "{python} -c 'sum(i * i for i in range({n}))'"
"""


@pytest.mark.slow
@needs_valgrind
def test_a_command_is_counted_whole_children_included(tmp_path):
    # the command is a string, so /bin/sh runs python: only --trace-children counts python's loop
    root = tmp_path / "repo"
    spec = COMMAND_SPEC.format(python=sys.executable, n=20000)
    make_repo(root, [{"profopt.yml": spec}, {"profopt.yml": COMMAND_SPEC.format(python=sys.executable, n=220000)}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--out", "c.json"], root, timeout=600)
    b = json.loads((root / "c.json").read_text())["benchmarks"][0]
    m = b["metrics"]["instructions"]
    assert proc.returncode == 1, proc.stderr
    assert m["verdict"] == "regressed" and m["delta_pct"] > 5, m  # 200k more loop iterations
    side = b["instructions"]["base"]
    assert side["n"] == 1 and side["instructions"] > 1e7  # the interpreter's start-up is in the count


def test_the_noise_floor_is_measured_per_side_with_the_constant_as_minimum():
    agree = instruction_change([1e6, 1e6], [1.01e6, 1.01e6], threshold_pct=0.5)
    assert agree["noise_floor_pct"] == NOISE_FLOOR_PCT == agree["noise_floor_min_pct"]
    assert agree["noise_floor_by_side"] == {"base": NOISE_FLOOR_PCT, "head": NOISE_FLOOR_PCT}
    jitter = instruction_change([1e6, 1.0001e6], [1.0001e6, 1.0002e6], threshold_pct=0.5)  # 0.01% spread
    assert jitter["noise_floor_pct"] == NOISE_FLOOR_PCT  # below the minimum: the minimum holds
    wide = instruction_change([1e6, 1.001e6], [1.0006e6] * 2, threshold_pct=0.5)  # base disagrees by 0.1%
    assert wide["noise_floor_by_side"]["base"] == pytest.approx(0.09995, rel=1e-3)
    assert wide["noise_floor_pct"] == wide["noise_floor_by_side"]["base"]
    assert wide["verdict"] == "unchanged" and "noise floor" in wide["reason"]  # |Δ| 0.01% ≤ measured 0.1%
    assert wide["ci_high_pct"] - wide["ci_low_pct"] > 2 * wide["noise_floor_pct"]


def test_a_floor_raised_to_tau_by_a_disagreeing_side_does_not_call_unchanged():
    noisy = instruction_change([1e6, 1.008e6], [1.0075e6] * 2, threshold_pct=0.5)  # base spread 0.8% > τ
    assert abs(noisy["delta_pct"]) < noisy["noise_floor_pct"]
    assert noisy["verdict"] == "inconclusive" and "base's runs disagree" in noisy["reason"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["md", "html", "text"])
def test_every_report_says_what_an_instruction_count_is(fmt, lang):
    c = fx.instructions()
    c["notes"] = []  # `diff` writes no note: the report states it from the counts themselves
    out = render(c, fmt, lang, cols=1000)
    said = {"en": ["instructions, not time", "cache effects simulated only with cache", "threads serialized",
                   "AVX2 kernels rather than AVX-512"],
            "zh": ["是指令数，不是时间", "才模拟缓存效应", "线程被串行执行", "AVX2 内核而非"]}[lang]
    for words in said:
        assert words in out.replace("\\_", "_"), (words, fmt, lang)
    assert out.count("AVX-512") == 1  # once, though the fixture's JSON note also says it when present


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_instructions_only_report_shows_tau_and_runs_not_rounds_or_ci(lang):
    c = fx.instructions()
    out = render(c, "text", lang, cols=1000)
    meta = out.splitlines()[1]
    assert "0.5%" in meta and "2" in meta and "valgrind" in meta, meta
    assert "rounds" not in meta and "轮" not in meta and "±3%" not in meta, meta
    head = out.splitlines()[0]
    assert "CI" not in head and "置信区间" not in head and "0.02%" in head, head


def test_a_mixed_table_says_which_interval_is_which():
    c = fx.keep()
    c["benchmarks"][0]["metrics"]["instructions"] = fx.instructions()["benchmarks"][0]["metrics"]["instructions"]
    md = render(c, "md")
    assert "99% CI (instructions: range of runs ± noise floor)" in md
    assert "(range of runs ±0.02%)" in md
