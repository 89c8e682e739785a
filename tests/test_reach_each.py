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

from conftest import cli_env, write_files

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
