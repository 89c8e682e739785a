"""How many pairs of worker processes a forked lockstep round takes its values from (rounds.process_pairs):
two for a step whose process state matters (a tensor library's, or one that faults its memory in
each step), but only where each pair's half of the round still holds lockstep.MIN_PAIRS values."""
from __future__ import annotations

import pytest

from profopt_ci.measure.lockstep import MIN_PAIRS
from profopt_ci.measure.rounds import FAULTING, RoundState, process_pairs
from profopt_ci.specfile.load import parse_spec

SPEC = "version: 1\nbenchmarks:\n  - {name: step, callable: \"m:f\"}\n  - {name: cmd, command: \"true\"}\n"


def _state(pairs: int, faults: float = 0.0, preload: tuple[str, ...] = ()) -> RoundState:
    state = RoundState()
    for side in ("base", "head"):
        state.track("step", side).samples.append({"round": 0, "pairs": pairs, "faults_per_step": faults})
    state.preload["step"] = list(preload)
    return state


@pytest.fixture
def benches(tmp_path):
    spec = parse_spec(SPEC, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")
    return {b.name: b for b in spec.benchmarks}


ZYGOTES = {"base": object(), "head": object()}


def test_a_tensor_step_whose_round_holds_enough_values_takes_two_pairs(benches, monkeypatch):
    monkeypatch.delenv("PROFOPT_ROUND_PAIRS", raising=False)
    assert process_pairs(benches["step"], ZYGOTES, _state(2 * MIN_PAIRS + 6, preload=("torch", "torch.nn"))) == 2
    assert process_pairs(benches["step"], ZYGOTES, _state(2 * MIN_PAIRS + 6, faults=FAULTING * 5)) == 2


def test_a_split_that_would_stretch_the_round_is_not_taken(benches, monkeypatch):
    """An ~18 ms 2-thread GPT step fills a 400 ms round with ~11 pairs: halves of MIN_PAIRS each
    would double the round and pay a second build and warm-up."""
    monkeypatch.delenv("PROFOPT_ROUND_PAIRS", raising=False)
    assert process_pairs(benches["step"], ZYGOTES, _state(11, preload=("torch",))) == 1
    assert process_pairs(benches["step"], ZYGOTES, _state(2 * MIN_PAIRS, preload=("torch",))) == 1  # two floored halves


def test_a_plain_step_a_command_and_a_fresh_round_take_one(benches, monkeypatch):
    monkeypatch.delenv("PROFOPT_ROUND_PAIRS", raising=False)
    assert process_pairs(benches["step"], ZYGOTES, _state(200, faults=FAULTING / 2)) == 1
    assert process_pairs(benches["step"], None, _state(200, preload=("torch",))) == 1
    assert process_pairs(benches["cmd"], ZYGOTES, _state(200, preload=("torch",))) == 1


def test_the_environment_sets_the_count(benches, monkeypatch):
    monkeypatch.setenv("PROFOPT_ROUND_PAIRS", "3")
    assert process_pairs(benches["step"], ZYGOTES, _state(11)) == 3
