"""instrument: instructions on this machine — determinism, detection, cost. Prints figures.

    PYTHONPATH=src python bench/instructions.py [--runs 10] [--torch-runs 3] [--comparisons 50]

1. A/A: the CV of Ir per step over `--runs` valgrind runs of a pure-Python step (with
   pymalloc, as profopt runs it, and with PYTHONMALLOC=malloc, CodSpeed's choice, for contrast), and over
   `--torch-runs` runs of a torch CPU MLP step (import torch under valgrind takes ~13 s, so fewer).
2. Detection: real runs of base, +1% and +0.5% work (the loop 1% / 0.5% longer); then
   `--comparisons` comparisons each, every one drawing MIN_RUNS runs per side with replacement from
   the measured runs (a real compare costs ~10 s; 150 of them do not fit a benchmark run), judged
   by instruction_runs.instruction_change at τ = 0.5%: the share caught, and false flags on A/A.
3. Cost: one callgrind run's wall time against the same steps run natively; interpreter start.
4. The wall time of one real `profopt compare --instrument instructions` of a ~1 ms step.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from profopt_ci.measure import callgrind, instruction_runs
from profopt_ci.measure.processes import Side
from profopt_ci.specfile.load import parse_spec

WORK = """\
def make_loop(n=20000):
    def step():
        s = 0
        for i in range(n):
            s += i * i
        return s
    return step

def make_mlp():
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step
"""
N_LOOP = 20000


def project(root: Path) -> None:
    (root / "work.py").write_text(WORK)


def bench(root: Path, target: str, params: dict):
    text = f"version: 1\nbenchmarks:\n  - {{name: b, callable: {json.dumps(target)}, params: {json.dumps(params)}}}\n"
    spec = parse_spec(text, "bench.yml", path=root / "profopt.yml")
    return spec, spec.benchmarks[0]


def runs(root: Path, target: str, params: dict, count: int, tag: str, jobs: int = 2) -> list[float]:
    spec, b = bench(root, target, params)
    side = Side(name=tag, root=root)

    def one(i: int) -> float:
        return callgrind.run_once(spec, b, side, root / "work", i)["instructions"]

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, range(count)))


def cv(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.mean(values) * 100 if len(values) > 1 else 0.0


def detection(base: list[float], other: list[float], comparisons: int, rng: random.Random) -> float:
    flagged = 0
    for _ in range(comparisons):
        b = [rng.choice(base) for _ in range(instruction_runs.MIN_RUNS)]
        h = [rng.choice(other) for _ in range(instruction_runs.MIN_RUNS)]
        flagged += instruction_flag(b, h)
    return flagged / comparisons


def instruction_flag(b: list[float], h: list[float]) -> bool:
    return instruction_runs.instruction_change(b, h, threshold_pct=0.5)["verdict"] in ("regressed", "improved")


def native_step_s(n: int) -> float:
    code = f"import time,sys; sys.path.insert(0,'.'); import work; s=work.make_loop({n}); s(); t=time.perf_counter()\n" \
           "for _ in range(50): s()\nprint((time.perf_counter()-t)/50)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=ROOT).stdout)


def timed_run(root: Path) -> tuple[float, int]:
    spec, b = bench(root, "work:make_loop", {"n": N_LOOP})
    t = time.perf_counter()
    n = callgrind.run_once(spec, b, Side(name="t", root=root), root / "work", 99)["n"]
    return time.perf_counter() - t, n


def start_cost() -> float:
    t = time.perf_counter()
    subprocess.run([*callgrind.setarch_prefix(), "valgrind", "--tool=callgrind", "--instr-atstart=no",
                    "--callgrind-out-file=/dev/null", "--log-file=/dev/null", sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t


def compare_wall(tmp: Path, n: int) -> tuple[float, int, str]:
    repo = tmp / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    env = {**os.environ, **env}
    (repo / "work.py").write_text(WORK)
    (repo / "profopt.yml").write_text(textwrap.dedent(f"""\
        version: 1
        defaults: {{profile: "off"}}
        benchmarks:
          - {{name: loop, callable: "work:make_loop", params: {{n: {n}}}}}
        """))
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "a"],
                ["git", "commit", "-q", "--allow-empty", "-m", "b"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD~1",
                           "--instrument", "instructions", "--out", str(tmp / "c.json")], cwd=repo, env=env,
                          capture_output=True, text=True)
    return time.perf_counter() - t, proc.returncode, proc.stderr.strip().splitlines()[-1]


ROOT = Path()


def main() -> None:
    global ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--torch-runs", type=int, default=3)
    ap.add_argument("--comparisons", type=int, default=50)
    args = ap.parse_args()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="profopt-bench-instr-") as tmp:
        ROOT = Path(tmp)
        project(ROOT)
        (ROOT / "work").mkdir()
        step_s = native_step_s(N_LOOP)
        print(f"pure-Python step: loop of {N_LOOP}, native {step_s * 1e3:.2f} ms per step")
        base = runs(ROOT, "work:make_loop", {"n": N_LOOP}, args.runs, "base")
        print(f"A/A pure-Python, pymalloc:            {args.runs} runs, median {statistics.median(base):,.0f} Ir/step, "
              f"CV {cv(base):.4f}%, spread {instruction_runs.spread_pct(base):.4f}%")
        callgrind.DETERMINISM_ENV["PYTHONMALLOC"] = "malloc"
        pym = runs(ROOT, "work:make_loop", {"n": N_LOOP}, max(3, args.runs // 2), "pym")
        callgrind.DETERMINISM_ENV.pop("PYTHONMALLOC")
        print(f"A/A pure-Python, PYTHONMALLOC=malloc: {len(pym)} runs, median {statistics.median(pym):,.0f} Ir/step, "
              f"CV {cv(pym):.4f}%, spread {instruction_runs.spread_pct(pym):.4f}%")
        plus1 = runs(ROOT, "work:make_loop", {"n": int(N_LOOP * 1.01)}, args.runs, "p1")
        plus05 = runs(ROOT, "work:make_loop", {"n": int(N_LOOP * 1.005)}, args.runs, "p05")
        print(f"+1% work reads {statistics.median(plus1) / statistics.median(base):.5f}, "
              f"+0.5% reads {statistics.median(plus05) / statistics.median(base):.5f}")
        for label, other in (("+1%", plus1), ("+0.5%", plus05), ("A/A (false flags)", base)):
            share = detection(base, other, args.comparisons, rng)
            print(f"  {label:<18} flagged in {share * 100:.0f}% of {args.comparisons} resampled comparisons at τ=0.5%")
        wall, n = timed_run(ROOT)
        start = start_cost()
        steps = 3 * n + 2
        print(f"cost: one run {wall:.2f} s for {steps} steps (N={n}); valgrind+interpreter start alone {start:.2f} s; "
              f"the steps: {(wall - start) / (steps * step_s):.0f}x native")
        t0 = time.perf_counter()
        torch_runs = runs(ROOT, "work:make_mlp", {}, args.torch_runs, "torch")
        print(f"A/A torch MLP step (1 thread): {args.torch_runs} runs in {time.perf_counter() - t0:.0f} s, median "
              f"{statistics.median(torch_runs):,.0f} Ir/step, CV {cv(torch_runs):.4f}%, "
              f"spread {instruction_runs.spread_pct(torch_runs):.4f}%")
        n_ms = max(1000, int(N_LOOP * 1e-3 / step_s))
        secs, code, last = compare_wall(ROOT, n_ms)
        print(f"one `profopt compare --instrument instructions` of a ~1 ms step (loop {n_ms}): {secs:.1f} s, "
              f"exit {code}: {last}")


if __name__ == "__main__":
    main()
