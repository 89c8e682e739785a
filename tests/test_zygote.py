"""Workers forked from a per-side zygote: what it preloads, that forked workers serve rounds, and the failures.

Real processes throughout: a zygote is `python -m profopt_ci.measure.zygote_process`, its children serve
the lockstep protocol over real pipes.
"""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from conftest import make_repo, run_cli

from profopt_ci.measure import lockstep
from profopt_ci.measure.cpus import Placement
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.zygote import ZygotePool, ZygoteRecipe
from profopt_ci.specfile.load import parse_spec

STEP = """\
import json, os

def make_step(exit_at=0):
    calls = {"n": 0}
    def step():
        calls["n"] += 1
        if exit_at and calls["n"] == exit_at:
            os._exit(3)
        json.dumps({"x": list(range(200))})
    return step
"""


def _setup(tmp_path: Path, params: str = "{}"):
    (tmp_path / "zstep.py").write_text(STEP)
    spec = parse_spec(f"version: 1\nbenchmarks:\n  - {{name: z, callable: 'zstep:make_step', params: {params}, "
                      "round_ms: 100}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    return b, sides, envs


def test_forked_workers_serve_rounds_and_a_new_zygote_comes_every_few_rounds(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool, logged = ZygotePool(every=2), []
    placement = Placement(pool=[0])
    pids = []
    try:
        for r in range(4):
            zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, logged.append))
            assert zygotes is not None and set(zygotes) == {"base", "head"}
            pids.append(zygotes["base"].pid)
            out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=r,
                                     rng=random.Random(r), placement=placement, zygotes=zygotes))
            for side in ("base", "head"):
                assert out[side]["forked"] is True and out[side]["pairs"] >= lockstep.MIN_PAIRS
                assert out[side]["preload"] == []  # json is no heavy package: nothing to preload
    finally:
        pool.close()
    assert pids[0] == pids[1] != pids[2] == pids[3]  # two rounds per zygote
    assert logged == []


def test_the_next_generation_is_started_on_the_spare_cpus_when_a_generation_begins(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool, logged = ZygotePool(every=3), []
    live = []
    try:
        for _ in range(4):
            zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, logged.append), spare=[0])
            live.append(zygotes["base"].pid)
            # from a generation's first round on, its successor is already importing: a torch import
            # outlasts one round, so a start in the last round only kept the next round waiting
            assert "z" in pool.next and pool.next["z"]["base"].pid != zygotes["base"].pid
        successor = pool.next["z"]["base"]
    finally:
        pool.close()
    assert live[0] == live[1] == live[2] != live[3]
    assert logged == [] and successor.pid != live[3]


def test_where_no_cpu_is_spare_a_generation_serves_a_first_look_of_rounds(tmp_path, monkeypatch):
    """Its successor would import on the measured CPUs, between values: fewer generations (issue 27)."""
    from profopt_ci.measure import zygote as zy

    monkeypatch.delenv("PROFOPT_FORK_ROUNDS", raising=False)
    monkeypatch.setattr(zy, "FORK_ROUNDS_NO_SPARE", 3)  # the rule, at a size a test can run
    monkeypatch.setattr(zy, "FORK_ROUNDS", 2)
    b, sides, envs = _setup(tmp_path)
    served: dict[str, list[int]] = {"spare": [], "none": []}
    for how, spare in (("spare", [0]), ("none", None)):
        pool = ZygotePool()
        try:
            for _ in range(4):
                served[how].append(pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), spare=spare)["base"].pid)
        finally:
            pool.close()
    assert served["spare"][0] == served["spare"][1] != served["spare"][2] == served["spare"][3]
    assert served["none"][0] == served["none"][1] == served["none"][2] != served["none"][3]


def test_a_first_zygote_prepared_after_round_one_is_the_one_round_two_forks_from(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool = ZygotePool(every=3)
    try:
        pool.prepare(ZygoteRecipe("z", sides, envs, [], tmp_path, print), spare=[0])
        assert "z" not in pool.next  # nothing heavy to preload: no zygote to prepare
        pool.prepare(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), spare=[0])
        prepared = pool.next["z"]["base"]
        assert prepared.cpus == [0]
        zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), spare=[0])
        assert zygotes["base"] is prepared
    finally:
        pool.close()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_without_a_spare_cpu_the_next_zygote_imports_on_the_pool_and_is_held_while_values_are_timed(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool = ZygotePool(every=3)
    try:
        pool.prepare(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print), spare=None)
        prepared = pool.next["z"]["base"]
        assert prepared.cpus is None  # the whole pool: the measured CPUs too
        with pool.held_beside([0]):
            deadline = time.monotonic() + 5
            while _state(prepared.proc.pid) != "T" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _state(prepared.proc.pid) == "T"  # stopped while a round is timed there
        assert _state(prepared.proc.pid) != "T"
        pool.drop_next()  # the rounds are over: the generation nobody will fork from is closed
        assert pool.next == {} and prepared.proc.poll() is not None
    finally:
        pool.close()


def test_a_zygote_that_cannot_preload_turns_forking_off_for_that_benchmark(tmp_path):
    b, sides, envs = _setup(tmp_path)
    pool, logged = ZygotePool(), []
    assert pool.for_round(ZygoteRecipe("z", sides, envs, ["no_such_module_for_profopt"], tmp_path, logged.append)) is None
    assert "z" in pool.broken and len(logged) == 1 and "No module named" in logged[0]
    assert pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, logged.append)) is None  # said once, stays off
    assert len(logged) == 1


def test_a_forked_worker_that_exits_fails_the_round_with_its_exit_code(tmp_path):
    b, sides, envs = _setup(tmp_path, "{exit_at: 40}")
    pool = ZygotePool()
    try:
        zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print))
        with pytest.raises(lockstep.RoundFailed) as failed:
            lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=0,
                               rng=random.Random(0), placement=Placement(pool=[0]), zygotes=zygotes))
    finally:
        pool.close()
    assert "exited 3 mid-round" in failed.value.message


@pytest.mark.slow
def test_the_first_round_reports_what_the_zygote_should_preload(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "tstep.py").write_text("import torch\ndef make_step():\n    opt = torch.optim.SGD([torch.zeros(2, "
                                       "requires_grad=True)], lr=0.1)\n    return lambda: opt.zero_grad()\n")
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: t, callable: 'tstep:make_step', round_ms: 100}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=0, rng=random.Random(0),
                             placement=Placement(pool=[0])))
    preload = out["base"]["preload"]
    assert {"torch", "numpy"} <= set(preload) and "torch.optim" in preload and out["base"]["forked"] is False
    assert preload.index("torch") < preload.index("torch.optim")  # packages before their submodules
    # torch.optim's first optimizer imports torch._dynamo lazily: the zygote must preload it too
    assert any(m.startswith("torch._dynamo") for m in preload)


@pytest.mark.slow
def test_a_torch_compare_forks_its_workers_after_the_first_round(tmp_path):
    pytest.importorskip("torch")
    root = tmp_path / "repo"
    step = ("import torch\nfrom torch import nn\n\ndef make_step():\n    m = nn.Linear(64, 64)\n"
            "    opt = torch.optim.SGD(m.parameters(), lr=0.01)\n    x = torch.randn(32, 64)\n"
            "    def step():\n        opt.zero_grad()\n        m(x).sum().backward()\n        opt.step()\n"
            "    return step\n")
    spec = ("version: 1\nhardware_label: test-cpu\nenv: {OMP_NUM_THREADS: '1'}\n"
            "defaults: {profile: auto, seed: 2, round_ms: 100}\nbenchmarks:\n  - {name: lin, callable: 'lin:make_step'}\n")
    make_repo(root, [{"lin.py": step, "profopt.yml": spec}])
    proc = run_cli(["compare", "--base", "HEAD", "--head", "HEAD", "--rounds", "6", "--fail-on", "none"], root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    b = json.loads((root / ".profopt" / "comparison.json").read_text())["benchmarks"][0]
    forked = [s["forked"] for s in b["samples"]["base"]]
    assert forked == [False, True, True, True, True, True]
    assert b["profile"]["base"]["kind"] == "torch"  # the profiled run forked from the last zygote


SIDE_STEP = """\
import json
import os
import profopt_ci

def make_step():
    def step():
        json.dumps([1, 2, 3])
        profopt_ci.record(side="{side}")
    return step
"""


def test_both_sides_fork_from_one_zygote_each_in_its_own_checkout(tmp_path):
    roots = {}
    for side in ("base", "head"):
        roots[side] = tmp_path / side
        roots[side].mkdir()
        (roots[side] / "sstep.py").write_text(SIDE_STEP.format(side=side))
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: s, callable: 'sstep:make_step', round_ms: 100}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side(name, root) for name, root in roots.items()]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    pool = ZygotePool()
    try:
        zygotes = pool.for_round(ZygoteRecipe("s", sides, envs, ["json"], tmp_path, print))
        assert zygotes["base"] is zygotes["head"]  # one interpreter, one environment but for the checkout
        out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=0, rng=random.Random(0),
                                 placement=Placement(pool=[0]), zygotes=zygotes))
    finally:
        pool.close()
    assert out["base"]["quality"] == {"side": "base"} and out["head"]["quality"] == {"side": "head"}
    assert out["base"]["forked"] and out["head"]["forked"]


def test_a_relative_pythonpath_is_each_sides_own_under_one_zygote(tmp_path):
    """A src layout (`env: {PYTHONPATH: src}`): the zygote made `src` absolute in the first side's
    checkout; each child must import from its own checkout's `src/`, not from that one."""
    roots = {}
    for side in ("base", "head"):
        roots[side] = tmp_path / side
        (roots[side] / "src").mkdir(parents=True)
        (roots[side] / "src" / "sstep.py").write_text(SIDE_STEP.format(side=side))
    spec = parse_spec("version: 1\nenv: {PYTHONPATH: src}\n"
                      "benchmarks:\n  - {name: s, callable: 'sstep:make_step', round_ms: 100}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side(name, root) for name, root in roots.items()]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    pool = ZygotePool()
    try:
        for order in (sides, sides[::-1]):  # whichever side's checkout the zygote started in
            pool.close()
            zygotes = pool.for_round(ZygoteRecipe("s", order, envs, ["json"], tmp_path, print))
            assert zygotes["base"] is zygotes["head"]
            out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, order, tmp_path, round_index=0,
                                     rng=random.Random(0), placement=Placement(pool=[0]), zygotes=zygotes))
            assert out["base"]["quality"] == {"side": "base"} and out["head"]["quality"] == {"side": "head"}
    finally:
        pool.close()


def test_sides_whose_environments_differ_get_a_zygote_each(tmp_path):
    b, sides, envs = _setup(tmp_path)
    envs["head"] = {**envs["head"], "SOMETHING_ELSE": "1"}
    pool = ZygotePool()
    try:
        zygotes = pool.for_round(ZygoteRecipe("z", sides, envs, ["json"], tmp_path, print))
        assert zygotes["base"] is not zygotes["head"]
        out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=0,
                                 rng=random.Random(0), placement=Placement(pool=[0]), zygotes=zygotes))
        assert out["head"]["forked"]
    finally:
        pool.close()
    shadowed = tmp_path / "json.py"  # a checkout's own module of a preloaded name: never shared
    shadowed.write_text("")
    from profopt_ci.measure.zygote import shareable

    assert not shareable(sides, {s.name: envs["base"] for s in sides}, ["json"])


# ---- `profopt run` and pairing: rounds — a sample per process, forked after the first ----------------

NUMPY_STEP = """\
import numpy

def make_step(exit_at_build=False):
    import os
    if exit_at_build:
        os._exit(3)
    a = numpy.arange(2000.0)
    return lambda: float((a * a).sum())
"""


def test_profopt_run_forks_its_later_samples_from_a_zygote(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"npstep.py": NUMPY_STEP, "profopt.yml":
                      "version: 1\ndefaults: {rounds: 5, max_rounds: 5, warmup: 1, values: 2, min_time_ms: 5, "
                      "profile: \"off\"}\nbenchmarks:\n  - {name: np, callable: 'npstep:make_step'}\n"}])
    proc = run_cli(["run", "--out", "r.json"], root, env={"PROFOPT_FORK_ROUNDS": "2"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    entry = json.loads((root / "r.json").read_text())["benchmarks"]["np"]
    samples = entry["samples"]
    # round 1 in a fresh process reports numpy; rounds 2–5 fork from two zygote generations
    assert entry["status"] == "ok" and [s["forked"] for s in samples] == [False, True, True, True, True]
    assert all("preload" not in s and s["step_time_ms"] > 0 and s["peak_memory_mb"] > 0 for s in samples)


def _rounds_setup(tmp_path: Path, params: str):
    from profopt_ci.measure.rounds import RoundState
    from profopt_ci.specfile.plan import make_plan

    (tmp_path / "npstep.py").write_text(NUMPY_STEP)
    spec = parse_spec(f"version: 1\nbenchmarks:\n  - {{name: np, callable: 'npstep:make_step', params: {params}, "
                      "warmup: 1, values: 2, min_time_ms: 5}\n", "x.yml")
    state = RoundState()
    state.preload["np"] = ["numpy"]
    return make_plan(spec), spec.benchmarks[0], [Side("tree", tmp_path)], state


def test_a_forked_sample_that_exits_fails_the_benchmark_with_its_exit_code(tmp_path):
    from profopt_ci.measure.rounds import RoundContext, sampled_round

    plan, b, sides, state = _rounds_setup(tmp_path, "{exit_at_build: true}")  # preload known: round 2 forks
    logged = []
    try:
        sampled_round(RoundContext(plan, sides, state, tmp_path, random.Random(0), logged.append), b, 1, 3)
    finally:
        state.close()
    track = state.track("np", "tree")
    assert track.status == "failed" and "exited 3" in track.error and not track.samples, track.error
    assert (tmp_path / "zygote-np-both.json").exists() and not any("not forked" in x for x in logged)  # forked
    assert "np" not in state.zygotes.live  # the failed benchmark's zygote is closed


def test_a_zygote_that_cannot_fork_falls_back_to_a_fresh_sample_said_once(tmp_path):
    from profopt_ci.measure.rounds import RoundContext, sampled_round

    plan, b, sides, state = _rounds_setup(tmp_path, "{}")
    logged = []
    try:
        sampled_round(RoundContext(plan, sides, state, tmp_path, random.Random(0), logged.append), b, 1, 4)
        assert state.track("np", "tree").samples[-1]["forked"] is True
        state.zygotes.live["np"][0]["tree"].sock.close()  # the zygote is gone
        sampled_round(RoundContext(plan, sides, state, tmp_path, random.Random(0), logged.append), b, 2, 4)
        sampled_round(RoundContext(plan, sides, state, tmp_path, random.Random(0), logged.append), b, 3, 4)
    finally:
        state.close()
    track = state.track("np", "tree")
    assert track.status == "ok" and [s["forked"] for s in track.samples] == [True, False, False]
    said = [line for line in logged if "not forked" in line]
    assert len(said) == 1 and "np" in state.zygotes.broken, logged


SLEEPY_STEP = """\
import time

def make_step():
    return lambda: time.sleep(0.02)
"""


def _switches(pid: int, tid: int | None = None) -> int:
    path = f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status"
    with open(path) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))


def test_waiting_for_a_forked_sample_wakes_neither_the_parent_nor_the_zygote(tmp_path):
    """While a forked sample runs, profopt waits on its pidfd: neither it nor the zygote wakes until
    the sample exits (polled every few ms, both woke ~200 times a second on the measured CPUs)."""
    import threading

    from profopt_ci.measure.rounds import RoundContext, RoundState, sampled_round
    from profopt_ci.specfile.plan import make_plan

    (tmp_path / "sleepy.py").write_text(SLEEPY_STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: s, callable: 'sleepy:make_step', warmup: 1, values: 6, "
                      "min_time_ms: 200}\n", "x.yml")
    state = RoundState()
    state.preload["s"] = ["json"]
    me = threading.get_native_id()
    try:
        before = _switches(os.getpid(), me)
        start = time.monotonic()
        ctx = RoundContext(make_plan(spec), [Side("tree", tmp_path)], state, tmp_path, random.Random(0), lambda _: None)
        sampled_round(ctx, spec.benchmarks[0], 1, 3)
        took = time.monotonic() - start
        parent = _switches(os.getpid(), me) - before
        zygote = _switches(state.zygotes.live["s"][0]["tree"].proc.pid)
    finally:
        state.close()
    samples = state.track("s", "tree").samples
    assert samples and samples[-1]["forked"] is True and took > 1.4, (samples, took)
    # the fork, the answers and the zygote's own start-up: tens, not the ~300 a poll every 5 ms made
    assert parent < 60 and zygote < 60, (parent, zygote, took)
