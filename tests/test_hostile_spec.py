"""Hostile specs (issue 14 items 3, 5, 6, 7, 9): each is exit 2 with file:line:col, fast, never a traceback."""
from __future__ import annotations

import time

import pytest
from conftest import run_cli

from profopt_ci.errors import SpecError, UsageError
from profopt_ci.specfile.load import parse_spec

OK = "version: 1\nbenchmarks:\n  - name: a\n    callable: m:f\n"
BOMB = "version: 1\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + \
    "benchmarks: [{name: a, callable: 'm:f', params: {x: *i}}]\n"


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "p.yml")
    return info.value.problems


def test_an_alias_bomb_is_refused_in_milliseconds():
    assert len(BOMB) < 700
    start = time.monotonic()
    (line,) = problems(BOMB)
    assert time.monotonic() - start < 2
    assert line.startswith("p.yml:1:1:") and "alias bomb" in line


def test_a_recursive_anchor_and_deep_nesting_are_spec_errors():
    (line,) = problems("version: 1\nbenchmarks: &a [*a]\n")
    assert line.startswith("p.yml:2:13:") and "alias to itself" in line
    deep = OK + "    params: {x: " + "[" * 1200 + "]" * 1200 + "}\n"
    (line,) = problems(deep)
    assert line.startswith("p.yml:5:") and ("nest" in line or "depth" in line)
    block = OK + "    params:\n" + "".join("      " + "  " * i + f"k{i}:\n" for i in range(80)) + "      " + "  " * 80 + "v\n"
    (line,) = problems(block)
    assert "nested deeper than 64" in line


@pytest.mark.parametrize("bad, where, words", [
    ("    params: {1: a, 1.0: b}\n", "p.yml:5:", "appears twice"),
    ("    params: {yes: a, true: b}\n", "p.yml:5:", "appears twice"),
    ("    timeout_s: .inf\n", "p.yml:5:16", "finite"),
    ("    params: {n: .nan}\n", "p.yml:5:", "finite"),
    ("    params: {when: 2024-01-01}\n", "p.yml:5:", "a date"),
    ("    params: {b: !!binary aGk=}\n", "p.yml:5:", "bytes"),
    ("    params: {s: !!set {a, b}}\n", "p.yml:5:", "set"),
    ("    threshold: -3\n", "p.yml:5:16", "≥ 0"),
    ("    goal: {metric: step_time, target: -5}\n", "p.yml:5:", "≥ 0"),
    ("    env: {\"A=B\": x}\n", "p.yml:5:", "without `=`"),
    ("    env: {A: \"x\\0y\"}\n", "p.yml:5:", "NUL"),
    ("    timeout_s: 1.0e+300\n", "p.yml:5:", "at most"),
    ("    rounds: " + "9" * 5000 + "\n", "p.yml:1:1", "4300"),
    # an integer too large for a float: named by its length (formatting it as a float raised OverflowError)
    ("    rounds: " + "9" * 400 + "\n", "p.yml:5:13", "`benchmarks[0].rounds` is an integer of 400 digits — expected at most"),
    ("    params: {n: " + "7" * 400 + "}\n", "p.yml:5:", "an integer of 400 digits — expected a number a benchmark can use"),
    ("    params: {n: -" + "7" * 4000 + "}\n", "p.yml:5:", "an integer of 4000 digits"),
    ("    round_ms: 1.0e+300\n", "p.yml:5:", "expected at most 8.64e+07"),  # rounds that would never end
])
def test_values_that_fail_later_are_spec_errors(bad, where, words):
    lines = problems(OK + bad)
    assert any(ln.startswith(where) and words in ln for ln in lines), lines


def test_nul_in_a_command_is_a_spec_error():
    lines = problems('version: 1\nbenchmarks:\n  - name: c\n    command: ["echo", "a\\0b"]\n')
    assert lines[0].startswith("p.yml:4:") and "NUL" in lines[0]


def test_dev_zero_and_huge_error_lists_through_the_cli(tmp_path):
    start = time.monotonic()
    proc = run_cli(["validate", "--spec", "/dev/zero"], tmp_path, timeout=60)
    assert proc.returncode == 2 and "larger than" in proc.stderr and time.monotonic() - start < 10
    bad = "version: 1\nbenchmarks:\n" + "".join(f"  - name: b{i}\n    callable: m:f\n    rounds: zero\n" for i in range(300))
    (tmp_path / "profopt.yml").write_text(bad)
    proc = run_cli(["validate"], tmp_path, timeout=120)
    assert proc.returncode == 2 and "internal error" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 51 and "300 problem(s) (250 more not shown)" in proc.stderr


@pytest.mark.parametrize("flag", ["--rounds", "--max-rounds"])
def test_rounds_on_the_command_line_have_the_specs_limit(tmp_path, flag):
    """`--rounds` with 400 digits was taken as it is: a compare that would never end (issue 28)."""
    proc = run_cli(["compare", flag, "9" * 400], tmp_path, timeout=60)
    assert proc.returncode == 2 and "expected at most 1,000,000" in proc.stderr, proc.stderr


def test_a_missing_spec_is_still_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        __import__("profopt_ci.specfile.load", fromlist=["load_spec"]).load_spec(tmp_path / "nope.yml")
