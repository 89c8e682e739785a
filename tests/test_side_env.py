"""A side with `setup` runs in its own environment: what its setup installed plus profopt's worker,
nothing else of profopt's. A real project as it was met: `filterwarnings = error` in its pytest
config, a setup venv that installs pytest and a pytest plugin of its own, and pytest-timeout in
profopt's environment (the test extras) but not in the side's. Every pytest session of every
worker — fresh ones and those forked from a zygote — logs what it loaded; the compare runs at the
defaults but for its rounds (forking on)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import wheels
from conftest import make_repo, run_cli

PLUGIN = """\
def pytest_configure(config):
    config.addinivalue_line("markers", "probe_plugin: the side's own plugin ran")


def check(value):
    assert value == 1  # a plugin module pytest rewrites: imported before the session, it would warn
"""

CONFTEST = """\
import json
import os
import sys


def _parent():
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            return fh.read().replace(b"\\0", b" ").decode()
    except OSError:
        return ""


def pytest_unconfigure(config):
    import importlib.util

    loaded = sorted(d.project_name for _, d in config.pluginmanager.list_plugin_distinfo())
    tops = sorted({m.partition(".")[0] for m in sys.modules} - set(sys.stdlib_module_names))
    record = {"pid": os.getpid(), "forked": "zygote_process" in _parent(), "plugins": loaded, "modules": tops,
              "timeout_imported": "pytest_timeout" in sys.modules,
              "sees_profopt_packages": [m for m in ("yaml", "msgspec", "pytest_timeout")
                                        if importlib.util.find_spec(m) is not None],
              "python": sys.executable}
    # one write of the whole line: two sessions of a round append at once (a buffered file may split it)
    fd = os.open(os.environ["SESSION_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (json.dumps(record) + "\\n").encode())
    os.close(fd)
"""

SUITE = """\
def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def test_sum(benchmark):
    benchmark(work, 300)


def test_join(benchmark):
    benchmark(lambda: ",".join(str(i) for i in range(40)))
"""


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """pytest (and what it requires) from profopt's own environment, and the side's own plugin."""
    dest = tmp_path_factory.mktemp("wheels")
    wheels.with_requirements("pytest", dest)
    wheels.plugin_wheel(dest, "profopt-probe-plugin", "profopt_probe_plugin", PLUGIN)
    # a project that installs a profopt of its own (a dev dependency): the worker must stay ours
    wheels.module_wheel(dest, "profopt-ci", "profopt_ci", "raise ImportError('the side installed its own profopt_ci')\n")
    return dest


def _project(tmp_path: Path, wheelhouse: Path, log: Path) -> Path:
    spec = (f"version: 1\nhardware_label: test\n"
            f"setup: pip install -q --no-index --find-links {wheelhouse} pytest profopt-probe-plugin profopt-ci\n"
            f"env: {{SESSION_LOG: {log}}}\n"
            "defaults: {rounds: 6, max_rounds: 6}\n"
            "suites:\n  - {pytest: tests/bench/}\n")
    files = {"pyproject.toml": "[tool.pytest.ini_options]\nfilterwarnings = [\"error\"]\n",
             "conftest.py": CONFTEST, "tests/bench/test_speed.py": SUITE, "profopt.yml": spec}
    root = tmp_path / "repo"
    make_repo(root, [files, {"README.md": "head\n"}])
    return root


@pytest.mark.slow
def test_a_warnings_as_errors_suite_runs_every_round_in_its_own_env_forked(tmp_path, wheelhouse):
    import pytest_timeout  # noqa: F401 — the plugin that must never load there is in profopt's environment

    log = tmp_path / "sessions.jsonl"
    root = _project(tmp_path, wheelhouse, log)
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--measure", "all"], root, timeout=600)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert sorted(b["name"] for b in c["benchmarks"]) == ["test_join", "test_sum"]
    for b in c["benchmarks"]:
        assert b["decision"] != "failed", b.get("error")
        for side in ("base", "head"):
            samples = b["samples"][side]
            assert len(samples) == 6
            assert not samples[0]["forked"] and any(s["forked"] for s in samples[1:]), side  # forking on

    sessions = [json.loads(line) for line in log.read_text().splitlines()]
    fresh = [s for s in sessions if not s["forked"]]
    forked = [s for s in sessions if s["forked"]]
    assert fresh and forked
    for s in sessions:
        assert s["plugins"] == ["profopt-probe-plugin"], s["plugins"]  # the side's own, and only it
        assert not s["timeout_imported"] and s["sees_profopt_packages"] == []
        assert "/venv-" in s["python"] and s["python"] != sys.executable
    # a forked session has no module a fresh one would not have (profopt's worker aside)
    fresh_modules = set().union(*(s["modules"] for s in fresh)) | {"profopt_ci"}
    for s in forked:
        assert set(s["modules"]) <= fresh_modules, set(s["modules"]) - fresh_modules

    for name in ("base", "head"):
        env = c[name]["environment"]
        assert env["own"] is True and env["python"].endswith("/bin/python") and "venv-" in env["python"]
        assert env["packages"]["pytest"] == pytest.__version__
        assert env["packages"]["profopt-probe-plugin"] == "0.1" and "pytest-timeout" not in env["packages"]
    report = (root / ".profopt" / "report.md").read_text() if (root / ".profopt" / "report.md").exists() else ""
    shown = run_cli(["report", str(root / ".profopt" / "comparison.json")], root)
    assert shown.returncode == 0
    text = report + shown.stdout
    assert "its own setup venv" in text and "package profopt-probe-plugin" in text


@pytest.mark.slow
def test_the_same_compare_without_setup_runs_in_profopts_environment_and_says_so(tmp_path):
    """No setup: profopt's own interpreter and packages, said in the report (the plugin of profopt's
    environment then loads, as it always did for a suite run there)."""
    root = tmp_path / "repo"
    spec = ("version: 1\nhardware_label: test\ndefaults: {rounds: 2, max_rounds: 2}\n"
            "suites:\n  - {pytest: tests/bench/, select: test_sum}\n")
    make_repo(root, [{"tests/bench/test_speed.py": SUITE, "profopt.yml": spec}, {"README.md": "x\n"}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--lang", "zh", "--measure", "all"], root,
                   timeout=300)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    env = c["head"]["environment"]
    assert env["own"] is False and os.path.realpath(env["python"]) == os.path.realpath(sys.executable)
    assert env["packages"]["pytest"] == pytest.__version__
    shown = run_cli(["report", str(root / ".profopt" / "comparison.json"), "--lang", "zh"], root)
    assert "profopt 自身的环境" in shown.stdout and "包 pytest" in shown.stdout


def test_what_a_zygote_leaves_to_pytest_is_what_pytest_marks_for_rewriting():
    """worker.preloadable leaves out harness.pytest_suite.rewritten_tops(); pytest's own reading of
    the same distributions is the oracle (profopt's environment has pytest-timeout, xdist …)."""
    from importlib import metadata

    from _pytest.config import _iter_rewritable_modules

    from profopt_ci.harness import pytest_suite

    expected: set[str] = set()
    for dist in metadata.distributions():
        if any(ep.group == "pytest11" for ep in dist.entry_points):
            expected |= set(_iter_rewritable_modules([str(f) for f in dist.files or []]))
    assert "pytest_timeout" in expected
    assert pytest_suite.rewritten_tops() == expected
