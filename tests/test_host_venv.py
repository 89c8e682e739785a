"""The runner's venv (action/host_venv.py), run as action.yml runs it: a script, before profopt is
installed, on a tiny real package standing in for the action's checkout (a real venv, a real pip)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from profopt_ci.action import host_venv

SCRIPT = ROOT / "src" / "profopt_ci" / "action" / "host_venv.py"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinyaction"
version = "0.1"
"""


def _action(root: Path, answer: int = 1) -> Path:
    (root / "src" / "tinyaction").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "tinyaction" / "__init__.py").write_text(f"ANSWER = {answer}\n")
    return root


def _run(action: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
    return subprocess.run([sys.executable, str(SCRIPT), str(action)], env={**clean, **env},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_an_install_that_died_half_way_is_redone_then_reused(tmp_path):
    action, cache = _action(tmp_path / "action"), tmp_path / "tool-cache"
    venv = cache / "profopt-host" / host_venv.source_key(action)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").write_text("not a python")  # no ready marker: pip never finished
    proc = _run(action, {"RUNNER_TOOL_CACHE": str(cache)})
    assert proc.returncode == 0 and "installing profopt into" in proc.stderr, proc.stderr
    assert Path(proc.stdout.strip()) == venv / "bin" / "python3" and (venv / ".profopt-ready").is_file()
    ask = [proc.stdout.strip(), "-c", "import tinyaction; print(tinyaction.ANSWER)"]
    assert subprocess.run(ask, capture_output=True, text=True, check=True).stdout.strip() == "1"
    (action / "src" / "tinyaction" / "__pycache__").mkdir(exist_ok=True)  # bytecode is not a source
    (action / "src" / "tinyaction" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    again = _run(action, {"RUNNER_TOOL_CACHE": str(cache)})
    assert again.returncode == 0 and Path(again.stdout.strip()) == venv / "bin" / "python3"
    assert "reusing the runner's profopt venv" in again.stderr and "installing" not in again.stderr


def test_a_tool_cache_it_cannot_use_falls_back_to_the_jobs_temp_and_a_pip_failure_is_exit_1(tmp_path):
    action = _action(tmp_path / "action")
    (action / "pyproject.toml").write_text("[project]\nname = 'broken\n")
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "profopt-host").write_text("")  # a file where the folder goes (as root, chmod blocks nothing)
    proc = _run(action, {"RUNNER_TOOL_CACHE": str(blocked), "RUNNER_TEMP": str(tmp_path / "temp")})
    assert proc.returncode == 1, proc.stderr
    assert f"cannot use {blocked}" in proc.stderr and (tmp_path / "temp" / "profopt-host").is_dir()
    assert "cannot install profopt on the runner: pip install" in proc.stderr and "Traceback" not in proc.stderr
    usage = _run(action, {})
    assert usage.returncode == 2 and "neither RUNNER_TOOL_CACHE nor RUNNER_TEMP" in usage.stderr


def test_the_key_follows_the_sources_and_the_python_not_the_bytecode(tmp_path):
    action = _action(tmp_path / "action")
    key = host_venv.source_key(action)
    assert host_venv.source_key(action, version="3.12.0") != key
    assert host_venv.source_key(action, python="/usr/bin/false") != key
    (action / "src" / "tinyaction" / "mod.cpython-311.pyc").write_bytes(b"x")
    assert host_venv.source_key(action) == key
    (action / "src" / "tinyaction" / "more.py").write_text("")
    assert host_venv.source_key(action) != key
