"""How often profopt's own processes wake while a forked sample is timed, and what it does to a
2-thread step's time.

`profopt run` of bench/alone.py's 2-thread torch step (each round a worker forked from a zygote),
per source tree, the trees interleaved with a one-process truth (the step's own loop, alone.truth).
While the rounds run, every second, the voluntary context switches of profopt's parent and of its
zygotes (not the workers) are read from /proc: each is a wake-up on the CPUs the step is timed on,
and a 2-thread OpenMP step on 2 CPUs stalls at its next barrier whenever one of its threads is
pushed off. Prints per run: wake-ups a second, run's median step time, and its error against the
truth taken just before.

    PYTHONPATH=src python bench/wakeups.py --tree old=/path/to/old/src --tree new=src [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
import alone  # noqa: E402
from conftest import make_repo  # noqa: E402


def _stat(pid: int) -> tuple[int, str]:
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[1]), rest[0]


def _switches(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
    return total


def profopt_own(root: int) -> list[int]:
    """The parent and its zygotes: the direct children of `root` that are zygotes, and root itself."""
    out = [root]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid, _ = _stat(int(d))
                if ppid == root and b"zygote_process" in Path(f"/proc/{d}/cmdline").read_bytes():
                    out.append(int(d))
            except (OSError, ValueError):
                continue
    return out


def run(repo: Path, src: str) -> dict:
    env = {"PYTHONPATH": src, "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    out = repo / "run.json"
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci", "run", "--rounds", "10", "--out", str(out)],
                            cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last: dict[int, int] = {}
    woke, seconds = 0, 0.0
    time.sleep(4.0)  # past the first round (a fresh interpreter importing torch)
    while proc.poll() is None:
        t0 = time.monotonic()
        now = {}
        for pid in profopt_own(proc.pid):
            try:
                now[pid] = _switches(pid)
            except OSError:
                continue
        woke += sum(n - last[p] for p, n in now.items() if p in last)
        seconds += 1.0 if last else 0.0
        last = now
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    samples = json.loads(out.read_text())["benchmarks"]["step"]["samples"]
    return {"ms": statistics.median(s["step_time_ms"] for s in samples), "wakeups_s": woke / max(seconds, 1.0)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", action="append", default=[], help="NAME=SRC (a source tree's src folder)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": str(HERE.parent / "src")}
    base_src, _, _ = alone.CASES["torch-2t-aa"]
    with tempfile.TemporaryDirectory(prefix="profopt-wakeups-") as tmp:
        repo = Path(tmp) / "repo"
        make_repo(repo, [{"case.py": base_src, "profopt.yml": alone.SPEC.format(extra="")}])
        rows: dict[str, list[tuple[float, float]]] = {n: [] for n in trees}
        for rep in range(args.repeat):
            truth = alone.truth(repo / "case.py", repo / "case.py", head_first=bool(rep % 2))["head_ms"]
            order = list(trees.items())[::-1 if rep % 2 else 1]
            for name, src in order:
                got = run(repo, src)
                err = 100 * (got["ms"] / truth - 1)
                rows[name].append((got["wakeups_s"], err))
                print(f"{name:8s} truth {truth:6.3f} ms | run {got['ms']:6.3f} ms ({err:+5.1f}%) | "
                      f"profopt's own wake-ups {got['wakeups_s']:6.0f}/s", flush=True)
        print("\nmedians per tree:")
        for name, r in rows.items():
            print(f"  {name:8s} wake-ups {statistics.median(w for w, _ in r):6.0f}/s, "
                  f"run's step time against the truth {statistics.median(e for _, e in r):+5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
