"""Timed as it runs alone: the idle side is held while the other is timed, and other work on the set is measured.

The real workers are `profopt_ci.measure.worker --serve` processes; the step below keeps a thread
of its own busy between calls (hashing outside the GIL), as an OpenMP pool spins after a parallel
region: without the hold that thread takes CPU time from the side being timed.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, make_repo, run_cli

from profopt_ci.measure import live_worker, other_load
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.turns import Turns
from profopt_ci.specfile.load import parse_spec

SPINNING = """\
import hashlib
import threading
import time

_spinner = []


def make_step():
    if not _spinner:  # a pool thread that never sleeps: hashing 1 MB releases the GIL
        data = bytes(1 << 20)

        def spin():
            while True:
                hashlib.sha256(data).digest()

        _spinner.append(threading.Thread(target=spin, daemon=True))
        _spinner[0].start()

    def step():
        time.sleep(0.0005)
    return step
"""


def task_ticks(pid: int) -> int:
    """utime + stime of every thread of the process, from /proc/PID/task/*/stat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        fields = stat[stat.rfind(")") + 2:].split()
        total += int(fields[11]) + int(fields[12])
    return total


def task_states(pid: int) -> set[str]:
    return {(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in Path(f"/proc/{pid}/task").iterdir()}


class FakeWorker:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def value_ns(self) -> int:
        self.log.append(f"value {self.name}")
        return 1

    def hold(self) -> None:
        self.log.append(f"hold {self.name}")

    def release(self) -> None:
        self.log.append(f"release {self.name}")


def test_each_value_is_taken_with_every_other_side_held():
    """Turns, as a round takes its values (lockstep.callable_round): each pair in a drawn order."""
    log: list[str] = []
    workers = {n: FakeWorker(n, log) for n in ("base", "head")}
    turns, rng = Turns(workers), random.Random(4)
    for _ in range(20):
        order = sorted(workers)
        rng.shuffle(order)
        for n in order:
            turns.to(n)
            workers[n].value_ns()
    running = {"base", "head"}  # both start running (they build at once)
    values = 0
    for event in log:
        what, name = event.split()
        if what == "hold":
            assert name in running
            running.discard(name)
        elif what == "release":
            assert name not in running
            running.add(name)
        else:
            assert running == {name}, f"{name} timed while {running - {name}} ran"
            values += 1
    assert values == 40
    switches = sum(e.startswith("release") for e in log)
    assert switches < 40  # a side asked twice in a row (the end of a pair, the start of the next) is not switched


@pytest.fixture
def pair(tmp_path):
    (tmp_path / "spinning.py").write_text(SPINNING)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: s, callable: 'spinning:make_step', value_ms: 2}\n",
                      str(tmp_path / "profopt.yml"))
    bench = spec.benchmarks[0]
    workers = {}
    for name in ("base", "head"):
        side = Side(name, tmp_path)
        workers[name] = live_worker.WorkerProcess.start(side, bench, child_env(spec, bench, side), tmp_path, 0)
    try:
        for w in workers.values():
            w.answer("built")
        yield workers
    finally:
        for w in workers.values():
            w.close()


def test_the_idle_side_accrues_no_cpu_time_while_the_other_is_timed(pair):
    turns = Turns(pair)
    base, head = pair["base"], pair["head"]
    turns.to("base")
    loops = int(base.expect("loops", base.ask("c")))
    base.expect("ready", base.ask(f"w {loops}"))
    time.sleep(0.05)  # SIGSTOP is delivered at once, but /proc says 'stopped' only once every thread is
    assert task_states(head.proc.pid) == {"T"}
    before = task_ticks(head.proc.pid)
    start = time.monotonic()
    while time.monotonic() - start < 0.4:
        base.value_ns()
    assert task_ticks(head.proc.pid) == before  # held: not one tick while base was timed

    # the same stretch with head running: its spinning thread takes CPU time (the test can fail)
    turns.all()
    before = task_ticks(head.proc.pid)
    start = time.monotonic()
    while time.monotonic() - start < 0.4:
        base.value_ns()
    assert task_ticks(head.proc.pid) - before >= 5


def test_a_held_worker_is_still_killed_and_reaped(pair):
    Turns(pair).to("base")
    head = pair["head"]
    head.close()  # SIGKILL reaches a stopped process
    assert head.proc.returncode == -signal.SIGKILL


def test_busy_ticks_read_the_sets_lines_only():
    text = ("cpu  10 0 10 100 0 0 0 0 0 0\n"
            "cpu0 1 2 3 1000 5 6 7 8 0 0\n"
            "cpu1 100 0 50 1000 9 1 1 0 40 0\n")
    assert other_load.busy_ticks([0], text) == 1 + 2 + 3 + 6 + 7 + 8  # iowait and idle are not busy
    assert other_load.busy_ticks([0, 1], text) == 27 + 152  # guest (40) is inside user already
    assert other_load.busy_ticks([2], text) is None


def test_load_sums_windows_and_says_when_other_work_took_more_than_a_few_percent():
    load = other_load.Load()
    quiet = other_load.Window([0, 1])
    quiet.wall_s, quiet.busy_s, quiet.ours_s = 1.0, 1.5, 1.48
    load.add(quiet)
    assert load.record()["share"] == 0.01 and not load.noted
    busy = other_load.Window([0, 1])
    busy.wall_s, busy.busy_s, busy.ours_s = 1.0, 2.0, 1.0
    load.add(busy)
    assert load.record() == {"share": 0.255, "other_cpu_s": 1.02, "capacity_cpu_s": 4.0, "rounds": 2,
                             "noted": True}


def _spinner(cpu: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, [cpu]))


def test_a_window_sees_another_process_busy_on_the_set():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    spin = _spinner(cpu)
    try:
        time.sleep(0.1)
        with other_load.window([cpu], []) as w:
            time.sleep(0.6)
        assert w.busy_s is not None and w.busy_s - w.ours_s >= 0.4
        with other_load.window([cpu], [spin.pid]) as mine:  # its time is ours now: not other work
            time.sleep(0.6)
        # the spinner's time is subtracted (it shares the CPU with whatever else runs there now)
        assert mine.ours_s >= 0.1 and mine.busy_s - mine.ours_s <= mine.busy_s - 0.1
    finally:
        spin.kill()
        spin.wait()


ONE_CPU = """\
version: 1
hardware_label: test-cpu
cpuset: "{cpu}"
defaults: {{warmup: 1, value_ms: 1, round_ms: 150, rounds: 4, max_rounds: 4, seed: 3, profile: "off"}}
benchmarks:
  - {{name: busy, callable: "work:make_step", params: {{us: 300}}}}
"""


@pytest.mark.slow
def test_compare_says_when_other_work_shared_the_measured_cpus(tmp_path):
    from conftest import CPU_STEP

    cpu = sorted(range(os.cpu_count() or 1))[-1]
    root = tmp_path / "repo"
    make_repo(root, [{"work.py": CPU_STEP, "profopt.yml": ONE_CPU.format(cpu=cpu)}])
    spin = _spinner(cpu)
    try:
        res = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD",
                              "--head", "HEAD"], cwd=root, env=cli_env(), capture_output=True, text=True,
                             timeout=300, preexec_fn=lambda: os.sched_setaffinity(0, range(os.cpu_count() or 1)))
    finally:
        spin.kill()
        spin.wait()
    assert res.returncode in (0, 1), res.stderr
    import json

    entry = json.loads((root / ".profopt" / "comparison.json").read_text())["benchmarks"][0]
    load = entry["threads"]["other_load"]
    assert load["noted"] and load["share"] >= 0.2 and load["rounds"] == 4
    assert f"CPU {cpu} was" in res.stderr and "busy with other work" in res.stderr
    report = (root / ".profopt" / "report.md").read_text()
    assert "busy with other work" in report
    zh = run_cli(["report", str(root / ".profopt" / "comparison.json"), "--lang", "zh"], root)
    assert "其他" in zh.stdout
