"""A step under 1 ms gets short lockstep rounds (150 ms) where the spec leaves `round_ms` unset, with a
warm-up and a thread probe as much shorter; a set `round_ms` applies to every step (issue 28 §4).
Real workers, real steps: the round's pair count shows which length it was given."""
from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from profopt_ci.harness import threads
from profopt_ci.harness.timing import Stepper
from profopt_ci.measure import lockstep
from profopt_ci.measure.cpus import Placement
from profopt_ci.measure.live_worker import lead_steps
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.specfile.keys import DEFAULTS, SHORT_STEP_MS
from profopt_ci.specfile.load import parse_spec

SHORT_ROUND_MS = DEFAULTS.short_round_ms

ANY_SPEC = "version: 1\nbenchmarks:\n  - {name: s, callable: 'steps:make_step'}\n"
# A sleeping step: its length holds while other tests keep the CPUs busy (a spinning one's values
# stretched with every preemption, and the pair counts compared below with them).
STEPS = """\
import time


def make_step(us=50):
    def step():
        time.sleep(us / 1e6)
    return step
"""


def _bench(tmp_path: Path, us: int, defaults: str = ""):
    (tmp_path / "steps.py").write_text(STEPS)
    text = (f"version: 1\ndefaults: {{warmup: 1, profile: 'off'{defaults}}}\n"
            f"benchmarks:\n  - {{name: s, callable: 'steps:make_step', params: {{us: {us}}}}}\n")
    return parse_spec(text, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml").benchmarks[0]


def _filled_ms(tmp_path: Path, bench) -> float:
    """How long the round's pairs took, from its samples: pairs × both sides' values with their lead
    step (a value holds `loops` steps, a power of two that can differ between two rounds)."""
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    envs = {s.name: child_env(parse_spec(ANY_SPEC, "x.yml"), bench, s) for s in sides}
    placement = Placement(pool=[0])
    placement.cpus = [0]  # settled: no probe, as from the second round on
    out = lockstep.callable_round(lockstep.Round({"base": bench, "head": bench}, envs, sides, tmp_path, round_index=1,
                             rng=random.Random(0), placement=placement))
    assert out["base"]["pairs"] == out["head"]["pairs"]
    return sum(s["pairs"] * s["step_time_ms"] * (s["loops"] + lead_steps()) for s in out.values())


def test_the_short_round_applies_only_where_round_ms_is_unset(tmp_path):
    unset = _bench(tmp_path, 50).settings
    assert (unset.round_ms, unset.short_round_ms) == (400.0, SHORT_ROUND_MS)
    set_ = _bench(tmp_path, 50, ", round_ms: 300").settings
    assert (set_.round_ms, set_.short_round_ms) == (300.0, 300.0)
    # the round's length follows the slower side's step: one step of 1 ms or more keeps the long round
    loops = 8
    short = {"base": int(0.5e6 * loops), "head": int(0.9e6 * loops)}
    assert lockstep.round_length(unset, short, loops) == SHORT_ROUND_MS
    assert lockstep.round_length(unset, {**short, "head": int(SHORT_STEP_MS * 1e6 * loops)}, loops) == 400.0
    assert lockstep.round_length(set_, short, loops) == 300.0
    # a spec that sets short_round_ms itself: the short step's round, whatever round_ms says
    own = _bench(tmp_path, 50, ", round_ms: 300, short_round_ms: 80").settings
    assert (own.round_ms, own.short_round_ms) == (300.0, 80.0)
    assert lockstep.round_length(own, short, loops) == 80.0


def test_a_short_step_fills_a_short_round_and_a_long_one_the_whole_round(tmp_path):
    short_default = _filled_ms(tmp_path, _bench(tmp_path, 50))  # ~0.1 ms a step with the sleep's own cost
    short_400 = _filled_ms(tmp_path, _bench(tmp_path, 50, ", round_ms: 400"))
    # the pairs fill the round: ~150 ms against ~400 ms (2.7×)
    assert short_400 > 1.8 * short_default, (short_default, short_400)
    long_default = _filled_ms(tmp_path, _bench(tmp_path, 3000))  # a 3 ms step: values of one step, 400 ms rounds
    long_400 = _filled_ms(tmp_path, _bench(tmp_path, 3000, ", round_ms: 400"))
    assert abs(long_default - long_400) <= 0.35 * long_400, (long_default, long_400)


def _spin(us: float):
    def step():
        end = time.perf_counter() + us / 1e6
        while time.perf_counter() < end:
            pass
    return step


@pytest.mark.parametrize("us, short", [(50, True), (3000, False)])
def test_warm_up_and_probe_are_shorter_for_a_short_step_only(us, short):
    start = time.perf_counter()
    seen = threads.observe(_spin(us), 200.0, (SHORT_STEP_MS, 50.0))
    probe_ms = (time.perf_counter() - start) * 1000
    stepper = Stepper(_spin(us), value_ms=2.0, warmup=1, warmup_ms=100.0, short=(SHORT_STEP_MS, 15.0))
    loops = stepper.calibrate()
    start = time.perf_counter()
    stepper.warm(loops)
    warm_ms = (time.perf_counter() - start) * 1000
    if short:  # 50 ms and 15 ms (plus a value or a step), not 200 and 100
        assert probe_ms < 150 and warm_ms < 70, (probe_ms, warm_ms, seen)
    else:
        assert probe_ms >= 195 and warm_ms >= 98, (probe_ms, warm_ms, seen)


def test_only_a_commits_checkout_keeps_its_bytecode(tmp_path):
    spec = parse_spec(ANY_SPEC, "x.yml")
    assert child_env(spec, None, Side("tree", tmp_path))["PYTHONDONTWRITEBYTECODE"] == "1"
    assert "PYTHONDONTWRITEBYTECODE" not in child_env(spec, None, Side("head", tmp_path, commit="a" * 40))
