"""`confirm: true` / `--confirm`: a flagged benchmark is measured again, independently, before it is blamed.

The real compare below runs both runs for real (worker processes, lockstep rounds). Whether a
verdict holds or becomes inconclusive is `pipeline.confirm.apply` on entries built from literal
rounds, so each case says exactly what the second run saw.
"""
from __future__ import annotations

import json

import pytest
from conftest import CPU_STEP, make_repo, run_cli

from profopt_ci.analyze.judge import build_entry, finish
from profopt_ci.pipeline import confirm
from profopt_ci.specfile.load import parse_spec
from profopt_ci.words.i18n import say

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {{round_ms: 100, rounds: 10, max_rounds: 20, threshold: 10, seed: 11, profile: "off"{confirm}}}
benchmarks:
  - name: slower
    callable: bench.work:make_step
    params: {{us: 2000}}
  - name: same
    callable: bench.work:make_step
    params: {{us: 1000}}
    # never flagged (no verdict on it is asserted): one look, short rounds
    max_rounds: 10
    round_ms: 50
"""
SLOWER = CPU_STEP.replace("int(us * 20)", "int(us * (26 if us == 2000 else 20))")


@pytest.mark.slow
def test_compare_confirm_measures_only_the_flagged_benchmark_again_and_keeps_an_agreed_verdict(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC.format(confirm="")},
                     {"bench/work.py": SLOWER}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--confirm", "--out", "c.json", "--report", "r.md"], root)
    assert proc.returncode == 1, proc.stderr
    c = json.loads((root / "c.json").read_text())
    by = {b["name"]: b for b in c["benchmarks"]}
    assert "confirm" not in by["same"]  # not flagged: not measured again
    conf = by["slower"]["confirm"]
    assert conf["agreed"] is True and conf["seed"] != c["seed"]
    first, second = conf["metrics"]["step_time_ms"]["first"], conf["metrics"]["step_time_ms"]["second"]
    assert first["verdict"] == second["verdict"] == "regressed"
    assert first["delta_pct"] != second["delta_pct"]  # two independent runs, two estimates
    assert by["slower"]["decision"] == "reject" and c["policy"]["failing"] == ["slower"]
    assert "confirm: measuring slower again" in proc.stderr


def _bench(tmp_path, confirm_on: bool = True):
    spec = parse_spec(SPEC.format(confirm=", confirm: true" if confirm_on else ""), str(tmp_path / "profopt.yml"),
                      path=tmp_path / "profopt.yml")
    return {b.name: b for b in spec.benchmarks}


def _entry(bench, head_factor: float) -> dict:
    base = [10.0 + r / 100 for r in range(12)]
    head = [b * (head_factor + r / 1000) for r, b in enumerate(base)]

    def side(ms):
        return {"status": "ok", "error": None, "samples": [{"round": r, "step_time_ms": v} for r, v in enumerate(ms)]}

    return finish([build_entry(bench, side(base), side(head), paired=True)], {bench.name: bench})[0]


def test_a_second_run_that_disagrees_makes_the_verdict_inconclusive_with_both_estimates(tmp_path):
    benches = _bench(tmp_path)
    first = _entry(benches["slower"], 1.30)
    assert confirm.flagged([first], benches) == ["slower"]
    second = _entry(benches["slower"], 1.0)  # the second run sees no change
    (held,), notes = confirm.apply([first], [second], benches, seed=5)
    assert first["decision"] == "reject" and "confirm" not in first  # the entry given is as it was
    first = held
    assert first["metrics"]["step_time_ms"]["verdict"] == "inconclusive"
    assert first["decision"] == "inconclusive"
    runs = first["confirm"]["metrics"]["step_time_ms"]
    assert runs["first"]["verdict"] == "regressed" and runs["second"]["verdict"] == "unchanged"
    assert first["confirm"]["agreed"] is False
    [note] = notes
    assert note["id"] == "note.not_confirmed"
    assert "first run regressed +3" in note["text"] and "second run unchanged" in note["text"]
    zh = say("zh", note)
    assert "未得到确认" in zh and "变差" in zh and "无变化" in zh and "regressed" not in zh


def test_a_second_run_that_agrees_keeps_the_verdict(tmp_path):
    benches = _bench(tmp_path)
    first = _entry(benches["slower"], 1.30)
    (first,), notes = confirm.apply([first], [_entry(benches["slower"], 1.29)], benches, seed=5)
    assert notes == []
    assert first["metrics"]["step_time_ms"]["verdict"] == "regressed" and first["decision"] == "reject"
    assert first["confirm"]["agreed"] is True


def test_only_flagged_benchmarks_with_confirm_on_are_measured_again(tmp_path):
    on, off = _bench(tmp_path), _bench(tmp_path, confirm_on=False)
    assert confirm.flagged([_entry(on["same"], 1.0)], on) == []  # unchanged: nothing to confirm
    assert confirm.flagged([_entry(off["slower"], 1.3)], off) == []  # confirm off
    assert confirm.second_seed(11) != 11 and confirm.second_seed(11) == confirm.second_seed(11)
