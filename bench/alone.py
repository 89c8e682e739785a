"""Timed as it runs alone: compare's step time and change against the user's own loop, per source tree.

Each case is a fresh git repository (base and head commits, or one commit as an A/A) and one
`profopt compare` at the defaults by the real CLI. The truth is the user's own loop: both sides'
steps built in ONE interpreter and timed in alternating blocks (`truth`), so neither ever runs
beside the other. `--tree NAME=PATH` runs the same cases with profopt from each source tree
(e.g. today's main and this checkout), the trees interleaved case by case, so their figures are
measured side by side on the same machine state.

    torch-2t      torch MLP training step, torch.set_num_threads(2); base does a wasted 2-thread matmul
    torch-2t-aa   the same step, A/A
    numpy-2t      numpy (OpenBLAS, 2 threads) step; base does one more matmul
    pythreads-2t  a step hashing in two Python threads of its own; base hashes 30% more
    python-1t     a one-thread pure-Python loop; head does 40% less work

Prints per case and tree: the truth's base/head ms and change, compare's, the error of each (step
time: compare head / truth head − 1; change: compare − truth, in points), the decision and the wall
time.

    PYTHONPATH=src python bench/alone.py [--cases NAME ...] [--tree NAME=PATH ...] [--repeat N] [--malloc-fixed] [--solo]

`--solo` also takes a truth of each side alone in processes of its own (three a side, base and head
alternated, twice, right after compare): the user's loop as it runs, one model in its process.

`--malloc-fixed` sets MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ for both the truth and the
benchmark (its spec's `env`): glibc then keeps what a step frees instead of handing it back to the
kernel and faulting it in again, so a process's speed no longer depends on its allocation history.
The truth is not a plain process in that respect: its two models keep each other's memory in the
heap (docs/experiments.md, "What the fast and the slow process states are").
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
sys.path[:0] = [str(HERE.parent / "tests")]
from conftest import make_repo  # noqa: E402

SPEC = "version: 1\nhardware_label: bench-cpu\nbenchmarks:\n  - {{name: step, callable: \"case:make_step\"{extra}}}\n"

TORCH_2T = '''\
import torch

torch.set_num_threads(2)
WASTED = {wasted}


def make_step(batch=128, width=512):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))
    w = torch.randn(256, 256)

    def step():
        if WASTED:
            torch.mm(w, w)  # changes nothing
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step
'''

NUMPY_2T = '''\
import numpy as np

EXTRA = {wasted}


def make_step(n=192):
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))

    def step():
        c = a @ b
        if EXTRA:
            c = c @ b
        return float(c[0, 0])
    return step
'''

PYTHREADS_2T = '''\
import hashlib
import threading

BLOCKS = {blocks}


def make_step():
    data = bytes(range(256)) * 1024

    def work():
        h = hashlib.sha256()
        for _ in range(BLOCKS):
            h.update(data)

    def step():
        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return step
'''

CUDA_TRAIN = '''\
import torch

WASTED = {wasted}


def make_step(batch=256, width=2048):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width, device=dev), torch.randint(0, 10, (batch,), device=dev)
    w = torch.randn(1536, 1536, device=dev)

    def step():
        if WASTED:
            torch.mm(w, w)  # changes nothing
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step
'''

PYTHON_1T = '''\
N = {n}


def make_step():
    def step():
        s = 0
        for i in range(N):
            s += i * i % 7
        return s
    return step
'''

# name: (base source, head source or None for an A/A, the expected decision)
CASES = {
    "torch-2t": (TORCH_2T.format(wasted=True), TORCH_2T.format(wasted=False), "keep"),
    "torch-2t-aa": (TORCH_2T.format(wasted=False), None, "no-change"),
    "numpy-2t": (NUMPY_2T.format(wasted=True), NUMPY_2T.format(wasted=False), "keep"),
    "pythreads-2t": (PYTHREADS_2T.format(blocks=13), PYTHREADS_2T.format(blocks=10), "keep"),
    "python-1t": (PYTHON_1T.format(n=20000), PYTHON_1T.format(n=12000), "keep"),
    "cuda-train": (CUDA_TRAIN.format(wasted=True), CUDA_TRAIN.format(wasted=False), "keep"),
    "cuda-train-aa": (CUDA_TRAIN.format(wasted=False), None, "no-change"),
}
CPU_CASES = [c for c in CASES if not c.startswith("cuda")]

TRUTH = '''\
import importlib.util, json, statistics, sys, time
paths, rounds, block_ms = sys.argv[1:3], int(sys.argv[3]), float(sys.argv[4])
steps = []
for i, p in enumerate(paths):
    spec = importlib.util.spec_from_file_location(f"side{i}", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    steps.append(mod.make_step())
torch = sys.modules.get("torch")
cuda = torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()
sync = torch.cuda.synchronize if cuda else (lambda: None)
def block(step, n):
    sync()
    t = time.perf_counter_ns()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter_ns() - t) / n / 1e6
for s in steps:  # warm-up, and the loop count of a block
    block(s, 5)
n = max(1, int(block_ms / max(block(steps[0], 5), block(steps[1], 5))))
per = [[], []]
for r in range(rounds):
    order = (0, 1) if r % 2 == 0 else (1, 0)
    for i in order:
        per[i].append(block(steps[i], n))
ratios = [h / b for b, h in zip(*per)]
print(json.dumps({"base_ms": statistics.median(per[0]), "head_ms": statistics.median(per[1]),
                  "change_pct": 100 * (statistics.median(ratios) - 1)}))
'''


MALLOC_FIXED = {"MALLOC_TRIM_THRESHOLD_": "1000000000", "MALLOC_MMAP_THRESHOLD_": "1000000000"}


def truth(base: Path, head: Path, rounds: int = 80, block_ms: float = 20.0, head_first: bool = False,
          env: dict[str, str] | None = None) -> dict:
    """Both steps in one interpreter on the CPUs this process may use, blocks alternated (the
    geometric mean of one run just before compare and one just after is what compare is held to).
    `head_first`: head's step is built (and timed) first — the step built first read 1–4% slower
    than the same code built second, so the run after compare builds them the other way round."""
    paths = [str(head), str(base)] if head_first else [str(base), str(head)]
    out = subprocess.run([sys.executable, "-c", TRUTH, *paths, str(rounds), str(block_ms)],
                         capture_output=True, text=True, check=True, timeout=600, env={**os.environ, **(env or {})})
    got = json.loads(out.stdout)
    if head_first:
        got = {"base_ms": got["head_ms"], "head_ms": got["base_ms"], "change_pct": 100 * (100 / (100 + got["change_pct"]) - 1)}
    return got


SOLO = '''\
import importlib.util, statistics, sys, time
spec = importlib.util.spec_from_file_location("side", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
step, block_ms, seconds = mod.make_step(), float(sys.argv[2]), float(sys.argv[3])
def block(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        step()
    return (time.perf_counter_ns() - t) / n / 1e6
block(5)
n = max(1, int(block_ms / block(5)))
per, end = [], time.perf_counter() + seconds
while time.perf_counter() < end:
    per.append(block(n))
print(statistics.median(per))
'''


def solo_truth(base: Path, head: Path, processes: int = 3, block_ms: float = 20.0, seconds: float = 1.5,
               env: dict[str, str] | None = None) -> dict:
    """Each side's step alone in a process of its own, as the user's loop runs it (one model, no other
    heap beside it): `processes` fresh processes a side, base and head alternated; the median of
    their medians. The one-process truth keeps two models' memory in one heap, which changes how
    often the allocator faults (docs/experiments.md)."""
    got: dict[str, list[float]] = {"base": [], "head": []}
    for k in range(processes):
        for side, path in ((("base", base), ("head", head)) if k % 2 == 0 else (("head", head), ("base", base))):
            out = subprocess.run([sys.executable, "-c", SOLO, str(path), str(block_ms), str(seconds)],
                                 capture_output=True, text=True, check=True, timeout=600, env={**os.environ, **(env or {})})
            got[side].append(float(out.stdout))
    b, h = statistics.median(got["base"]), statistics.median(got["head"])
    return {"base_ms": b, "head_ms": h, "change_pct": 100 * (h / b - 1)}


def compare(root: Path, src: Path, aa: bool, name: str = "", extra: dict | None = None,
            keep: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFOPT_")}
    env["PYTHONPATH"] = str(src)
    env.update(extra or {})
    out = root / f".profopt-{name or src.parent.name}"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD" if aa else "HEAD~1",
                           "--head", "HEAD", "--out", str(out / "comparison.json"), "--report", str(out / "report.md")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if keep is not None and (out / "comparison.json").exists():  # --json-out: the whole comparison, kept
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{root.name}-{name or src.parent.name}.json").write_bytes((out / "comparison.json").read_bytes())
    try:
        b = json.loads((out / "comparison.json").read_text())["benchmarks"][0]
    except (OSError, ValueError, IndexError) as exc:
        return {"wall": wall, "error": f"exit {proc.returncode}: {exc}; {proc.stderr.strip()[-400:]}"}
    m = b["metrics"]["step_time_ms"]
    return {"wall": wall, "decision": b["decision"], "base_ms": m["base"], "head_ms": m["head"],
            "change_pct": m["delta_pct"], "ci": [m.get("ci_low_pct"), m.get("ci_high_pct")],
            "cpuset": b.get("cpuset"), "other_load": ((b.get("threads") or {}).get("other_load") or {}).get("share"),
            "bottleneck": (b.get("bottleneck") or {}).get("class")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="*", default=CPU_CASES, choices=list(CASES))
    p.add_argument("--markdown", type=Path, help="also write the per-run table here (Markdown)")
    p.add_argument("--json-out", type=Path, help="also keep each compare's comparison.json here (CASE-REP-TREE.json)")
    p.add_argument("--tree", action="append", default=[],
                   help="NAME=PATH[,VAR=VALUE…]: a profopt checkout, and environment variables for its compare "
                        "(default: this one)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--malloc-fixed", action="store_true", help="a fixed glibc allocator for the truth and compare alike")
    p.add_argument("--solo", action="store_true", help="also a truth of each side alone in processes of its own "
                                                       "(solo_truth), before and after compare")
    args = p.parse_args()
    malloc = MALLOC_FIXED if args.malloc_fixed else {}
    extra = ", env: {" + ", ".join(f"{k}: '{v}'" for k, v in malloc.items()) + "}" if malloc else ""
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": str(HERE.parent)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="profopt-alone-") as tmp:
        for rep in range(args.repeat):
            for case in args.cases:
                base_src, head_src, want = CASES[case]
                root = Path(tmp) / f"{case}-{rep}"
                commits = [{"case.py": base_src, "profopt.yml": SPEC.format(extra=extra)}]
                if head_src is not None:
                    commits.append({"case.py": head_src})
                make_repo(root, commits)
                (root / "sides").mkdir()
                (root / "sides" / "base.py").write_text(base_src)
                (root / "sides" / "head.py").write_text(head_src or base_src)
                order = list(trees.items())
                if rep % 2:
                    order.reverse()
                for name, where in order:
                    path, *assigned = where.split(",")
                    # the truth just before and just after: this machine's speed drifts by tens of
                    # percent over minutes, so one taken alone measures the drift as much as compare
                    before = truth(root / "sides" / "base.py", root / "sides" / "head.py", env=malloc)
                    c = compare(root, Path(path).resolve() / "src", head_src is None, name,
                                dict(a.split("=", 1) for a in assigned), keep=args.json_out)
                    after = truth(root / "sides" / "base.py", root / "sides" / "head.py", head_first=True, env=malloc)
                    t = {k: (before[k] * after[k]) ** 0.5 if k.endswith("_ms") else (before[k] + after[k]) / 2
                         for k in before}
                    t["spread_pct"] = 100 * abs(after["head_ms"] / before["head_ms"] - 1)
                    rows.append((case, name, t, c, want))
                    if "error" in c:
                        print(f"{case:<13} {name:<8} ERROR {c['error']}", flush=True)
                        continue
                    if args.solo:  # after compare, as the second one-process truth is
                        solo = [solo_truth(root / "sides" / "base.py", root / "sides" / "head.py", env=malloc)
                                for _ in range(2)]
                        sh = (solo[0]["head_ms"] * solo[1]["head_ms"]) ** 0.5
                        print(f"{case:<13} {name:<8} solo truth head {solo[0]['head_ms']:.3f}, {solo[1]['head_ms']:.3f} ms "
                              f"(one-process truth {t['head_ms']:.3f}) | compare head {c['head_ms']:.3f} ms: "
                              f"{100 * (c['head_ms'] / sh - 1):+.1f}% against the solo truth", flush=True)
                    print(f"{case:<13} {name:<8} truth {t['base_ms']:7.3f} -> {t['head_ms']:7.3f} ms "
                          f"(±{t['spread_pct']:.0f}%) "
                          f"{t['change_pct']:+6.1f}% | compare {c['base_ms']:7.3f} -> {c['head_ms']:7.3f} ms "
                          f"{c['change_pct']:+6.1f}% [{c['ci'][0]}, {c['ci'][1]}] | head time "
                          f"{100 * (c['head_ms'] / t['head_ms'] - 1):+6.1f}% change "
                          f"{c['change_pct'] - t['change_pct']:+5.1f} pt | {c['decision']:<9} "
                          f"(want {want}) {c['wall']:5.1f} s cpus {c['cpuset']} {c['bottleneck']} "
                          f"load {json.dumps(c['other_load']) if c['other_load'] else '-'}", flush=True)
    summary(rows)
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    return 0


def markdown(rows: list) -> str:
    """The runs as a Markdown table: the truth, compare, and the two errors per case and tree."""
    out = ["| case | tree | truth base → head ms | truth change | compare base → head ms | compare change "
           "(99% CI) | head time vs truth | change vs truth | decision | wall s |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for case, name, t, c, want in rows:
        if "error" in c:
            out.append(f"| {case} | {name} | | | | | | | error | |")
            continue
        lo, hi = c["ci"]
        out.append(f"| {case} | {name} | {t['base_ms']:.3f} → {t['head_ms']:.3f} | {t['change_pct']:+.1f}% | "
                   f"{c['base_ms']:.3f} → {c['head_ms']:.3f} | {c['change_pct']:+.1f}% ({lo:+.1f}…{hi:+.1f}) | "
                   f"{100 * (c['head_ms'] / t['head_ms'] - 1):+.1f}% | {c['change_pct'] - t['change_pct']:+.1f} pt | "
                   f"{c['decision']} (want {want}) | {c['wall']:.1f} |")
    return "\n".join(out) + "\n"


def summary(rows: list) -> None:
    print("\nmedians per case and tree (head time error %, change error pt, wall s):")
    keys = sorted({(r[0], r[1]) for r in rows})
    for case, name in keys:
        got = [(100 * (c["head_ms"] / t["head_ms"] - 1), c["change_pct"] - t["change_pct"], c["wall"], c["decision"])
               for cc, nn, t, c, _ in rows if (cc, nn) == (case, name) and "error" not in c]
        if not got:
            continue
        print(f"  {case:<13} {name:<8} {statistics.median(g[0] for g in got):+6.1f}% "
              f"{statistics.median(g[1] for g in got):+5.1f} pt {statistics.median(g[2] for g in got):5.1f} s "
              f"{[g[3] for g in got]}")


if __name__ == "__main__":
    sys.exit(main())
