"""Quality constraints compared at equal steps: the quality pass, the step-by-step check, the report.

The real tests train a torch model on a fixed batch, so its loss falls after every step: a value
taken at a different step on each side differs by the training between them. Each side's quality
pass runs the same number of steps from the same seeds, so identical math gives |Δ| = 0.
"""
from __future__ import annotations

import json
import math

import pytest
from conftest import make_repo, run_cli

from profopt_ci.analyze.quality import check_at_steps
from profopt_ci.harness import timing as harness
from profopt_ci.measure.quality import parse_trace
from profopt_ci.specfile.model import Constraint

pytest.importorskip("torch")


def trace(values: dict[str, list]) -> dict:
    return {"steps": max(len(v) for v in values.values()), "values": values}


def falling(n: int, start: float = 2.4, rate: float = 0.99) -> list[float]:
    return [start * rate ** i for i in range(n)]


# ---- the step-by-step check, on literal traces -----------------------------------------------------


def test_identical_traces_hold_with_zero_delta():
    c = Constraint("loss", "rel_tol", 0.01)
    entry = check_at_steps(c, trace({"loss": falling(100)}), trace({"loss": falling(100)}))
    assert entry["ok"] is True and entry["max_delta"] == 0.0
    assert entry["steps"] == {"first": 1, "last": 100, "count": 100}
    assert "every step" in entry["detail"]


def test_the_old_defect_is_gone_values_are_never_taken_at_different_steps():
    # Sampled at step 20 on base and step 24 on head, a falling loss differs by ~4%; step by step, 0.
    loss = falling(100)
    assert abs(loss[23] - loss[19]) / loss[19] > 0.03
    entry = check_at_steps(Constraint("loss", "rel_tol", 0.01), trace({"loss": loss}), trace({"loss": list(loss)}))
    assert entry["ok"] is True and entry["max_delta"] == 0.0


def test_a_divergence_after_step_15_is_caught_at_the_step_it_passes_the_limit():
    base = falling(100)
    head = [v if i < 15 else v * (1 + 0.0011 * (i - 14)) for i, v in enumerate(base)]  # drifts from step 16
    entry = check_at_steps(Constraint("loss", "rel_tol", 0.01), trace({"loss": base}), trace({"loss": head}))
    assert entry["ok"] is False
    assert entry["first_broken_step"] == 25  # 0.11% more per step: beyond 1% at the 10th step of the drift
    assert entry["worst_step"] == 100 and entry["max_delta"] == pytest.approx(0.0935, rel=1e-6)
    assert entry["base"] == base[99] and entry["head"] == head[99]


def test_abs_tol_and_equal_rules_step_by_step():
    ok = check_at_steps(Constraint("acc", "abs_tol", 0.05), trace({"acc": [0.5, 0.6, 0.7]}),
                        trace({"acc": [0.5, 0.62, 0.74]}))
    assert ok["ok"] is True and ok["worst_step"] == 3 and ok["max_delta"] == pytest.approx(0.04)
    same = check_at_steps(Constraint("output_digest", "equal", True), trace({"output_digest": ["a", "b", "c"]}),
                          trace({"output_digest": ["a", "b", "c"]}))
    assert same["ok"] is True and same["max_delta"] is None
    differ = check_at_steps(Constraint("output_digest", "equal", True), trace({"output_digest": ["a", "b", "c"]}),
                            trace({"output_digest": ["a", "x", "y"]}))
    assert differ["ok"] is False and differ["first_broken_step"] == 2 and "2 of 3 steps differ" in differ["detail"]


def test_values_recorded_at_other_steps_missing_values_and_failed_passes_break_the_constraint():
    c = Constraint("loss", "rel_tol", 0.01)
    sparse = check_at_steps(c, trace({"loss": [1.0, None, 1.0]}), trace({"loss": [1.0, 1.0, 1.0]}))
    assert sparse["ok"] is False and sparse["problem"] == "one_side" and sparse["one_side_step"] == 2
    missing = check_at_steps(c, trace({"acc": [1.0]}), trace({"loss": [1.0]}))
    assert missing["ok"] is False and missing["problem"] == "not_recorded" and "base" in missing["detail"]
    failed = check_at_steps(c, trace({"loss": [1.0]}), {"status": "failed", "error": "Traceback …\nValueError: boom"})
    assert failed["ok"] is False and failed["problem"] == "pass_failed" and failed["failed_side"] == "head"
    assert "ValueError: boom" in failed["detail"]
    words = check_at_steps(c, trace({"loss": ["low"]}), trace({"loss": ["low"]}))
    assert words["ok"] is False and words["problem"] == "not_a_number"


def test_nan_is_broken_unless_both_sides_are_nan_at_that_step():
    c = Constraint("loss", "rel_tol", 0.01)
    assert check_at_steps(c, trace({"loss": [1.0, "nan"]}), trace({"loss": [1.0, "nan"]}))["ok"] is True
    assert check_at_steps(c, trace({"loss": [1.0, 1.0]}), trace({"loss": [1.0, "nan"]}))["ok"] is False


def test_trace_records_each_step_and_none_where_a_step_recorded_nothing():
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        harness.record(loss=1.0 / calls["n"])
        if calls["n"] % 2 == 0:
            harness.record(acc=calls["n"], loss=float("nan"))

    out = harness.trace(step, 4)
    assert out["steps"] == 4
    assert out["values"]["loss"] == [1.0, "nan", 1 / 3, "nan"]
    assert out["values"]["acc"] == [None, 2, None, 4]


def test_a_command_trace_is_its_printed_values_in_order():
    out = parse_trace("hello\nPROFOPT_METRIC loss=2.5\nPROFOPT_METRIC loss=2.25\nPROFOPT_METRIC tag=abc\n"
                      "PROFOPT_METRIC loss=nan\n")
    assert out == {"steps": 3, "values": {"loss": [2.5, 2.25, "nan"], "tag": ["abc"]}}


# ---- real compares of a torch training step -------------------------------------------------------

TRAIN = """\
import torch
from torch import nn
import profopt_ci

def make_step(lr=0.05, redundant=0):
    # no seed here: profopt seeds torch before the factory, the same on both sides
    x = torch.randn(64, 32)
    y = torch.randint(0, 10, (64,))
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    def step():
        for _ in range(redundant):          # the same math: forward passes whose result is dropped
            with torch.no_grad():
                model(x)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        profopt_ci.record(loss=loss.item())
    return step
"""

SPEC = """\
version: 1
hardware_label: test-cpu
env: {{OMP_NUM_THREADS: "1"}}
defaults: {{profile: "off", seed: 3, round_ms: 100}}
benchmarks:
  - name: train
    callable: train:make_step
    params: {{lr: {lr}, redundant: {redundant}}}
    constraints:
      - {{metric: loss, rel_tol: 0.01}}
"""


def train_repo(tmp_path, head_lr: float, head_redundant: int) -> tuple:
    root = tmp_path / "repo"
    make_repo(root, [{"train.py": TRAIN, "profopt.yml": SPEC.format(lr=0.05, redundant=3)},
                     {"profopt.yml": SPEC.format(lr=head_lr, redundant=head_redundant)}])
    return root


def compare(root, *extra: str, rounds: int = 8) -> tuple:
    proc = run_cli(["compare", "--base", "HEAD~1", "--head", "HEAD", "--rounds", str(rounds), *extra], root, timeout=400)
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    return proc, c


@pytest.mark.slow
def test_training_step_faster_with_the_same_math_is_kept_and_the_loss_holds_exactly(tmp_path):
    root = train_repo(tmp_path, head_lr=0.05, head_redundant=0)
    proc, c = compare(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    b = c["benchmarks"][0]
    assert b["decision"] == "keep", (b["reason"], b["metrics"]["step_time_ms"])
    (con,) = b["constraints"]
    assert con["ok"] is True and con["max_delta"] == 0.0
    assert con["steps"] == {"first": 1, "last": 100, "count": 100}
    base, head = b["quality"]["base"]["values"]["loss"], b["quality"]["head"]["values"]["loss"]
    assert base == head and len(base) == 100
    assert all(later < earlier for earlier, later in zip(base, base[1:], strict=False))  # the loss falls every step
    assert "\\|Δ\\| 0 at every step (compared at steps 1–100)" in (root / ".profopt" / "report.md").read_text()


@pytest.mark.slow
def test_training_step_with_a_higher_learning_rate_is_rejected_at_the_step_it_diverges(tmp_path):
    root = train_repo(tmp_path, head_lr=0.06, head_redundant=0)
    # a broken constraint rejects whatever the step time says (decide_benchmark): one round, no verdict on
    # speed; the quality pass runs its 100 steps per side all the same
    proc, c = compare(root, "--lang", "zh", "--report", "report.md", rounds=1)
    assert proc.returncode == 1, proc.stderr[-3000:]
    b = c["benchmarks"][0]
    assert b["decision"] == "reject" and b["reason"].startswith("constraint broken: loss"), b["reason"]
    (con,) = b["constraints"]
    assert con["ok"] is False and 2 <= con["first_broken_step"] <= 30 and con["max_delta"] > 0.01
    zh = (root / "report.md").read_text()
    assert f"自第 {con['first_broken_step']} 步起超出" in zh and "比较于第 1–100 步" in zh
    assert not math.isnan(con["max_delta"])
