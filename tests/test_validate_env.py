"""`validate` checks what compare will run: with `setup`, it collects in the setup environment
(built as compare builds a side's, cached by the setup and the files it reads); `--no-setup` is
the fast check in profopt's own environment, and says so. Real venvs, a real offline pip, a
package that only the setup installs (profopt's own environment lacks it)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import wheels
from conftest import make_repo, run_cli

SUITE = """\
import sidelib


def test_double(benchmark):
    benchmark(sidelib.double, 21)


def test_triple(benchmark):
    benchmark(sidelib.triple, 21)
"""


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("wheels")
    wheels.with_requirements("pytest", dest)
    wheels.module_wheel(dest, "sidelib", "sidelib", "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n")
    return dest


def _repo(tmp_path: Path, wheelhouse: Path, conftest: str = "") -> Path:
    assert importlib.util.find_spec("sidelib") is None  # only the setup environment has it
    spec = (f"version: 1\nhardware_label: test\nsetup: pip install -q --no-index --find-links {wheelhouse} "
            "-r requirements.txt\nsuites:\n  - {pytest: tests/bench/}\n")
    root = tmp_path / "repo"
    make_repo(root, [{"profopt.yml": spec, "requirements.txt": "pytest\nsidelib\n", "tests/bench/test_lib.py": SUITE,
                      "conftest.py": conftest}])
    return root


@pytest.mark.slow
def test_validate_collects_in_the_setup_environment_and_reuses_it_until_a_file_it_reads_changes(tmp_path, wheelhouse):
    root = _repo(tmp_path, wheelhouse)
    cache = {"PROFOPT_CACHE_DIR": str(tmp_path / "cache")}
    first = run_cli(["validate"], root, env=cache)
    assert first.returncode == 0, first.stderr
    assert "building the setup environment" in first.stderr and "requirements.txt" in first.stderr
    listed = [ln for ln in first.stdout.splitlines() if ln.startswith("pytest:tests/bench/:")]
    assert [ln.split(": ")[1].split(" (")[0] for ln in listed] == ["test_double", "test_triple"]
    assert "checked in the setup environment" in first.stdout and str(tmp_path / "cache") in first.stdout

    again = run_cli(["validate"], root, env=cache)
    assert again.returncode == 0 and "setup environment reused" in again.stderr
    assert "building" not in again.stderr

    (root / "requirements.txt").write_text("pytest\nsidelib\n# pinned anew\n")
    changed = run_cli(["validate"], root, env=cache)
    assert changed.returncode == 0 and "building the setup environment" in changed.stderr

    fast = run_cli(["validate", "--no-setup"], root, env=cache)  # profopt's own packages: no sidelib there
    assert fast.returncode == 2
    assert "No module named 'sidelib'" in fast.stderr and "--no-setup: collected with profopt's own" in fast.stderr


@pytest.mark.slow
def test_a_suite_broken_in_its_setup_environment_shows_the_collectors_own_last_lines(tmp_path, wheelhouse):
    conftest = "import sidelib\n\nsidelib.cumproduct  # gone in the version setup installs\n"
    root = _repo(tmp_path, wheelhouse, conftest)
    proc = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 2, proc.stdout
    assert "pytest --collect-only exited 4" in proc.stderr
    assert "ImportError while loading conftest" in proc.stderr
    assert "AttributeError: module 'sidelib' has no attribute 'cumproduct'" in proc.stderr
    assert "profopt: internal error" not in proc.stderr


def test_a_setup_that_fails_in_validate_is_exit_3_with_its_output_and_leaves_no_environment(tmp_path):
    root = tmp_path / "repo"
    spec = ("version: 1\nhardware_label: test\nsetup: 'echo cannot install sidelib >&2; exit 7'\n"
            "suites:\n  - {pytest: tests/bench/}\n")
    make_repo(root, [{"profopt.yml": spec, "tests/bench/test_lib.py": SUITE}])
    cache = tmp_path / "cache"
    proc = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert proc.returncode == 3 and "setup failed on tree" in proc.stderr and "cannot install sidelib" in proc.stderr
    assert not [p for p in (cache / "envs").iterdir() if p.is_dir()]
