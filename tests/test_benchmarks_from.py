"""`benchmarks_from: head` for callables: the head's profopt.yml definitions run on the base's code.

A real repository whose head adds profopt.yml with its first callables (and the benchmark module
they live in) and slows one library function: with `benchmarks_from: head` the base runs the
head's callables too, so the slowdown is judged; a callable the base cannot run is new in the PR
with its cause. Without the key callables keep `each`: the base has no spec, so all are new.
"""
from __future__ import annotations

import json

import pytest
from conftest import make_repo, run_cli
from test_suites import LIB, SETTINGS

from profopt_ci.words.i18n import say

BENCH = """\
import mylib


def make_work(n=3000):
    return lambda: mylib.work(n)


def make_cube(n=200):
    return lambda: mylib.cube_sum(n)
"""
SPEC = ("version: 1\nhardware_label: test-cpu\n" + SETTINGS + "FROM_LINE" + "benchmarks:\n"
        "  - {name: work, callable: 'bench.callables:make_work'}\n"
        "  - {name: cube, callable: 'bench.callables:make_cube', rounds: 2}\n")  # new in the PR: head only
# head doubles work()'s loop: this file is about which side runs which definition, so the change is
# made far larger than a loaded CI runner's noise (SLOW_LIB's +30% came out inconclusive there once)
HEAD_LIB = LIB.replace("    return x", "    for i in range(n):\n        x += 0\n    return x", 1) + (
    "\n\ndef cube_sum(n):\n    return sum(i ** 3 for i in range(n))\n")


def _repo(tmp_path, from_line: str, *extra: str):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB},
                     {"mylib.py": HEAD_LIB, "bench/__init__.py": "", "bench/callables.py": BENCH,
                      "profopt.yml": SPEC.replace("FROM_LINE", from_line)}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--report", "report.md", *extra], root,
                   timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, json.loads((root / ".profopt" / "comparison.json").read_text())


@pytest.mark.slow
def test_head_callables_run_on_the_base_and_what_it_cannot_run_is_new(tmp_path):
    root, c = _repo(tmp_path, "benchmarks_from: head\n")
    by = {b["name"]: b for b in c["benchmarks"]}
    assert set(by) == {"work"}, c["benchmarks"]
    work = by["work"]
    assert work["samples"]["base"] and work["samples"]["head"]
    assert work["metrics"]["step_time_ms"]["verdict"] == "regressed"
    new = {n["name"]: n for n in c["new_in_pr"]}
    assert set(new) == {"cube"}
    assert "the base cannot run it" in new["cube"]["cause"] and "cube_sum" in new["cube"]["cause"]
    assert any("callables: the head's 2 definition(s) ran against each side's code (benchmarks_from: head); "
               "bench/callables.py" in say("en", n) for n in c["notes"]), c["notes"]
    assert any(say("en", n).startswith("base has no profopt.yml (this pull request adds it): the head's benchmarks ran on the "
                            "base's code") for n in c["notes"]), c["notes"]
    assert "reject" in (root / "report.md").read_text().splitlines()[0]


@pytest.mark.slow
def test_callables_default_to_each_so_a_base_without_the_spec_runs_none(tmp_path):
    _, c = _repo(tmp_path, "", "--rounds", "2")  # both are head-only rounds, one process each
    assert c["benchmarks"] == [] or all(not b["samples"].get("base") for b in c["benchmarks"])
    assert {n["name"] for n in c["new_in_pr"]} == {"work", "cube"}
