"""Suites beyond the three Done-when cases: asv timeraw_/mem_/timeout, pyperf bench_command,
`--shard`, `--phase setup` then `--phase measure`, and `instrument: instructions` (valgrind).

Real repositories, the real CLI, real asv_runner / pyperf / pytest / valgrind; reduced rounds.
"""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import make_repo, run_cli
from test_suites import LIB, SLOW_LIB

ASV = {
    "benchmarks/__init__.py": "",
    "benchmarks/b.py": """\
        import mylib


        def timeraw_fresh():
            return "import mylib; mylib.work(2000)"  # asv: timed in a fresh interpreter


        def mem_list():
            return list(range(1000))


        def time_work():
            mylib.work(2000)
        """,
    "slow/__init__.py": "",
    "slow/s.py": """\
        import time


        def time_too_slow():
            time.sleep(2)  # twice its timeout


        time_too_slow.timeout = 1.0
        """,
}


def _run(root, *args: str, rc: int = 0) -> dict:
    proc = run_cli(["run", *args, "--out", "r.json"], root, timeout=600)
    assert proc.returncode == rc, proc.stderr[-3000:]
    return json.loads((root / "r.json").read_text())["benchmarks"]


@pytest.fixture(scope="module")
def asv_shards(tmp_path_factory) -> tuple[object, list[dict]]:
    """The asv suite run once, as its two shards (one round each): the shard test and the
    timeraw_/mem_ test read the same two runs."""
    root = tmp_path_factory.mktemp("asv") / "repo"
    make_repo(root, [{"mylib.py": LIB, **ASV}])
    return root, [_run(root, "--suite", "asv:benchmarks", "--rounds", "1", "--shard", s) for s in ("1/2", "2/2")]


@pytest.mark.slow
def test_asv_timeraw_mem_and_a_timeout_exceeded(asv_shards):
    root, parts = asv_shards
    benches = {**parts[0], **parts[1]}
    assert {n: b["status"] for n, b in benches.items()} == {"b.timeraw_fresh": "ok", "b.mem_list": "ok",
                                                             "b.time_work": "ok"}
    # timeraw_ pays a fresh interpreter per step (asv's separate-process timer): milliseconds, not µs
    assert benches["b.timeraw_fresh"]["summary"]["step_time_ms"] > 5 * benches["b.time_work"]["summary"]["step_time_ms"]
    sizes = benches["b.mem_list"]["quality"]["values"]["mem_bytes"]
    assert len(set(sizes)) == 1 and sizes[0] > 1000 * 8  # the returned object's size, the same every step
    slow = _run(root, "--suite", "asv:slow", "--rounds", "1", rc=3)["s.time_too_slow"]
    assert slow["status"] == "timeout" and "timeout_s=1" in slow["error"] and "Traceback" not in slow["error"]


@pytest.mark.slow
def test_pyperf_bench_command_is_one_run_of_the_command(tmp_path):
    root = tmp_path / "repo"
    script = ("import sys\n\nimport pyperf\n\nrunner = pyperf.Runner()\n"
              "runner.bench_command('python_pass', [sys.executable, '-c', 'pass'])\n")
    make_repo(root, [{"perf.py": script}])
    listed = run_cli(["validate", "--suite", "pyperf:perf.py"], root)
    assert listed.returncode == 0 and "python_pass (bench_command) at perf.py:6" in listed.stdout, listed.stdout
    b = _run(root, "--suite", "pyperf:perf.py", "--rounds", "2")["python_pass"]
    assert b["status"] == "ok" and b["summary"]["step_time_ms"] > 1.0  # a whole interpreter started per step


def test_suite_benchmarks_split_into_shards(asv_shards):
    parts = [set(p) for p in asv_shards[1]]
    assert parts[0] and parts[1] and not parts[0] & parts[1]
    assert parts[0] | parts[1] == {"b.timeraw_fresh", "b.mem_list", "b.time_work"}


SUITE = {
    "tests/bench/test_lib.py": """\
        import pytest

        import mylib


        def test_work(benchmark):
            benchmark(mylib.work, 3000)


        @pytest.mark.benchmark
        def test_join():
            mylib.join(200)
        """,
}
# instructions only: the test asserts no wall-time verdict, so no wall-time rounds are run
SPEC = ("version: 1\nhardware_label: test-cpu\n"
        "defaults: {profile: \"off\", quality_steps: 5}\n"
        "suites:\n  - {pytest: tests/bench/, instrument: instructions}\n")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_phase_setup_then_measure_with_instructions_regresses_the_slowed_one(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": SPEC, **SUITE}, {"mylib.py": SLOW_LIB}])
    work = tmp_path / "work"
    first = run_cli(["compare", "--base", "HEAD~1", "--phase", "setup", "--workdir", str(work)], root)
    assert first.returncode == 0, first.stderr[-2000:]
    assert not (root / ".profopt" / "comparison.json").exists()  # setup only: nothing measured yet
    second = run_cli(["compare", "--phase", "measure", "--workdir", str(work), "--fail-on", "none", "--measure", "all"],
                     root, timeout=900)  # test_join's verdict too, which the change does not reach
    assert second.returncode == 0, second.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    instr = {b["name"]: (b["metrics"].get("instructions") or {}).get("verdict") for b in c["benchmarks"]}
    assert instr == {"test_work": "regressed", "test_join": "unchanged"}, c["benchmarks"]


@pytest.mark.slow
def test_a_suite_items_env_holds_while_collecting_and_probing(tmp_path):
    """A src layout: the suite item's `env: {PYTHONPATH: src}` must reach pytest's collection (which
    imports the test module, hence the package), not only the measuring workers."""
    root = tmp_path / "repo"
    test = "import srclib\n\n\ndef test_work(benchmark):\n    benchmark(srclib.work, 100)\n"
    spec = ("version: 1\nhardware_label: test-cpu\ndefaults: {profile: \"off\", quality_steps: 5}\n"
            "suites:\n  - {pytest: bench/, env: {PYTHONPATH: src}}\n")
    make_repo(root, [{"src/srclib.py": LIB, "bench/test_s.py": test,
                      "profopt.yml": spec}])
    listed = run_cli(["validate"], root)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "test_work (fixture) at bench/test_s.py:4" in listed.stdout, listed.stdout
    b = _run(root, "--rounds", "1")["test_work"]
    assert b["status"] == "ok", b.get("error")
