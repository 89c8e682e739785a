"""The step's own threads: probed before pinning, the CPU set sized to them, a warning when it cannot be.

The real compares widen their own CPU affinity to the whole machine (the test process is pinned to
one CPU by conftest.py), so the pool is what a user's profopt would see.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import cli_env, make_repo

from profopt_ci.harness import threads
from profopt_ci.measure import cpus
from profopt_ci.measure.cpus import Placement
from profopt_ci.words.i18n import say

ALL = sorted(range(os.cpu_count() or 1))


def run_wide(args: list[str], cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI on every CPU of the machine, not just this test worker's one."""
    return subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=lambda: os.sched_setaffinity(0, ALL))


# ---- the placement, from literal probes -----------------------------------------------------------


def test_the_set_is_the_most_either_side_needs_from_the_end_of_the_pool():
    p = Placement(pool=[0, 1, 2, 3])
    assert p.settle({"base": {"need": 2, "busy": 2}, "head": {"need": 1, "busy": 1}}, "b") == [2, 3]
    assert p.need == 2 and p.warning is None
    assert p.record()["cpuset"] == "2-3" and p.record()["narrow"] is False


def test_fewer_cpus_than_the_step_needs_pins_what_there_is_and_says_both_numbers():
    p = Placement(pool=[1])
    assert p.settle({"base": {"need": 2, "busy": 2, "declared": {"torch": 2}}, "head": {"need": 2, "busy": 2}},
                    "train") == [1]
    assert p.warning is not None and "uses 2 CPUs" in p.warning and "profopt may use 1 (1)" in p.warning
    assert "torch 2" in p.warning and p.record()["narrow"] is True


def test_an_explicit_cpuset_wins_and_is_warned_about_when_narrower():
    p = Placement(pool=[0, 1, 2, 3], requested=[3])
    assert p.settle({"base": {"need": 2}, "head": {"need": 2}}, "b") == [3]
    assert "the cpuset asked for 1 (3)" in p.warning
    wide = Placement(pool=[0, 1, 2, 3], requested=[0, 1])
    assert wide.settle({"base": {"need": 1}, "head": {"need": 1}}) == [0, 1] and wide.warning is None


def test_the_thread_variables_are_a_floor():
    p = Placement(pool=[0, 1, 2, 3], floor=3)
    assert p.settle({"base": {"need": 1}, "head": {"need": 1}}) == [1, 2, 3]


# ---- the probe, in this process ------------------------------------------------------------------


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def test_observe_counts_threads_that_do_work_and_not_idle_ones():
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL)  # this test process was pinned to one CPU; the probe needs the pool
    try:
        idle = threading.Event()
        sleeper = threading.Thread(target=idle.wait, daemon=True)
        sleeper.start()
        one = threads.observe(lambda: _spin(0.01), budget_ms=100)
        assert one["busy"] == 1

        import hashlib

        data = os.urandom(8 << 20)

        def two_threads():  # hashlib releases the GIL on large buffers: two threads really run
            ts = [threading.Thread(target=hashlib.sha256, args=(data,)) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        if len(ALL) >= 2:
            # another test process may hold one of the two CPUs for a whole probe (CI runs two);
            # a probe that could not count two threads would fail all three tries
            tries = []
            while len(tries) < 3 and not (tries and tries[-1]["busy"] >= 2 and tries[-1]["parallelism"] > 1.0):
                tries.append(threads.observe(two_threads, budget_ms=200))
            assert tries[-1]["busy"] >= 2 and tries[-1]["parallelism"] > 1.0, tries
        idle.set()
    finally:
        os.sched_setaffinity(0, mine)


def test_cpu_time_beyond_the_span_means_more_threads_ran_at_once():
    ms = 1_000_000
    assert threads._at_least(0, 10 * ms, 2.5 * ms) == 0
    assert threads._at_least(9 * ms, 10 * ms, 2.5 * ms) == 1  # one thread, most of the span
    assert threads._at_least(13 * ms, 10 * ms, 2.5 * ms) == 2  # 13 ms of CPU in 10: two at least
    assert threads._at_least(11 * ms, 10 * ms, 2.5 * ms) == 1  # within a clock's skew of one
    assert threads._at_least(31 * ms, 10 * ms, 2.5 * ms) == 3


def test_a_probe_crowded_by_other_work_is_taken_again_and_says_how_crowded():
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=lambda: os.sched_setaffinity(0, ALL)) for _ in ALL]
    try:
        time.sleep(0.2)
        crowded = threads.probe(lambda: _spin(0.005), budget_ms=100)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        os.sched_setaffinity(0, mine)
    # one busy process per CPU takes about half of what the spinning step could have had
    assert crowded["crowded"] > threads.CROWDED and crowded["busy"] == 1, crowded
    assert crowded["tries"] == (threads.PROBE_TRIES if len(ALL) > 1 else 1), crowded


def test_declared_reads_torch_the_variables_and_threadpoolctl_pools(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    import threadpoolctl

    said = threads.declared(threadpoolctl.__file__)
    assert said["torch"] == torch.get_num_threads() and said["env"] == 3
    assert any(k not in ("torch", "env") for k in said), said  # torch's own OpenMP pool, at least


def test_pin_all_moves_every_thread_of_the_process():
    code = (
        "import os, threading, time\n"
        "from profopt_ci.harness import threads\n"
        "ev = threading.Event()\n"
        "ts = [threading.Thread(target=ev.wait) for _ in range(3)]\n"
        "[t.start() for t in ts]\n"
        f"moved = threads.pin_all([{ALL[-1]}])\n"
        "allowed = {open(f'/proc/self/task/{t}/status').read().split('Cpus_allowed_list:')[1].split()[0]\n"
        "           for t in os.listdir('/proc/self/task')}\n"
        "ev.set(); print(moved, sorted(allowed))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: os.sched_setaffinity(0, ALL)).stdout.split(maxsplit=1)
    assert int(out[0]) == 4 and out[1].strip() == repr([str(ALL[-1])])


# ---- real compares -------------------------------------------------------------------------------

TWO_THREADS = """\
import hashlib, os, threading

def make_step(mb=4):
    data = os.urandom(mb << 20)
    def step():
        ts = [threading.Thread(target=hashlib.sha256, args=(data,)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return step
"""

TORCH_TWO = """\
import torch

def make_step():
    torch.set_num_threads(2)
    a = torch.randn(384, 384)
    def step():
        return (a @ a).sum()
    return step
"""


def _spec(callable_: str, env: str = "") -> str:
    return (f"version: 1\nhardware_label: test-cpu\n{env}defaults: {{profile: 'off', seed: 1, round_ms: 100}}\n"
            f"benchmarks:\n  - {{name: par, callable: '{callable_}'}}\n")


def _check_placement(root, proc) -> dict:
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    b = c["benchmarks"][0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = min(2, len(ALL))
    assert b["threads"]["need"] >= 2, b["threads"]
    assert len(cpus.parse_cpuset(b["cpuset"])) == want and b["cpuset"] == b["threads"]["cpuset"]
    for side in ("base", "head"):
        assert b["threads"]["sides"][side]["need"] >= 2
    warned = [say("en", n) for n in c["notes"] if "the step uses" in say("en", n)]
    if len(ALL) < 2:
        assert warned and "profopt may use 1" in warned[0] and "warning: par: the step uses" in proc.stderr
    else:
        assert not warned
    return b


@pytest.mark.slow
def test_a_step_hashing_in_two_threads_gets_two_cpus(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"par.py": TWO_THREADS, "profopt.yml": _spec("par:make_step")}])
    proc = run_wide(["compare", "--base", "HEAD", "--head", "HEAD", "--rounds", "2", "--fail-on", "none"], root)
    b = _check_placement(root, proc)
    assert b["threads"]["sides"]["base"]["busy"] >= 2


@pytest.mark.slow
def test_a_torch_step_that_sets_two_threads_gets_two_cpus(tmp_path):
    pytest.importorskip("torch")
    root = tmp_path / "repo"
    make_repo(root, [{"tt.py": TORCH_TWO, "profopt.yml": _spec("tt:make_step")}])
    proc = run_wide(["compare", "--base", "HEAD", "--head", "HEAD", "--rounds", "2", "--fail-on", "none"], root)
    b = _check_placement(root, proc)
    assert b["threads"]["sides"]["head"]["declared"]["torch"] == 2


@pytest.mark.slow
def test_an_explicit_cpuset_narrower_than_the_step_is_kept_and_warned_about(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"par.py": TWO_THREADS, "profopt.yml": _spec("par:make_step")}])
    proc = run_wide(["compare", "--base", "HEAD", "--head", "HEAD", "--rounds", "2", "--fail-on", "none",
                     "--cpuset", str(ALL[0])], root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    b = c["benchmarks"][0]
    assert b["cpuset"] == str(ALL[0]) and b["threads"]["requested"] == str(ALL[0]) and b["threads"]["narrow"]
    assert any("the cpuset asked for 1" in say("en", n) for n in c["notes"])
