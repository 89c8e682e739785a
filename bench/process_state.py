"""Where does a 2-thread torch step lose time when lockstep times it? Three checks of the process
structure against a process running the step alone (issue 27: compare's head time read +18% to +38%
above the one-process truth in the runs of 2026-12-05).

    fork         a process forked from a parent that imported torch (a zygote's child) against a
                 fresh interpreter: per-process median step time, interleaved (--processes each)
    alternation  two live processes on the same CPUs, asked for one value at a time (a lead step,
                 then one timed step), as lockstep does: with the idle one held (SIGSTOP/SIGCONT of
                 its process group), and with it not held; against the same process timing blocks
                 of 7 steps while the other is held
    age          one fresh process timing 15 steps at 0.05, 0.2, 0.5, 1, 2, 4 and 8 s of its life
                 (allocator growth, transparent huge pages, the OpenMP pool settling)
    faults       two live processes of the step, timed in alternate windows of 30 steps with the
                 other held: each window's ms and minor page faults a step (getrusage), per process
    twomodels    the issue's truth (two models in one interpreter, blocks alternated) against one
                 model alone in its process, interleaved: median ms and page faults a step

Each prints medians in ms; the step is bench/alone.py's torch-2t (an MLP training step,
torch.set_num_threads(2)).

    python bench/process_state.py                       # all three
    python bench/process_state.py --checks age --processes 5
    python bench/process_state.py --checks faults twomodels --processes 6
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time

STEP = r'''
import os, sys, time, statistics
import torch
torch.set_num_threads(2)

def make_step():
    torch.manual_seed(0)
    width, batch = 512, 128
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))
    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step

def median_ms(step, n=150, warm_s=0.3):
    end = time.perf_counter() + warm_s
    while time.perf_counter() < end:
        step()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); step(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1000
'''

SERVE = STEP + r'''
step = make_step()
for _ in range(30):
    step()
pc = time.perf_counter_ns
out = os.fdopen(1, "w", buffering=1)
for line in sys.stdin:
    op = line.strip()
    if op == "v":  # a lockstep value: one untimed lead step, then one timed step
        step(); t = pc(); step(); out.write(f"{pc() - t}\n")
    elif op == "b":  # a block of 7 steps, per step
        t = pc()
        for _ in range(7):
            step()
        out.write(f"{(pc() - t) // 7}\n")
'''

AGE = STEP + r'''
step = make_step()
t0, got = time.perf_counter(), []
for mark in (0.05, 0.2, 0.5, 1, 2, 4, 8):
    while time.perf_counter() - t0 < mark:
        step()
    got.append(median_ms(step, 15, 0))
print(" ".join("%.2f" % v for v in got))
'''

WINDOWS = STEP + r'''
import resource
step = make_step()
for _ in range(20):
    step()
out = os.fdopen(1, "w", buffering=1)
for line in sys.stdin:  # one window a line: "MS FAULTS" per step
    f0, ts = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
    for _ in range(30):
        t = time.perf_counter(); step(); ts.append(time.perf_counter() - t)
    out.write(f"{statistics.median(ts) * 1000} {(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 30}\n")
'''

MODELS = STEP + r'''
import resource
steps = [make_step() for _ in range(int(sys.argv[1]))]
for s in steps:
    median_ms(s, 5)
per = []
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for r in range(60):  # blocks of 7 steps, the models in turn (alone.py's truth)
    for s in steps:
        t = time.perf_counter()
        for _ in range(7):
            s()
        per.append((time.perf_counter() - t) / 7 * 1000)
print(statistics.median(per), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / (60 * 7 * len(steps)))
'''


def show(name: str, values: list[float]) -> None:
    print(f"  {name:<34} median {statistics.median(values):.3f} ms  ({' '.join(f'{v:.2f}' for v in sorted(values))})")


def fork_check(processes: int) -> None:
    ns: dict = {}
    exec(STEP, ns)  # this process imported torch: a zygote

    def fresh() -> float:
        code = STEP + "\nprint(median_ms(make_step()))"
        return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)

    def forked() -> float:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, str(ns["median_ms"](ns["make_step"]())).encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 100):
            data += chunk
        os.waitpid(pid, 0)
        return float(data)

    got: dict[str, list[float]] = {"fresh interpreter": [], "forked from a torch parent": []}
    order = list(got) * processes
    random.Random(1).shuffle(order)
    for kind in order:
        got[kind].append(fresh() if kind.startswith("fresh") else forked())
    print(f"fork: per-process median step time, {processes} processes each, interleaved")
    for name, values in got.items():
        show(name, values)


def alternation_check(reps: int) -> None:
    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, bufsize=1, start_new_session=True)

    def ask(p: subprocess.Popen, op: str) -> int:
        p.stdin.write(op + "\n")
        p.stdin.flush()
        return int(p.stdout.readline())

    def signal_group(p: subprocess.Popen, sig: int) -> None:
        os.killpg(p.pid, sig)

    got: dict[str, list[float]] = {"alone: blocks of 7 (other held)": [], "alone: values (other held)": [],
                                   "alternating, idle side held": [], "alternating, idle side not held": []}
    for _ in range(reps):
        a, b = start(), start()
        try:
            signal_group(b, signal.SIGSTOP)
            got["alone: blocks of 7 (other held)"].append(statistics.median(ask(a, "b") for _ in range(40)) / 1e6)
            got["alone: values (other held)"].append(statistics.median(ask(a, "v") for _ in range(80)) / 1e6)
            signal_group(b, signal.SIGCONT)
            for held in (True, False):
                values = []
                for _ in range(80):
                    for p, q in ((a, b), (b, a)):
                        if held:
                            signal_group(q, signal.SIGSTOP)
                            signal_group(p, signal.SIGCONT)
                        v = ask(p, "v")
                        if p is a:
                            values.append(v)
                for p in (a, b):
                    signal_group(p, signal.SIGCONT)
                key = "alternating, idle side held" if held else "alternating, idle side not held"
                got[key].append(statistics.median(values) / 1e6)
        finally:
            for p in (a, b):
                signal_group(p, signal.SIGCONT)
                p.kill()
                p.wait()
    print(f"alternation: side A's step time, {reps} pairs of processes, on the same CPUs (unpinned: all of this VM's)")
    for name, values in got.items():
        show(name, values)


def age_check(processes: int) -> None:
    print("age: one process's median of 15 steps at 0.05, 0.2, 0.5, 1, 2, 4, 8 s of its life (ms), one row a process")
    for _ in range(processes):
        print("  " + subprocess.run([sys.executable, "-c", AGE], capture_output=True, text=True, check=True).stdout.strip())


def faults_check(pairs: int) -> None:
    print(f"faults: {pairs} pairs of live processes, alternate windows of 30 steps, the other held: "
          "per process, median ms and page faults a step (first windows)")
    for _ in range(pairs):
        ps = [subprocess.Popen([sys.executable, "-c", WINDOWS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, bufsize=1, start_new_session=True) for _ in range(2)]
        rows: list[list[tuple[float, float]]] = [[], []]
        try:
            for p in ps:
                os.killpg(p.pid, signal.SIGSTOP)
            for w in range(16):
                for k in (0, 1) if w % 2 == 0 else (1, 0):
                    os.killpg(ps[k].pid, signal.SIGCONT)
                    ps[k].stdin.write("w\n")
                    ps[k].stdin.flush()
                    ms, faults = ps[k].stdout.readline().split()
                    rows[k].append((float(ms), float(faults)))
                    os.killpg(ps[k].pid, signal.SIGSTOP)
        finally:
            for p in ps:
                os.killpg(p.pid, signal.SIGCONT)
                p.kill()
                p.wait()
        for k, name in enumerate("AB"):
            first = " ".join(f"{a:.1f}/{b:.0f}" for a, b in rows[k][:6])
            print(f"  {name} {statistics.median(r[0] for r in rows[k]):.2f} ms, "
                  f"{statistics.median(r[1] for r in rows[k]):.0f} faults a step   ({first} …)")
        print()


def twomodels_check(processes: int) -> None:
    got: dict[str, list[tuple[float, float]]] = {"two models (the truth)": [], "one model": []}
    for _ in range(processes):
        for name, n in (("two models (the truth)", 2), ("one model", 1)):
            out = subprocess.run([sys.executable, "-c", MODELS, str(n)], capture_output=True, text=True, check=True)
            ms, faults = out.stdout.split()
            got[name].append((float(ms), float(faults)))
    print(f"twomodels: {processes} processes each, interleaved: per process median ms / page faults a step")
    for name, rows in got.items():
        print(f"  {name:<24} median {statistics.median(r[0] for r in rows):.3f} ms, "
              f"{statistics.median(r[1] for r in rows):.0f} faults a step   "
              f"({' '.join(f'{a:.2f}/{b:.0f}' for a, b in rows)})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checks", nargs="+", choices=("fork", "alternation", "age", "faults", "twomodels"),
                   default=["fork", "alternation", "age"])
    p.add_argument("--processes", type=int, default=8, help="processes per kind (fork), rows (age); a third as many "
                                                             "pairs for alternation")
    args = p.parse_args()
    checks = {"fork": fork_check, "alternation": lambda n: alternation_check(max(1, n // 3)), "age": age_check,
              "faults": lambda n: faults_check(max(1, n // 2)), "twomodels": twomodels_check}
    for name in args.checks:
        start = time.perf_counter()
        checks[name](args.processes)
        print(f"  ({time.perf_counter() - start:.0f} s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
