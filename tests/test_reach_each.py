"""A pytest file's reach records from one collection: each test forked after it records what a
worker of that test alone records (measure/reach_worker.reach_each_job), and no other test's code.

Real worker processes on a real test file with a conftest fixture, a module-level import, a data
file one test reads, and a test that fails before its benchmark call.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, make_repo, run_cli, write_files

from profopt_ci.harness.suite_targets import target

FILES = {
    "lib.py": """\
        def alpha(n):
            return sum(range(n))


        def beta(values):
            return sorted(values)


        def gamma(path):
            with open(path) as fh:
                return len(fh.read())
        """,
    "data.txt": "some words\n",
    "suite/conftest.py": """\
        import pytest


        @pytest.fixture
        def numbers():
            return list(range(50, 0, -1))
        """,
    "suite/test_many.py": """\
        import lib


        def test_alpha(benchmark):
            benchmark(lib.alpha, 100)


        def test_beta(benchmark, numbers):
            benchmark(lib.beta, numbers)


        def test_gamma(benchmark):
            benchmark(lib.gamma, "data.txt")


        def test_broken(benchmark):
            raise ValueError("not today")
        """,
}
TESTS = ["test_alpha", "test_beta", "test_gamma", "test_broken"]
def _in_repo(record: dict, root: Path) -> dict:
    """The record's parts under the checkout (the venv's are pytest's own, which runs a session of
    several node ids a little differently from one of one)."""
    top = str(root.resolve())

    def mine(paths):
        return sorted(p for p in paths if p.startswith(top))
    return {"code": {p: c for p, c in record["code"].items() if p.startswith(top)},
            **{k: mine(record[k]) for k in ("modules", "opened", "listed")}, "unknown": record["unknown"]}


def _job(root: Path, **what) -> dict:
    return {"mode": "reach", "params": {}, "seed": 0,
            "reach": {"repo": str(root), "venv": sys.prefix, "required": 0, "at_least": 2, "min_ms": 5.0,
                      "max_ms": 200.0}, **what}


def _worker(root: Path, job: dict, name: str) -> dict:
    path, out = root.parent / f"{name}.job.json", root.parent / f"{name}.out.json"
    path.write_text(json.dumps(job))
    env = cli_env({"PYTHONPATH": f"{root}:{cli_env()['PYTHONPATH']}"})
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.measure.worker", str(path), str(out)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def _lib_units(record: dict, root: Path) -> set[str]:
    return {name for _, name in record["code"].get(str((root / "lib.py").resolve()), [])}


def test_each_test_forked_after_one_collection_records_what_it_alone_records(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    write_files(root, FILES)
    targets = [target("pytest", f"suite/test_many.py::{t}") for t in TESTS]
    grouped = _worker(root, _job(root, callables=targets, callable=targets[0]), "grouped")["records"]
    assert set(grouped) == set(targets)
    for t, name in zip(targets, TESTS, strict=True):
        alone = _worker(root, _job(root, callable=t), name)
        got = grouped[t]
        assert _in_repo(got, root) == _in_repo(alone, root), name
    alpha, beta, gamma, broken = (grouped[t] for t in targets)
    # each test's own function, not its neighbours' (the collection imported lib, ran none of them)
    assert _lib_units(alpha, root) >= {"alpha", "<module>"} and not _lib_units(alpha, root) & {"beta", "gamma"}
    assert _lib_units(beta, root) >= {"beta"} and not _lib_units(beta, root) & {"alpha", "gamma"}
    conftest = str((root / "suite" / "conftest.py").resolve())
    assert "numbers" in {n for _, n in beta["code"][conftest]}
    assert "numbers" not in {n for _, n in alpha["code"].get(conftest, [])}
    data = str((root / "data.txt").resolve())
    assert data in gamma["opened"] and data not in alpha["opened"] and data not in beta["opened"]
    # profopt's own fork is not the step's: only the test that failed is unknown, with its cause
    assert alpha["unknown"] is None and alpha["steps"] >= 2
    assert broken["unknown"] == "failed" and "not today" in broken["failed"]


ITEM_ENV_SPEC = """\
version: 1
env: {PYTHONPATH: vendor}
defaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, profile: "off", threshold: 50%}
suites:
  - {pytest: suite, env: {PYTHONPATH: src}}
"""
LIB = "def f(n):\n    return sum(range(n))\n\n\ndef g(n):\n    return n * 2\n"


@pytest.mark.slow
def test_a_suite_items_env_is_the_record_processes_env_so_its_own_package_is_recorded(tmp_path):
    """The item's `PYTHONPATH: src` puts the checkout's package first, and the spec's `env` a stale
    copy of it (vendor/, as an installed copy would be): the record runs what the timed rounds run,
    the checkout's, so a change to src/mylib.f reaches the benchmark that calls it and no other. A
    zygote started without the item's env recorded vendor's copy, which no PR changes."""
    root = tmp_path / "repo"
    make_repo(root, [{"profopt.yml": ITEM_ENV_SPEC, "vendor/mylib.py": LIB, "src/mylib.py": LIB,
                      "suite/test_lib.py": "import mylib\n\n\ndef test_f(benchmark):\n    benchmark(mylib.f, 200)\n\n\n"
                                           "def test_g(benchmark):\n    benchmark(mylib.g, 200)\n\n\n"
                                           "def test_h(benchmark):\n    benchmark(sum, [1, 2])\n"},
                     {"src/mylib.py": LIB.replace("sum(range(n))", "sum(list(range(n)))")}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--out", "c.json"], root, timeout=600,
                   env={"PROFOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads((root / "c.json").read_text())
    reach = {b["name"]: b["reach"] for b in c["benchmarks"]}
    assert {n for n, r in reach.items() if r["measured"]} == {"test_f"}, {n: r["why"]["text"] for n, r in reach.items()}
    assert reach["test_f"]["changed"] == ["src/mylib.py:f"], reach["test_f"]
