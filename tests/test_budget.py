"""A compare's time budget (issue 38 §3), through the real CLI: eight short benchmarks under
`--time-budget`, every one in the comparison, the outputs written in time."""
from __future__ import annotations

import json
import time

import pytest
from conftest import CPU_STEP, make_repo, run_cli

SPEC = "version: 1\nhardware_label: t\ndefaults: {profile: cprofile}\nbenchmarks:\n" + "".join(
    f"  - {{name: b{i}, callable: \"bench.work:make_step\", params: {{us: {300 + 150 * i}}}}}\n" for i in range(8))


@pytest.mark.slow
def test_eight_benchmarks_fit_a_25_second_budget_each_in_the_comparison_with_what_it_could_see(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC}, {"x": "1"}])
    started = time.monotonic()
    proc = run_cli(["compare", "--base", "HEAD~1", "--measure", "all", "--time-budget", "25s", "--fail-on",
                    "regression"], root, timeout=300)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert sorted(b["name"] for b in c["benchmarks"]) == [f"b{i}" for i in range(8)]
    assert wall < 45, wall  # the budget, its set-up (worktrees, fingerprints) and a loaded machine's slack
    seen = 0
    for b in c["benchmarks"]:
        assert b["decision"] in ("no-change", "inconclusive"), (b["name"], b["decision"], b.get("reason"))
        speed = b["metrics"].get("step_time_ms")
        if speed and speed.get("ci_low_pct") is not None:
            assert isinstance(speed["mde"], float) and speed["mde"] >= 3.0, speed
            seen += 1
        elif b["rounds"]:  # held at the rounds it had so that the others could decide
            assert b["reason"].startswith("step time inconclusive: the time budget was spent after"), b["reason"]
        else:  # the budget spent before its first round
            assert b["reason"] == "not measured: the time budget was spent before its first round"
    assert seen >= 2, seen  # rounds shared so that none could decide would waste the budget
    assert "profopt: time budget:" in proc.stderr
    report = (root / ".profopt" / "report.md").read_text()
    assert "Could see changes ≥" in report


def test_a_bad_budget_is_a_usage_error_naming_the_flag_or_the_key(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP,
                      "profopt.yml": SPEC.replace("profile: cprofile", "profile: cprofile, time_budget: soon")}])
    bad_key = run_cli(["validate", "--no-import"], root)
    assert bad_key.returncode == 2 and "profopt.yml" in bad_key.stderr and "time_budget" in bad_key.stderr
    assert "expected one such as 90s, 10m or 1h" in bad_key.stderr
    bad_flag = run_cli(["compare", "--time-budget", "0s"], root)
    assert bad_flag.returncode == 2 and "--time-budget" in bad_flag.stderr and "Traceback" not in bad_flag.stderr
