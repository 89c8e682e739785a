"""One worker interface: a one-shot job worker, fresh or forked from a zygote, is started, asked, held,
released and closed as a live lockstep worker is.

Real processes throughout: `python -m profopt_ci.measure.worker JOB OUT` and a real zygote's children.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from profopt_ci.measure.children import BenchmarkFailed
from profopt_ci.measure.forked import ForkFrom
from profopt_ci.measure.job_worker import JobWorker, Launch, Worker, run_job
from profopt_ci.measure.live_worker import WorkerProcess
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.zygote import Zygote
from profopt_ci.specfile.load import parse_spec

STEP = """\
import time

def make_step(log, stall=0):
    def step():
        with open(log, "a") as fh:
            fh.write("x")
        time.sleep(0.002)
        if stall:
            time.sleep(stall)
    return step
"""


def _job(log: Path, stall: float = 0) -> dict:
    return {"callable": "jstep:make_step", "params": {"log": str(log), "stall": stall}, "warmup": 0, "values": 5,
            "min_time_ms": 40.0, "mode": "measure", "packages": False}


@pytest.fixture
def where(tmp_path):
    (tmp_path / "jstep.py").write_text(STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: j, callable: 'jstep:make_step'}\n", "x.yml")
    side = Side("head", tmp_path)
    env = child_env(spec, spec.benchmarks[0], side)
    zygote = Zygote(sys.executable, tmp_path, env, ["json"], tmp_path, "j-head")
    zygote.ready(60.0)
    yield side, env, zygote
    zygote.close()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_for(check, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_a_job_worker_held_takes_no_step_and_answers_once_released(where, tmp_path, forked):
    side, env, zygote = where
    log = tmp_path / f"steps-{forked}.txt"
    worker = JobWorker.start(_job(log), Launch(side, env, tmp_path, f"j-{forked}", 60.0),
                             ForkFrom(zygote) if forked else None)
    try:
        assert isinstance(worker, Worker)
        _wait_for(lambda: log.exists() and log.stat().st_size > 0)  # it is stepping
        worker.hold()
        _wait_for(lambda: _state(worker.pid) == "T")
        held_at = log.stat().st_size
        time.sleep(0.3)
        assert log.stat().st_size == held_at  # held: not one step more
        worker.release()
        res, answer = worker.ask()
    finally:
        worker.close()
    assert res.returncode == 0 and not res.timed_out
    assert answer is not None and len(answer["values_ms"]) == 5 and all(v > 0 for v in answer["values_ms"])
    assert log.stat().st_size > held_at
    assert (res.wall_ns > 0) is (not forked)  # a fresh one is profopt's own child, with its own rusage


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_a_job_worker_past_its_timeout_is_killed_and_answers_nothing(where, tmp_path, forked):
    side, env, zygote = where
    start = time.monotonic()
    res, answer = run_job(_job(tmp_path / "slow.txt", stall=60), Launch(side, env, tmp_path, f"s-{forked}", 1.0),
                          ForkFrom(zygote) if forked else None)
    assert res.timed_out and answer is None
    assert time.monotonic() - start < 20


def test_a_job_worker_closed_unasked_leaves_no_process(where, tmp_path):
    side, env, _ = where
    worker = JobWorker.start(_job(tmp_path / "c.txt", stall=60), Launch(side, env, tmp_path, "c", 60.0))
    pid = worker.pid
    worker.close()
    assert not Path(f"/proc/{pid}").exists()


def test_a_job_worker_that_cannot_start_says_so(tmp_path):
    side = Side("head", tmp_path, python=str(tmp_path / "no-python"))
    with pytest.raises(BenchmarkFailed, match="cannot start"):
        JobWorker.start(_job(tmp_path / "n.txt"), Launch(side, {}, tmp_path, "n", 5.0))


def test_the_live_worker_has_the_same_interface():
    for verb in ("start", "ask", "hold", "release", "close"):
        assert callable(getattr(WorkerProcess, verb)) and callable(getattr(JobWorker, verb))
