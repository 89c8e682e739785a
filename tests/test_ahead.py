"""Workers started ahead (issue 28 §4): while a lockstep round measures, the next round's two workers
are forked on the CPUs it leaves spare and build there, so a round no longer pays their start and
build; a later round keeps the first round's loop count. Real zygotes, real workers, a real
compare of a pytest suite through the CLI."""
from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, make_repo

from profopt_ci.measure import lockstep
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.zygote import NotReady, ZygotePool, ZygoteRecipe
from profopt_ci.specfile.load import parse_spec

ALL = sorted(range(os.cpu_count() or 1))
TWO_CPUS = pytest.mark.skipif(len(ALL) < 2, reason="needs a spare CPU beside the measured one")

LIB = """\
def work(n):
    return sum(i * i for i in range(n))
"""
SUITE = """\
import mylib


def test_small(benchmark):
    benchmark(mylib.work, 300)


def test_mid(benchmark):
    benchmark(mylib.work, 1200)


def test_big(benchmark):
    benchmark(mylib.work, 3000)
"""
SPEC = ("version: 1\ndefaults: {{rounds: 6, max_rounds: 6, profile: 'off', seed: 5}}\n"
        "suites:\n  - {{pytest: tests/bench/}}\n")
STEP = """\
import json

def make_step():
    def step():
        json.dumps({"x": list(range(100))})
    return step
"""


def _compare(tmp_path: Path, env: dict[str, str] | None = None) -> dict:
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "tests/bench/test_work.py": SUITE, "profopt.yml": SPEC.format(),
                      ".gitignore": ".profopt/\n"},
                     {"README": "head\n"}])
    # on every CPU of the machine (this test worker is pinned to one): one is measured, one spare
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1",
                           "--head", "HEAD", "--fail-on", "none", "--measure", "all"], cwd=root, env=cli_env(env), capture_output=True,
                          text=True, timeout=300, preexec_fn=lambda: os.sched_setaffinity(0, ALL))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((root / ".profopt" / "comparison.json").read_text())


def _samples(c: dict) -> dict[str, list[dict]]:
    return {f"{b['name']}/{side}": b["samples"][side] for b in c["benchmarks"] for side in ("base", "head")}


@TWO_CPUS
def test_a_suites_later_rounds_run_on_workers_started_ahead_and_keep_one_loop_count(tmp_path):
    c = _compare(tmp_path)
    samples = _samples(c)
    assert len(samples) == 6
    later = [s for got in samples.values() for s in got if s["round"] > 0]
    for name, got in samples.items():
        assert [s["round"] for s in got] == list(range(6)), name
        assert got[0]["ahead"] is False, name  # a first round's fresh workers start in their own round
        assert len({s["loops"] for s in got}) == 1, (name, [s["loops"] for s in got])  # calibrated once
        assert all(s["forked"] for s in got[1:]), name
    # a round whose zygote is still importing starts its own workers; most do not wait for one
    share = sum(s["ahead"] for s in later) / len(later)
    assert share >= 0.6, [(s["round"], s["ahead"]) for s in later]
    for b in c["benchmarks"]:  # the same code on both sides: neither side's workers are favoured
        assert abs(b["metrics"]["step_time_ms"]["delta_pct"]) < 10, (b["name"], b["metrics"]["step_time_ms"])


@TWO_CPUS
def test_profopt_start_ahead_0_starts_every_rounds_own_workers(tmp_path):
    c = _compare(tmp_path, env={"PROFOPT_START_AHEAD": "0"})
    assert not any(s["ahead"] for got in _samples(c).values() for s in got)


@contextlib.contextmanager
def _wide():
    """This test process on every CPU while the block runs (xdist pins each test worker to one)."""
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL)
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


def _setup(tmp_path: Path):
    (tmp_path / "zstep.py").write_text(STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: z, callable: 'zstep:make_step', round_ms: 60}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    return b, sides, {s.name: child_env(spec, b, s) for s in sides}


@TWO_CPUS
def test_a_worker_started_ahead_is_on_the_spare_cpus_before_its_pid_is_known(tmp_path):
    from profopt_ci.measure.cpus import Placement

    b, sides, envs = _setup(tmp_path)
    pool = ZygotePool(every=4)
    spare = [ALL[0]]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_wide())
        stack.callback(pool.close)
        zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print))
        rnd = lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=1, rng=random.Random(0),
                             placement=Placement(pool=ALL), zygotes=zygotes)
        workers = lockstep.start_workers(rnd, cpus=spare)
        stack.callback(lockstep.close_workers, workers.values())
        for w in workers.values():
            assert w.forked
            assert os.sched_getaffinity(w.proc.pid) == set(spare)  # the zygote pins it before it answers the fork
            assert "preload" in w.answer("built")
            assert os.sched_getaffinity(w.proc.pid) == set(spare)  # what it built ran there too
        assert os.sched_getaffinity(zygotes["base"].proc.pid) == set(ALL)  # the zygote itself is not moved


def test_starting_ahead_never_waits_for_a_zygote_nor_forks_from_a_held_one(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool = ZygotePool(every=2)
    try:
        with pytest.raises(NotReady):  # nothing prepared yet: it would have to start one and wait
            pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), wait=False)
        pool.prepare(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), None)
        coming = pool.next["z"]["base"]
        deadline = time.monotonic() + 60
        while not coming.ready_now() and time.monotonic() < deadline:
            time.sleep(0.01)
        with pool.held_beside(None):  # a round measures: the next generation is held (SIGSTOP) ...
            assert coming.stopped
            with pytest.raises(NotReady):  # ... and a fork from it would never be answered
                pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), wait=False)
        assert not coming.stopped
        got = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), wait=False)
        assert got is not None and got["base"] is coming
        # the generation's second round: no new one due, so it serves without waiting
        assert pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), wait=False) is got
        # a third round would replace the generation: never while its own workers run (turnover False)
        with pytest.raises(NotReady):
            pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), wait=False, turnover=False)
        assert pool.live["z"][0] is got
    finally:
        pool.close()


def test_which_rounds_may_start_ahead(tmp_path):
    from profopt_ci.measure.cpus import Placement
    from profopt_ci.measure.rounds import RoundState, Track, may_start_ahead

    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: z, callable: 'zstep:make_step'}\n"
                      "  - {name: r, callable: 'zstep:make_step', pairing: rounds}\n"
                      "  - {name: c, command: 'true'}\n", "x.yml")
    z, r, c = spec.benchmarks
    here = Placement(pool=[0, 1])
    here.cpus = [1]

    def state(**kw) -> RoundState:
        s = RoundState(start_ahead=kw.get("on", True))
        for name in ("z", "r", "c"):
            s.placements[name] = Placement(pool=[0, 1])
            s.placements[name].cpus = kw.get("cpus", [1])
            s.preload[name] = kw.get("preload", ["pytest"])
            s.tracks[(name, "base")] = Track(samples=[{"round": 0}])
        return s

    assert may_start_ahead(state(), z, 1, here)
    assert not may_start_ahead(state(), z, 0, here)  # a first round: fresh interpreters, not forked
    assert not may_start_ahead(state(on=False), z, 1, here)  # PROFOPT_START_AHEAD=0
    assert not may_start_ahead(state(cpus=[0]), z, 1, here)  # another CPU set: its spare is not this one's
    assert not may_start_ahead(state(preload=[]), z, 1, here)  # no zygote to fork from, only fresh processes
    assert not may_start_ahead(state(), r, 1, here) and not may_start_ahead(state(), c, 1, here)
    whole = Placement(pool=[0, 1])
    whole.cpus = [0, 1]  # a 2-thread step takes both: nothing is spare
    assert not may_start_ahead(state(cpus=[0, 1]), z, 1, whole)
    busy = state()
    busy.ahead["z"] = object()  # started already
    assert not may_start_ahead(busy, z, 1, here)



# A stand-in for torch with CUDA initialized (no GPU here): the worker's own device detection
# (harness.cuda_device.detect_device) and its sync and peak calls take the path a real GPU step takes.
FAKE_TORCH = """\
class _Cuda:
    def is_available(self):
        return True

    def is_initialized(self):
        return True

    def synchronize(self):
        pass

    def reset_peak_memory_stats(self):
        pass

    def max_memory_allocated(self):
        return 64 << 20

    def max_memory_reserved(self):
        return 96 << 20


cuda = _Cuda()
"""
GPU_STEP = """\
import json

def make_step(gpu=False):
    if gpu:
        import torch  # the stand-in: CUDA "initialized" by the factory, as a real model's .cuda() does
    def step():
        json.dumps({"x": list(range(100))})
    return step
"""


@pytest.mark.parametrize("gpu", [False, True])
def test_no_round_starts_ahead_beside_a_round_that_times_a_gpu(tmp_path, gpu):
    from profopt_ci.measure.cpus import Placement

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (tmp_path / "gstep.py").write_text(GPU_STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: g, callable: 'gstep:make_step', "
                      f"params: {{gpu: {str(gpu).lower()}}}, round_ms: 40}}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    placement = Placement(pool=ALL)
    placement.cpus = ALL[-1:]
    called = []
    with _wide():
        out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=1,
                                 rng=random.Random(0), placement=placement, ahead=lambda: called.append(1)))
    assert (out["base"]["cuda_max_allocated_mb"] == 64.0) is gpu  # the round did time "the device"
    assert called == ([] if gpu else [1])
