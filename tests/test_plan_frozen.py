"""A `Plan` is frozen: whatever learns something about the run returns a new plan (issue 29).

Nothing may assign to a plan's fields or edit its collections, and suite expansion returns what it
found instead of writing it into the plan it was given. Real parts: two real checkouts on disk, the
suites collected by real pytest processes, the base's callables built by the real probe process.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, fields

import pytest
from conftest import write_files

from profopt_ci.measure.processes import Side
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.plan import Plan, make_plan, overrides
from profopt_ci.suites.callables import expand_callables
from profopt_ci.suites.expand import expand_compare, expand_tree

SPEC = """\
version: 1
hardware_label: t
benchmarks_from: head
defaults: {rounds: 1, max_rounds: 1, round_ms: 20, warmup: 0, profile: "off", quality_steps: 1}
benchmarks:
  - {name: own, callable: 'lib:make_step'}
suites:
  - {pytest: bench/}
  - {pytest: broken/}
"""
LIB = "def work(n):\n    return sum(range(n))\n"
HEAD_LIB = LIB + "\n\ndef cube(n):\n    return sum(i ** 3 for i in range(n))\n\n\ndef make_step():\n    return lambda: work(10)\n"
BENCH = """\
import lib


def test_work(benchmark):
    benchmark(lib.work, 100)


def test_cube(benchmark):
    benchmark(lib.cube, 100)
"""
BROKEN = "def test_b(benchmark:\n    pass\n"


def _snapshot(plan: Plan) -> dict:
    """A deep copy of every field, taken before a stage runs: an edit anywhere inside shows."""
    return copy.deepcopy({f.name: dict(v) if isinstance(v, Mapping) else v
                          for f in fields(plan) for v in [getattr(plan, f.name)]})


def _plan(tmp_path) -> Plan:
    path = tmp_path / "head" / "profopt.yml"
    return make_plan(parse_spec(SPEC, str(path), path=path), overrides(environ={}))


@pytest.fixture
def checkouts(tmp_path):
    write_files(tmp_path / "head", {"profopt.yml": SPEC, "lib.py": HEAD_LIB, "bench/test_lib.py": BENCH,
                                    "broken/test_broken.py": BROKEN})
    write_files(tmp_path / "base", {"lib.py": LIB})  # no spec, no suites, no cube, no make_step
    return [Side("base", tmp_path / "base"), Side("head", tmp_path / "head")]


def test_no_field_of_a_plan_can_be_assigned_and_attach_returns_a_new_plan(tmp_path):
    plan = _plan(tmp_path)
    for f in fields(plan):
        with pytest.raises(FrozenInstanceError):
            setattr(plan, f.name, getattr(plan, f.name))
    with pytest.raises(FrozenInstanceError):
        plan.overrides.rounds = 3
    before = _snapshot(plan)
    attached = plan.attach("base", None).attach("head", plan.spec)
    assert _snapshot(plan) == before and not plan.sides and not plan.notes
    assert set(attached.sides) == {"base", "head"} and attached.notes[0]["id"] == "note.own_spec_missing"
    with pytest.raises(TypeError):
        attached.sides["base"] = plan.spec  # a read-only mapping
    with pytest.raises(AttributeError):
        attached.notes.append("more")  # a tuple


def test_expansion_returns_what_it_found_and_leaves_the_plan_it_was_given(tmp_path, checkouts):
    plan = _plan(tmp_path).attach("base", None).attach("head", _plan(tmp_path).spec)
    before = _snapshot(plan)
    suites = expand_compare(plan, checkouts, lambda _line: None)
    assert _snapshot(plan) == before
    assert set(suites.failures) == {"pytest:broken/"}  # a SyntaxError: one failed entry, both sides
    assert "SyntaxError" in suites.failures["pytest:broken/"]["head"]
    assert set(suites.new_causes) == {"test_cube"} and "cube" in suites.new_causes["test_cube"]["args"]["error"]
    assert suites.base_suite == {"test_work", "pytest:broken/"}
    assert {"test_work", "test_cube", "pytest:broken/"} <= {b.name for b in suites.spec.benchmarks}

    found = _snapshot(suites)
    full = expand_callables(suites, checkouts, lambda _line: None)
    assert _snapshot(suites) == found
    assert set(full.new_causes) == {"test_cube", "own"}  # the base's lib has no make_step
    assert full.notes[-1]["id"] == "note.callables_from_head"

    tree = _plan(tmp_path)  # `profopt run` in the head's checkout
    before = _snapshot(tree)
    ran = expand_tree(tree, Side("tree", tmp_path / "head"), lambda _line: None)
    assert _snapshot(tree) == before and not tree.failures
    assert set(ran.failures) == {"pytest:broken/"} and len(ran.spec.benchmarks) == len(tree.spec.benchmarks) + 3
    assert expand_tree(ran, Side("tree", tmp_path / "head"), lambda _line: None) is ran  # collected once per plan
