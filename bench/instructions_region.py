"""The size of a counted region (callgrind.TARGET_IR): A/A spread and wall time per run, side by side.

    PYTHONPATH=src python bench/instructions_region.py [--runs 6] [--targets 2e7,1e7,5e6]

Each round runs one valgrind process per (step, target), in an order shuffled per round, so
every target sees the same machine state. Steps: bench/instructions.py's pure-Python loop at
20000 (~13 M Ir) and 2000 (~1.2 M Ir), and an allocating step (dicts, lists, strings: pymalloc
arenas and resizes, the likeliest source of region-to-region jitter). Prints, per step and target: N, the median Ir per
step, its spread over the runs (max − min over the median, as instruction_runs judges it), the
ratio of its median to the largest target's (should be 1.00000), and the median wall per run.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from instructions import WORK as LOOP_WORK  # bench/instructions.py: make_loop

from profopt_ci.measure import callgrind, instruction_runs
from profopt_ci.measure.processes import Side
from profopt_ci.specfile.load import parse_spec

WORK = LOOP_WORK + """
def make_alloc(n=400):
    def step():
        d = {}
        for i in range(n):
            d[str(i)] = [i] * (i % 7)
        return sorted(d, key=len)[:3]
    return step
"""
STEPS = {"loop 20000": ("work:make_loop", {"n": 20000}), "loop 2000": ("work:make_loop", {"n": 2000}),
         "alloc 400": ("work:make_alloc", {"n": 400})}


def one(root: Path, target: str, params: dict, ir: float, index: int) -> tuple[dict, float]:
    text = f"version: 1\nbenchmarks:\n  - {{name: b, callable: {json.dumps(target)}, params: {json.dumps(params)}}}\n"
    spec = parse_spec(text, "bench.yml", path=root / "profopt.yml")
    callgrind.TARGET_IR = ir
    t = time.perf_counter()
    run = callgrind.run_once(spec, spec.benchmarks[0], Side(name="s", root=root), root / "work", index)
    return run, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--targets", default="2e7,1e7,5e6")
    args = ap.parse_args()
    targets = [float(t) for t in args.targets.split(",")]
    rng = random.Random(5)
    figures: dict[tuple[str, float], list[tuple[dict, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="profopt-bench-region-") as tmp:
        root = Path(tmp)
        (root / "work.py").write_text(WORK)
        (root / "work").mkdir()
        for r in range(args.runs):
            cells = [(s, t) for s in STEPS for t in targets]
            rng.shuffle(cells)
            for step, ir in cells:
                figures.setdefault((step, ir), []).append(one(root, *STEPS[step], ir, r))
    print(f"{args.runs} runs per cell, interleaved; spread as instruction_runs.spread_pct; floor {instruction_runs.NOISE_FLOOR_PCT}%")
    for step in STEPS:
        ref = statistics.median(run["instructions"] for run, _ in figures[(step, targets[0])])
        for ir in targets:
            cell = figures[(step, ir)]
            irs = [run["instructions"] for run, _ in cell]
            print(f"{step:<11} target {ir:.0e}: N={cell[0][0]['n']:<5} {statistics.median(irs):>12,.1f} Ir/step  "
                  f"spread {instruction_runs.spread_pct(irs):.5f}%  ratio {statistics.median(irs) / ref:.6f}  "
                  f"wall {statistics.median(w for _, w in cell):.2f} s")


if __name__ == "__main__":
    main()
