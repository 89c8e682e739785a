"""Compare's look-by-look loop on literal per-round figures: no processes, milliseconds per test.

`sequential_rounds` takes the measuring step as a parameter (`measure`, with measure_round's
signature); here it appends the literal step times below to the round state, so each test says
exactly which look stops a benchmark and the α it spent. With rounds 6 and max_rounds 18 the looks
are at 6, 9, 12, 15 and 18 rounds (analyze.looks.plan_looks), and 6 or 9 paired rounds cannot bound
a CI at the α those first looks spend (the smallest two-sided signed-rank p of 9 rounds is
2/512 = 0.0039 > spent_alpha(2, 5) = 0.0023), so the earliest look that can decide is the third.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from profopt_ci.analyze.judge import ALPHA
from profopt_ci.analyze.look_schedule import plan_looks, spent_alpha
from profopt_ci.measure.processes import Side
from profopt_ci.measure.rounds import RoundContext, RoundState
from profopt_ci.pipeline.sequential import sequential_rounds
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.plan import make_plan, overrides

SPEC = """\
version: 1
defaults: {rounds: 6, max_rounds: 18, threshold: 3%, pairing: rounds}
benchmarks:
  - {name: slower, callable: m:f}
  - {name: noisy, callable: m:f}
  - {name: same, callable: m:f}
"""
# Per round: (base ms, head ms). slower: head 20-22% slower in every round. noisy: head ±10-12% by
# turns, so the CI always holds 0 and reaches beyond ±3%. same: head within ±0.12% of base. No two
# rounds have the same ratio (ties would send scipy's Wilcoxon p to a slow permutation test).
BASE = [10.0, 10.2, 9.9, 10.1, 10.3, 9.8, 10.0, 10.2, 9.9, 10.1, 10.0, 10.4, 9.7, 10.1, 10.0, 9.9, 10.2, 10.0]
FIGURES = {
    "slower": [(b, round(b * (1.2 + r / 1000), 4)) for r, b in enumerate(BASE)],
    "noisy": [(b, round(b * (1 + (0.1 + r / 1000) * (1 if r % 2 else -1)), 4)) for r, b in enumerate(BASE)],
    "same": [(b, round(b * (1 + (0.001 + r / 10**5) * (1 if r % 2 else -1)), 5)) for r, b in enumerate(BASE)],
}


def _plan(tmp_path: Path):
    spec = parse_spec(SPEC, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")
    return make_plan(spec, overrides(environ={}))


def _literal(fail_at: dict[tuple[str, str], int] | None = None):
    """A `measure` (measure_round's signature) that appends FIGURES; `fail_at[(bench, side)] = r` fails
    that side in round r. `calls`: (benchmark, sides, round, the look it heads for) of each round."""
    calls: list[tuple[str, tuple[str, ...], int, int]] = []

    def measure(ctx, b, r, total, following=lambda: None):
        sides, state = ctx.sides, ctx.state
        calls.append((b.name, tuple(s.name for s in sides), r, total))
        for s in sides:
            track = state.track(b.name, s.name)
            if (fail_at or {}).get((b.name, s.name)) == r:
                track.status, track.error = "failed", f"round {r + 1} failed: literal"
                break
            base_ms, head_ms = FIGURES[b.name][r]
            track.samples.append({"round": r, "step_time_ms": head_ms if s.name == "head" else base_ms})

    return measure, calls


def _run(tmp_path: Path, state: RoundState | None = None, fail_at=None, names=("slower", "noisy", "same"),
         alone: bool = True):
    plan = _plan(tmp_path)
    benches = [b for b in plan.spec.benchmarks if b.name in names]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    state = state or RoundState()
    measure, calls = _literal(fail_at)
    lines: list[str] = []
    alphas = sequential_rounds(RoundContext(plan, sides, state, tmp_path, random.Random(1), lines.append), benches,
                               measure=measure, alone=alone)
    return alphas, state, calls, lines


def _rounds(state: RoundState, name: str) -> tuple[int, int]:
    return len(state.track(name, "base").samples), len(state.track(name, "head").samples)


def test_the_looks_and_their_alpha():
    assert plan_looks(6, 18) == [6, 9, 12, 15, 18]
    # Pocock-type spending, α ln(1 + (e - 1) t): look 3 of 5 gets 0.01 (ln 2.0309 - ln 1.6873) = 0.001853
    assert spent_alpha(3, 5, ALPHA) == pytest.approx(0.001853, abs=2e-6)
    assert sum(spent_alpha(k, 5, ALPHA) for k in range(1, 6)) == pytest.approx(ALPHA)


def test_a_clear_regression_stops_at_the_first_look_that_can_decide(tmp_path):
    alphas, state, calls, lines = _run(tmp_path, names=("slower",))
    assert _rounds(state, "slower") == (12, 12)
    assert alphas["slower"] == spent_alpha(3, 5, ALPHA)
    # one round at a time, each announced against the look it is heading for
    assert [c[2:] for c in calls] == [(r, 6 if r < 6 else 9 if r < 9 else 12) for r in range(12)]
    # one line per look: the first two extend, the third decides
    assert [_said(ln) for ln in lines] == [("look 1/5 after 6 rounds", "inconclusive", "extending to 9"),
                                           ("look 2/5 after 9 rounds", "inconclusive", "extending to 12"),
                                           ("look 3/5 after 12 rounds", "regressed", None)]


def test_a_change_that_stays_inconclusive_runs_to_max_rounds_and_spends_the_last_alpha(tmp_path):
    alphas, state, _, lines = _run(tmp_path, names=("noisy",))
    assert _rounds(state, "noisy") == (18, 18)
    assert alphas["noisy"] == spent_alpha(5, 5, ALPHA) < spent_alpha(3, 5, ALPHA)  # Pocock front-loads α
    # 6, 9 and 12 rounds: no CI or one that holds 0 and reaches beyond ±3%. 15 rounds: the median
    # d_i falls inside the -10% cluster, so the +10% half are outliers (unstable): more rounds too.
    assert [_said(ln) for ln in lines] == [("look 1/5 after 6 rounds", "inconclusive", "extending to 9"),
                                           ("look 2/5 after 9 rounds", "inconclusive", "extending to 12"),
                                           ("look 3/5 after 12 rounds", "inconclusive", "extending to 15"),
                                           ("look 4/5 after 15 rounds", "unstable", "extending to 18"),
                                           ("look 5/5 after 18 rounds", "inconclusive", None)]


def _said(line: str) -> tuple[str, str, str | None]:
    """'profopt: noisy: look 1/5 after 6 rounds: inconclusive (+1.0%, CI …) — extending to 9' → its parts."""
    m = re.fullmatch(r"profopt: \S+: (look \d+/\d+ after \d+ rounds): (\w+)(?: \(.*?\))?(?: — (.*))?", line)
    assert m, line
    return m.group(1), m.group(2), m.group(3)


def test_each_benchmark_stops_at_its_own_look(tmp_path):
    alphas, state, calls, _ = _run(tmp_path)
    assert {n: _rounds(state, n)[1] for n in FIGURES} == {"slower": 12, "noisy": 18, "same": 12}
    assert alphas == {"slower": spent_alpha(3, 5, ALPHA), "noisy": spent_alpha(5, 5, ALPHA),
                      "same": spent_alpha(3, 5, ALPHA)}
    assert max(c[2] for c in calls if c[0] == "same") == 11  # no round of `same` after it stopped


def test_a_side_failing_mid_run_stops_that_benchmark_and_keeps_its_rounds(tmp_path):
    alphas, state, calls, _ = _run(tmp_path, fail_at={("noisy", "head"): 7})
    assert state.track("noisy", "head").status == "failed"
    assert _rounds(state, "noisy") == (8, 7)  # base measured round 8 (index 7) before head failed
    assert alphas["noisy"] == spent_alpha(1, 5, ALPHA)  # the last look it reached: 6 rounds
    assert _rounds(state, "slower") == (12, 12) and alphas["slower"] == spent_alpha(3, 5, ALPHA)
    assert max(c[2] for c in calls if c[0] == "noisy") == 7


def test_a_side_that_failed_before_measuring_leaves_the_other_measured_alone(tmp_path):
    state = RoundState()
    for name in FIGURES:  # base's setup failed (compare marks every benchmark so)
        t = state.track(name, "base")
        t.status, t.error = "failed", "setup failed"
    alphas, state, calls, _ = _run(tmp_path, state=state)
    assert calls == [(name, ("head",), r, 6) for name in FIGURES for r in range(6)]  # all of head's rounds
    assert all(_rounds(state, n) == (0, 6) for n in FIGURES)
    assert alphas == dict.fromkeys(FIGURES, ALPHA)


def test_a_bisection_probe_measures_nothing_alone(tmp_path):
    # alone=False (pipeline/bisect_refs): a failed side makes the probe a skip, so the other is not measured
    state = RoundState()
    for name in FIGURES:
        t = state.track(name, "base")
        t.status, t.error = "failed", "setup failed"
    _, state, calls, _ = _run(tmp_path, state=state, alone=False)
    assert calls == [] and all(_rounds(state, n) == (0, 0) for n in FIGURES)  # alone=True: head's 6 each


# ---- a time budget --------------------------------------------------------------------------------

def _timed(first_s: float, later_s: float | None = None):
    """The literal `measure`, a first round taking `first_s` of wall time, a later one `later_s`."""
    import time

    inner, calls = _literal()

    def measure(ctx, b, r, total, **kwargs):
        time.sleep(first_s if r == 0 or later_s is None else later_s)
        inner(ctx, b, r, total, **kwargs)
    return measure, calls


def test_a_budget_stops_the_rounds_in_time_and_looks_once_more_at_what_each_has(tmp_path):
    from profopt_ci.pipeline.budget import OUTPUTS_S, Budget

    plan = _plan(tmp_path)
    benches = list(plan.spec.benchmarks)
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    state, lines = RoundState(), []
    # later rounds take three times the first (a slower machine): the looks planned from the first
    # round do not fit, and the budget stops the rounds
    measure, calls = _timed(0.03, 0.09)
    budget = Budget(seconds=OUTPUTS_S + 1.4)
    alphas = sequential_rounds(RoundContext(plan, sides, state, tmp_path, random.Random(1), lines.append), benches,
                               measure=measure, budget=budget, first=frozenset({"noisy"}))
    assert budget.left() > 0  # the rounds stopped before the budget did
    assert calls[0][0] == "noisy"  # what the change reaches goes first
    assert set(state.cut) == {"slower", "noisy", "same"}  # none had reached a look that decides
    assert state.cut["noisy"] >= max(state.cut.values())  # it went first in every round
    for name, rounds in state.cut.items():
        assert 0 < rounds < 18 and _rounds(state, name)[0] >= rounds
        assert alphas[name] < ALPHA  # one more look, at a look's share of α
    assert any(line.startswith("profopt: time budget spent: rounds stopped") for line in lines)


def test_a_budget_plans_the_looks_to_fit_what_it_affords(tmp_path):
    from profopt_ci.pipeline.budget import OUTPUTS_S, Budget

    plan = _plan(tmp_path)
    benches = [b for b in plan.spec.benchmarks if b.name == "noisy"]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    state, lines = RoundState(), []
    measure, calls = _timed(0.05)
    budget = Budget(seconds=OUTPUTS_S + 0.06 * 1.2 + 0.6)  # about 11 rounds after the first
    sequential_rounds(RoundContext(plan, sides, state, tmp_path, random.Random(1), lines.append), benches,
                      measure=measure, budget=budget)
    planned = next(line for line in lines if line.startswith("profopt: time budget:"))
    assert "looks planned to fit" in planned
    looks = [c[3] for c in calls]  # each round's `total`: the look it is heading for
    assert max(looks) < 18  # the 18-round plan was cut down to what fits


def test_a_budget_too_short_for_all_takes_those_it_can_to_a_decision_and_holds_the_rest(tmp_path):
    """Seven rounds each of three benchmarks would decide none (a 99% CI needs eight signed ranks):
    what the change reaches and then the cheaper go on to eight rounds, the rest are held at one
    until those are done, and then take what is left of the budget."""
    from profopt_ci.pipeline.budget import OUTPUTS_S, PASS_SHARE, Budget

    plan = _plan(tmp_path)
    benches = list(plan.spec.benchmarks)
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    state, lines = RoundState(), []
    import time

    inner, calls = _literal()
    each = {"same": 0.05, "slower": 0.04, "noisy": 0.06}  # noisy's rounds cost the most

    def measure(ctx, b, r, total, **kwargs):
        time.sleep(each[b.name])
        inner(ctx, b, r, total, **kwargs)
    # after the first round (0.15 s, its passes 0.18 s): 0.95 s of rounds, six of all three
    budget = Budget(seconds=OUTPUTS_S + 0.15 + 0.15 * PASS_SHARE + 0.95)
    sequential_rounds(RoundContext(plan, sides, state, tmp_path, random.Random(1), lines.append), benches,
                      measure=measure, budget=budget, first=frozenset({"same"}))
    planned, released = [line for line in lines if line.startswith("profopt: time budget:")][:2]
    assert "held at the rounds they have until the others reach 8: noisy" in planned, planned
    assert _rounds(state, "same") == (8, 8) and _rounds(state, "slower") == (8, 8)
    assert "same" not in state.cut and "slower" not in state.cut  # decided at their look of eight
    order = [c[0] for c in calls]
    assert order.index("noisy", 3) > max(i for i, n in enumerate(order) if n in ("same", "slower"))  # held till then
    assert released.startswith("profopt: time budget:") and "held" not in released  # then the rest is its
    assert 1 < state.cut["noisy"] < 8 and _rounds(state, "noisy")[0] == state.cut["noisy"]
    assert budget.left() > 0
    # same held within ±0.12% and has no constraint: no pass is to come, so its passes' time went back
    # to the rounds; slower regressed and will be profiled, and noisy is undecided
    assert budget.settled == {"same"}


def test_a_settled_benchmark_gives_its_passes_time_back_to_the_rounds():
    from profopt_ci.pipeline.budget import PASS_SHARE, Budget

    budget = Budget(seconds=30.0)
    budget.spent("a", 1.0)
    budget.spent("b", 2.0)
    before = budget.rounds_left()
    budget.settle("b")
    assert budget.rounds_left() - before == pytest.approx(2.0 * PASS_SHARE, abs=0.05)
    assert budget.passes_s(["a", "b"]) == pytest.approx(1.0 * PASS_SHARE)


def test_each_benchmarks_last_look_is_kept_for_the_passes_after_the_rounds(tmp_path):
    """The passes ask whether a benchmark's profile is worth taking: they read the entry of its last
    look (state.looked), judged on the rounds it ended with, instead of judging it again."""
    _, state, _, lines = _run(tmp_path)
    for name in FIGURES:
        entry = state.looked[name]
        assert entry["rounds"] == _rounds(state, name)[0]
        said = [line for line in lines if line.startswith(f"profopt: {name}: look")][-1]
        assert f"after {entry['rounds']} rounds: {entry['metrics']['step_time_ms']['verdict']}" in said
