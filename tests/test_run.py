"""`profopt run` end to end: real worker processes, real commands, failures kept apart."""
from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from conftest import run_cli, write_files

WORKLOADS = {
    "bench/__init__.py": "",
    "bench/work.py": """
        import numpy as np
        import profopt_ci

        def py_loop(n=2000):
            def step():
                with profopt_ci.phase("loop"):
                    total = sum(i * i for i in range(n))
                profopt_ci.record(loss=0.5, output_digest=str(total))
            return step

        def np_matmul(size=64):
            a = np.ones((size, size), dtype=np.float32)
            def step():
                return a @ a
            return step

        def broken(**_):
            raise RuntimeError("factory exploded on purpose")

        def hang():
            import time
            def step():
                time.sleep(60)
            return step
        """,
}

SPEC = """\
version: 1
hardware_label: test-cpu
env: {OMP_NUM_THREADS: "1"}
defaults: {warmup: 1, min_time_ms: 5, values: 3, rounds: 2, timeout_s: 60}
benchmarks:
  - name: py-loop
    callable: bench.work:py_loop
    params: {n: 2000}
    items_per_iteration: 2000
    unit: numbers
  - name: np-matmul
    callable: bench.work:np_matmul
    params: {size: 64}
  - name: shell
    command: "echo PROFOPT_METRIC checksum=42; echo PROFOPT_METRIC tag=abc"
    items_per_iteration: 1
"""


def results_schema():
    return json.loads(resources.files("profopt_ci").joinpath("schema/results.schema.json").read_text())


def test_run_measures_all_kinds_and_writes_valid_results(tmp_path):
    write_files(tmp_path, {**WORKLOADS, "profopt.yml": SPEC})
    proc = run_cli(["run", "--out", "out/results.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out/results.json").read_text())
    jsonschema.validate(data, results_schema())
    assert data["hardware_label"] == "test-cpu" and data["rounds"] == 2
    assert data["fingerprint"]["cpu_count"] >= 1 and data["fingerprint"]["python"]
    assert data["env"] == {"OMP_NUM_THREADS": "1"}
    py = data["benchmarks"]["py-loop"]
    assert py["status"] == "ok" and len(py["samples"]) == 2
    s0 = py["samples"][0]
    assert len(s0["values_ms"]) == 3 and s0["loops"] >= 1
    # each value took at least min_time_ms: loops × per-step time ≥ 5 ms
    assert all(v * s0["loops"] >= 5.0 * 0.95 for v in s0["values_ms"])
    assert s0["throughput"] == pytest.approx(2000 / (s0["step_time_ms"] / 1000))
    # the phase is a mean over all values, the step time their median: bound it by the slowest value
    assert 0 < s0["phases_ms"]["loop"] <= max(s0["values_ms"]) * 1.05
    assert s0["quality"]["loss"] == 0.5 and s0["quality"]["output_digest"] == str(sum(i * i for i in range(2000)))
    assert 0 < s0["peak_memory_mb"] < 1000
    assert data["benchmarks"]["np-matmul"]["summary"]["step_time_ms"] > 0
    shell = data["benchmarks"]["shell"]
    assert shell["kind"] == "command" and shell["status"] == "ok"
    assert shell["samples"][0]["quality"] == {"checksum": 42.0, "tag": "abc"}
    assert shell["samples"][0]["cpu_time_ms"] is not None
    # progress: one short line per benchmark and round
    lines = [ln for ln in proc.stderr.splitlines() if "round" in ln]
    assert len(lines) == 6 and "py-loop round 1/2:" in lines[0]


def test_failures_are_kept_apart_and_exit_3(tmp_path):
    spec = SPEC + """\
  - name: broken
    callable: bench.work:broken
  - name: exits-nonzero
    command: "echo doomed >&2; exit 7"
  - name: too-slow
    command: "sleep 30"
    timeout_s: 1
  - name: hangs
    callable: bench.work:hang
    timeout_s: 2
  - name: not-importable
    callable: bench.nope:make_step
"""
    write_files(tmp_path, {**WORKLOADS, "profopt.yml": spec})
    proc = run_cli(["run", "--rounds", "1"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr.split("results written")[-1]
    # each failure's cause is on the terminal, not only in the JSON
    assert "profopt:   RuntimeError: factory exploded on purpose" in proc.stderr
    assert "ModuleNotFoundError: No module named 'bench.nope'" in proc.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    jsonschema.validate(data, results_schema())
    b = data["benchmarks"]
    assert b["py-loop"]["status"] == "ok" and b["shell"]["status"] == "ok"
    assert b["broken"]["status"] == "failed" and "factory exploded on purpose" in b["broken"]["error"]
    assert b["exits-nonzero"]["status"] == "failed" and "exited 7" in b["exits-nonzero"]["error"]
    assert "doomed" in b["exits-nonzero"]["error"]
    assert b["too-slow"]["status"] == "timeout" and "timeout_s=1" in b["too-slow"]["error"]
    assert b["hangs"]["status"] == "timeout"
    assert b["not-importable"]["status"] == "failed" and "No module named 'bench.nope'" in b["not-importable"]["error"]
    assert b["broken"]["samples"] == []


def test_only_and_rounds_flags(tmp_path):
    write_files(tmp_path, {**WORKLOADS, "profopt.yml": SPEC})
    proc = run_cli(["run", "--only", "shell", "--rounds", "3", "--out", "r.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert list(data["benchmarks"]) == ["shell"] and len(data["benchmarks"]["shell"]["samples"]) == 3
    bad = run_cli(["run", "--only", "nope"], tmp_path)
    assert bad.returncode == 2 and "no such benchmark" in bad.stderr and "py-loop" in bad.stderr
    zero = run_cli(["run", "--rounds", "0"], tmp_path)
    assert zero.returncode == 2 and "expected at least 1" in zero.stderr


def test_setup_failure_writes_results_and_exits_3(tmp_path):
    write_files(tmp_path, {**WORKLOADS, "profopt.yml": "setup: 'echo setting up; exit 4'\n" + SPEC})
    proc = run_cli(["run"], tmp_path)
    assert proc.returncode == 3
    assert "setup failed on tree" in proc.stderr and "exited 4" in proc.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    assert all(b["status"] == "failed" for b in data["benchmarks"].values())


def test_commit_and_dirty_flag(repo_factory):
    root, shas = repo_factory([{**WORKLOADS, "profopt.yml": SPEC}])
    proc = run_cli(["run", "--only", "shell", "--rounds", "1", "--out", "../r.json"], root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((root.parent / "r.json").read_text())
    assert data["commit"] == shas[0] and data["dirty"] is False
    (root / "bench/work.py").write_text("# edited\n")
    proc = run_cli(["run", "--only", "shell", "--rounds", "1", "--out", "../r.json"], root)
    assert json.loads((root.parent / "r.json").read_text())["dirty"] is True


def test_command_peak_memory_is_its_own(tmp_path):
    """A command that allocates ~200 MB reports it; a tiny one reports far less (not profopt's RSS)."""
    spec = """\
version: 1
defaults: {warmup: 0, rounds: 1}
benchmarks:
  - name: big
    command: ["python3", "-c", "b = bytearray(200 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"]
  - name: small
    command: "true"
"""
    write_files(tmp_path, {"profopt.yml": spec})
    proc = run_cli(["run"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    b = json.loads((tmp_path / "results.json").read_text())["benchmarks"]
    big, small = b["big"]["summary"]["peak_memory_mb"], b["small"]["summary"]["peak_memory_mb"]
    assert big > 190
    assert small < 30
