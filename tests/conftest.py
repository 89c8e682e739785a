"""Shared fixtures: real git repositories, real subprocesses of the real CLI."""
from __future__ import annotations

import compileall
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


# CPU-bound on purpose: under contention a busy-wait on the clock overshoots by whole scheduler
# slices, while arithmetic slows both sides of a round alike. `us` scales the work.
CPU_STEP = """\
import profopt_ci

def make_step(us=2000, loss=1.0):
    n = int(us * 20)
    def step():
        x = 0
        for i in range(n):
            x += i
        profopt_ci.record(loss=loss, output_digest="same")
    return step
"""


def pytest_configure(config):
    """Under pytest-xdist each test process gets a CPU of its own (children inherit it), so the timed
    compares of two processes never share a CPU: each sees what a serial run on one CPU would."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1, …
    if not worker:
        # Once, before any test: the suite starts hundreds of interpreters that import src/, and
        # where PYTHONDONTWRITEBYTECODE is set (profopt sets it for its workers, some shells for
        # everything) each would compile it again. Python still reads the bytecode it may not write.
        compileall.compile_dir(str(SRC), quiet=1)
    if worker and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[int(worker[2:]) % len(cpus)]})


def pytest_collection_modifyitems(session, config, items):
    """Scheduling only: files with more `slow` tests run first. xdist hands out whole files
    (--dist loadfile) in collection order (--no-loadscope-reorder), so the long modules start at
    once and the many short ones fill in at the end, instead of one long file running alone last."""
    slow: dict[str, int] = {}
    for item in items:
        slow[item.fspath.strpath] = slow.get(item.fspath.strpath, 0) + (item.get_closest_marker("slow") is not None)
    first_seen = {path: i for i, path in enumerate(dict.fromkeys(item.fspath.strpath for item in items))}
    items.sort(key=lambda item: (-slow[item.fspath.strpath], first_seen[item.fspath.strpath]))


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra or {})
    return env


def run_cli(args: list[str], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real `profopt` entry point in a subprocess: exit code, stdout and stderr as a user sees them."""
    return subprocess.run(
        [sys.executable, "-m", "profopt_ci.cli.command_line", *args], cwd=cwd, env=cli_env(env),
        capture_output=True, text=True, timeout=timeout,
    )


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def git(root: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, commits: list[dict[str, str]], branch: str = "main") -> list[str]:
    """A real repository: one commit per dict of files (later dicts overlay earlier ones)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    shas = []
    for i, files in enumerate(commits):
        write_files(root, files)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {i}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas


@pytest.fixture
def gh():
    """A loopback GitHub (tests/ghserver.py) for the publishing paths."""
    from ghserver import FakeGitHub

    server = FakeGitHub()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def repo_factory(tmp_path):
    def factory(commits: list[dict[str, str]], name: str = "repo") -> tuple[Path, list[str]]:
        root = tmp_path / name
        return root, make_repo(root, commits)

    return factory


@pytest.fixture(autouse=True)
def own_cache_dir(tmp_path_factory, monkeypatch):
    """Each test's compares keep their reach records, stored comparisons and setup venvs apart: a
    record another test (or another profopt) kept in ~/.cache/profopt once decided a test's reach.
    A test that shares a cache between its compares sets PROFOPT_CACHE_DIR itself."""
    monkeypatch.setenv("PROFOPT_CACHE_DIR", str(tmp_path_factory.mktemp("profopt-cache")))


@pytest.fixture(autouse=True)
def fresh_harness_state():
    """Each test starts with no recorded phases or quality values, whatever ran before it."""
    from profopt_ci.harness import timing as harness

    harness._state = harness._State()
    yield
    harness._state = harness._State()
