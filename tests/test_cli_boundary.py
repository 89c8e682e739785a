"""The CLI's one error boundary (cli/command_line.py): every verb is registered by its own module, both
entry points run, and each kind of error leaves as `profopt: …` with its documented exit code.
Real subprocesses and real git repositories throughout."""
from __future__ import annotations

import subprocess
import sys

from conftest import cli_env, make_repo, run_cli

from profopt_ci.cli import command_line as cli_main

VERB_NAMES = ["validate", "run", "compare", "diff", "demo", "report", "publish", "baseline", "merge", "bisect", "site",
              "schema"]
SPEC = "version: 1\nhardware_label: t\nbenchmarks:\n  - name: a\n    callable: bench:make\n"


def _last_line(stderr: str) -> str:
    return [ln for ln in stderr.splitlines() if ln.strip()][-1]


def test_every_verb_module_registers_its_verb_in_help_order():
    parser = cli_main.build_parser()
    sub = next(a for a in parser._actions if a.dest == "verb")
    assert list(sub.choices) == VERB_NAMES
    for name in [n for n in VERB_NAMES if n != "baseline"]:  # each verb's module sets the command its flags run
        assert callable(sub.choices[name].get_default("func")), name
    actions = next(a for a in sub.choices["baseline"]._actions if a.dest == "action")
    assert sorted(actions.choices) == ["issues", "list", "push", "refresh", "show"]
    assert all(callable(p.get_default("func")) for p in actions.choices.values())


def test_python_dash_m_profopt_ci_is_the_same_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "--version"], cwd=tmp_path, env=cli_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("profopt "), proc.stderr


def test_no_verb_is_a_usage_error_that_names_the_verbs(tmp_path):
    proc = run_cli([], tmp_path)
    assert proc.returncode == 2
    assert _last_line(proc.stderr).startswith("profopt: no verb given — expected one of: validate, run, compare")


def test_a_bad_flag_is_exit_2_in_the_profopt_form_with_the_verb(tmp_path):
    proc = run_cli(["compare", "--rounds", "0"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "profopt: compare: argument --rounds: 0 — expected at least 1"


def test_spec_problems_are_file_line_col_lines_then_one_profopt_summary(tmp_path):
    (tmp_path / "profopt.yml").write_text(SPEC.replace("callable: bench:make", "callable: bench:make\n    rounds: x"))
    proc = run_cli(["validate", "--no-import"], tmp_path)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith("profopt.yml:6:"), proc.stderr
    assert lines[-1] == "profopt: the spec has 1 problem(s)"


def test_a_git_failure_is_exit_3_in_the_profopt_form(tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, [{"README": "x\n"}])
    subprocess.run(["git", "remote", "add", "origin", str(tmp_path / "no-such-remote")], cwd=repo, check=True)
    proc = run_cli(["baseline", "push", "--store", "git:profopt-data"], repo)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("profopt: ") and "internal error" not in proc.stderr
    assert "no-such-remote" in proc.stderr  # git's own words say which remote


def test_a_missing_file_is_exit_2_naming_it(tmp_path):
    proc = run_cli(["report", "missing.json"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "profopt: missing.json: no such file — expected a profopt/comparison@1 file"
