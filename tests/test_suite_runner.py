"""The suite's own runner is profopt's to provide (issue 38 §2): a setup that installs only the
project still runs its pytest-benchmark and asv suites, the runner said in the environment table;
a conftest implementing pytest-benchmark's hooks and `bench_*.py` files run unchanged; a runner the
project's pins refuse is a clear error naming them; validate runs each benchmark once; validate's
environment cache follows the pyproject.toml an editable install with extras reads.

Real git repositories, real venvs, a real offline pip (tests/wheels.py packs profopt's own pytest,
asv_runner and setuptools back into wheels), the real CLI.
"""
from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest
import wheels
from conftest import git, make_repo, run_cli

from profopt_ci.measure import suite_runner
from profopt_ci.measure.tree_env import read_files

LIB = "def work(n):\n    x = 0\n    for i in range(n):\n        x += i\n    return x\n"
SLOW_LIB = LIB.replace("range(n)", "range(n * 2)")
PYPROJECT = ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
             '[project]\nname = "mylib"\nversion = "0.1"\ndependencies = [{deps}]\n'
             '[project.optional-dependencies]\nbench = []\n'
             '[tool.setuptools.packages.find]\nwhere = ["src"]\n')
FAST = 'defaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, quality_steps: 1, profile: "off", measure: all}\n'
PYTEST_SUITE = {"benchmarks/test_lib.py": "import mylib\n\n\ndef test_work(benchmark):\n    benchmark(mylib.work, 2000)\n"}
ASV_SUITE = {"benchmarks/__init__.py": "",
             "benchmarks/bench_lib.py": "import mylib\n\n\ndef time_work():\n    mylib.work(2000)\n"}
# a real library's pytest-benchmark suite, as it is: its conftest implements one of the plugin's
# hooks, and its files are named bench_*.py, which pytest's default python_files skip
BENCH_FOLDER = {
    "benchmarking/conftest.py": ("import getpass\n\n\ndef pytest_benchmark_update_machine_info(config, machine_info):\n"
                                 "    machine_info['user'] = getpass.getuser()\n"),
    "benchmarking/bench_work.py": "import mylib\n\n\ndef test_work(benchmark):\n    benchmark(mylib.work, 2000)\n",
    "benchmarking/bench_join.py": ("import pytest\n\nimport mylib\n\n\n@pytest.mark.parametrize('n', [100, 300])\n"
                                   "def test_join(benchmark, n):\n    benchmark(mylib.work, n)\n"),
    "benchmarking/helpers.py": "SIZES = [100, 300]\n",
}


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("wheels")
    wheels.with_requirements("pytest", dest)
    wheels.with_requirements("asv_runner", dest)
    wheels.installed_wheel("setuptools", dest)  # the project's build backend, offline
    return dest


def _project(root: Path, wheelhouse: Path, suite: str, files: dict[str, str], *, setup: str = "-e '.[bench]'",
             deps: str = "", head: dict[str, str] | None = None) -> None:
    spec = (f"version: 1\nhardware_label: t\nsetup: pip install -q --no-index --find-links {wheelhouse} {setup}\n"
            f"{FAST}suites:\n  - {{{suite}}}\n")
    make_repo(root, [{"profopt.yml": spec, "pyproject.toml": PYPROJECT.format(deps=deps), "src/mylib/__init__.py": LIB,
                      **files}, head or {"src/mylib/__init__.py": SLOW_LIB}])


def _compare(root: Path, cache: Path, *extra: str):
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--report", "report.md", *extra], root,
                   env={"PROFOPT_CACHE_DIR": str(cache)}, timeout=600)
    comparison = root / ".profopt" / "comparison.json"
    return proc, json.loads(comparison.read_text()) if comparison.is_file() else None


def _measured_on_both_sides(c: dict) -> set[str]:
    return {b["name"] for b in c["benchmarks"] if b["samples"]["base"] and b["samples"]["head"]}


@pytest.mark.slow
def test_a_pytest_suite_whose_setup_installs_only_the_project_gets_pytest_and_says_so(tmp_path, wheelhouse):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _project(root, wheelhouse, "pytest: benchmarks/", PYTEST_SUITE)
    listed = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert listed.returncode == 0, listed.stderr
    assert "(key: the setup, pyproject.toml)" in listed.stderr  # `-e '.[bench]'` reads it
    assert "the suite's runner: adding pytest" in listed.stderr
    want = version("pytest")
    assert (f"the suite's runner: pytest {want}, added to the setup environment by profopt "
            "(the setup did not install it), with ") in listed.stdout
    assert "pytest:benchmarks/: test_work (fixture)" in listed.stdout and "each of their benchmarks ran once" in listed.stdout
    again = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert again.returncode == 0 and "setup environment reused" in again.stderr and "adding" not in again.stderr
    assert f"pytest {want}, added to the setup environment by profopt" in again.stdout  # the venv remembers
    (root / "pyproject.toml").write_text(PYPROJECT.format(deps='"iniconfig"'))  # a dependency changed
    changed = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert changed.returncode == 0 and "building the setup environment" in changed.stderr, changed.stderr
    git(root, "checkout", "pyproject.toml")

    proc, c = _compare(root, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _measured_on_both_sides(c) == {"test_work"}
    for side in ("base", "head"):
        env = c[side]["environment"]
        assert env["own"] and env["runners"] == {"pytest": {"version": want, "added": True}}
        assert env["added"]["pytest"] == want and "pluggy" in env["added"]
    report = (root / "report.md").read_text()
    row = next(ln for ln in report.splitlines() if ln.startswith("| package pytest |"))
    assert row.count(f"{want}, added: the suite's runner") == 2, row
    assert "added: what the suite's runner requires" in report  # pluggy, iniconfig…
    zh = run_cli(["report", ".profopt/comparison.json", "--lang", "zh"], root)
    assert f"{want}，profopt 添加：套件的运行器" in zh.stdout


@pytest.mark.slow
def test_an_asv_suite_whose_setup_installs_only_the_project_gets_asv_runner(tmp_path, wheelhouse):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _project(root, wheelhouse, "asv: benchmarks", ASV_SUITE)
    proc, c = _compare(root, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the suite's runner: adding asv_runner" in proc.stderr
    assert _measured_on_both_sides(c) == {"bench_lib.time_work"}
    want = version("asv_runner")
    runners = c["head"]["environment"]["runners"]
    assert runners == c["base"]["environment"]["runners"] and list(runners.values()) == [{"version": want, "added": True}]
    assert "pytest" not in c["head"]["environment"]["added"]  # only what the asv suite needs
    report = (root / "report.md").read_text()
    assert f"{want}, added: the suite's runner" in report


@pytest.mark.slow
def test_a_conftest_with_pytest_benchmark_hooks_and_bench_files_run_unchanged(tmp_path, wheelhouse):
    """The setup installs pytest itself here: nothing is added, and the table says the runner came from it."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _project(root, wheelhouse, "pytest: benchmarking/", BENCH_FOLDER, setup="-e . pytest")
    listed = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert listed.returncode == 0, listed.stderr
    assert "INTERNALERROR" not in listed.stderr + listed.stdout
    want = version("pytest")
    assert f"the suite's runner: pytest {want}, installed by the setup" in listed.stdout
    assert "adding" not in listed.stderr
    names = sorted(ln.split(": ")[1].split(" (")[0] for ln in listed.stdout.splitlines()
                   if ln.startswith("pytest:benchmarking/: test_"))
    assert names == ["test_join[100]", "test_join[300]", "test_work"]
    assert ("pytest:benchmarking/: collected benchmarking/bench_join.py, benchmarking/bench_work.py, which the "
            "project's python_files (test_*.py *_test.py) skip: in the suite's folder, using the benchmark fixture"
            ) in listed.stdout

    proc, c = _compare(root, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _measured_on_both_sides(c) == {"test_work", "test_join[100]", "test_join[300]"}
    assert c["head"]["environment"]["runners"] == {"pytest": {"version": want, "added": False}}
    assert "added" not in c["head"]["environment"]
    report = (root / "report.md").read_text()
    assert f"{want}, the suite's runner (from setup)" in report
    assert "collected benchmarking/bench\\_join.py" in report  # the note, Markdown-escaped
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""  # the project's files as they were


@pytest.mark.slow
def test_a_runner_the_projects_pins_refuse_is_a_clear_error_naming_the_pins(tmp_path, wheelhouse):
    pinned = tmp_path / "pinned-wheels"  # an old pluggy the project pins; the only pytest needs pluggy>=1.6
    pinned.mkdir()
    wheels.module_wheel(pinned, "pluggy", "pluggy", "VERSION = 'old'\n", version="1.0.0")
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _project(root, wheelhouse, "pytest: benchmarks/", PYTEST_SUITE, deps='"pluggy==1.0.0"',
             setup=f"--find-links {pinned} -e .")
    proc = run_cli(["validate"], root, env={"PROFOPT_CACHE_DIR": str(cache)})
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("setup failed on tree: the suite's runner pytest cannot be added to its venv under the project's pins"
            in proc.stderr)
    assert "pluggy==1.0.0 (installed by the setup)" in proc.stderr
    assert f"pytest {version('pytest')} depends on pluggy" in proc.stderr
    assert not [p for p in (cache / "envs").iterdir() if p.is_dir()]  # nothing half-made is kept

    compared, c = _compare(root, cache)
    assert compared.returncode == 3 and "Traceback" not in compared.stderr
    assert {b["decision"] for b in c["benchmarks"]} == {"failed"}
    errors = " ".join(str(b.get("error") or b.get("reason") or "") for b in c["benchmarks"]) + compared.stderr
    assert "pluggy==1.0.0 (installed by the setup)" in errors


def test_validate_runs_each_benchmark_once_and_shows_an_import_its_test_body_makes(tmp_path):
    root = tmp_path / "repo"
    suite = {"benchmarks/test_lib.py": ("import mylib\n\n\ndef test_work(benchmark):\n    benchmark(mylib.work, 10)\n\n\n"
                                        "def test_markdown(benchmark):\n    import mistune_not_installed_xyz\n\n"
                                        "    benchmark(mistune_not_installed_xyz.html, 'x')\n")}
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": "version: 1\nhardware_label: t\nsuites:\n  - {pytest: benchmarks/}\n",
                      **suite}])
    proc = run_cli(["validate"], root)
    assert proc.returncode == 2, proc.stdout
    assert "benchmarks/test_lib.py:8: pytest:benchmarks/: test_markdown cannot run" in proc.stderr
    assert "No module named 'mistune_not_installed_xyz'" in proc.stderr
    assert "test_work cannot run" not in proc.stderr and "profopt: the spec has 1 problem(s)" in proc.stderr
    said = run_cli(["validate", "--no-import"], root)  # not run: said so
    assert said.returncode == 0 and "(their benchmarks not run: --no-import)" in said.stdout


def test_a_conftest_hook_of_an_unloaded_plugin_is_the_suites_error_in_a_few_lines(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, **PYTEST_SUITE,
                      "benchmarks/conftest.py": "def pytest_xyz_no_such_plugin_hook(config):\n    pass\n"}])
    proc = run_cli(["validate", "--suite", "pytest:benchmarks/"], root)
    assert proc.returncode == 2
    assert "INTERNALERROR" not in proc.stderr and "Traceback" not in proc.stderr
    assert ("benchmarks/conftest.py:1: pytest:benchmarks/: pytest stopped with an internal error while collecting: "
            "pluggy._manager.PluginValidationError: unknown hook 'pytest_xyz_no_such_plugin_hook'") in proc.stderr
    assert len(proc.stderr.splitlines()) <= 4, proc.stderr


def test_a_folder_whose_files_pytests_patterns_skip_says_which_patterns_and_files(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "pytest.ini": "[pytest]\npython_files = check_*.py\n",
                      "benchmarking/bench_plain.py": "def test_plain():\n    pass\n",
                      "benchmarking/check_more.py": "def test_more():\n    pass\n"}])
    proc = run_cli(["validate", "--suite", "pytest:benchmarking/"], root)
    assert proc.returncode == 2
    assert ("pytest:benchmarking/ collected no benchmarks — the project's python_files (check_*.py) skip "
            "benchmarking/bench_plain.py, which use neither the benchmark fixture nor the marker") in proc.stderr


def test_the_cache_key_reads_the_project_files_an_editable_install_with_extras_reads(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"pyproject.toml": PYPROJECT.format(deps=""), "setup.cfg": "[metadata]\n",
                      "requirements-dev.txt": "pytest\n", "src/mylib/__init__.py": LIB, "poetry.lock": "# lock\n"}])
    wanted = {"pyproject.toml", "setup.cfg", "requirements-dev.txt", "poetry.lock"}
    for setup in ["pip install -e '.[benchmarking]'", "pip install -e.[benchmarking]", "pip install '.[a,b]'",
                  "pip install --editable=.[x]", "pip install -e ."]:
        assert {p.name for p in read_files([setup], root)} == wanted, setup
    assert read_files(["pip install numpy"], root) == []


def test_the_pip_options_and_pins_the_runner_is_installed_with():
    setup = ["pip install -q --no-index --find-links ./wheels -e .", "pip install -i https://example.test/simple "
             "--extra-index-url=https://mirror.test/simple numpy --find-links ./wheels"]
    assert suite_runner.sources(setup) == ["--no-index", "--find-links", "./wheels", "-i", "https://example.test/simple",
                                           "--extra-index-url=https://mirror.test/simple"]
    pins = suite_runner.constraints({"pluggy": ("pluggy", "1.0.0"), "odd": ("odd", "not a version"),
                                     "mylib": ("mylib", "0.1.dev3+g1a2b3c")})
    assert pins == "mylib==0.1.dev3+g1a2b3c\npluggy==1.0.0\n"  # a legacy version would make pip refuse the file
    assert suite_runner.kinds_of([None]) == []
