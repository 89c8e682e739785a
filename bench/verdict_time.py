"""How long a user waits for a verdict: `profopt compare` end to end, this tree side by side with a git ref.

Each case is a fresh repository compared A/A (`--base HEAD --head HEAD`) at the tool's defaults, the
way a new user would run it, by the real CLI in a subprocess: once with this checkout's `src/` on
PYTHONPATH ("now") and once with a worktree of `--ref` (default `main`: "ref"). The runs of all
cases and both trees are interleaved in a shuffled order, so a slower period of the machine lands
on both alike. Prints per case and tree: the median wall time (min–max), the decisions and the
rounds, against the goals of the issue "Measured as the user runs it":

    pure-python-2ms   a ~2 ms pure-Python step                        goal ≤ 15 s
    torch-mlp-1ms     a ~1 ms one-thread torch MLP training step,     goal ≤ 25 s
                      its loss recorded every step under a 1% constraint
    three-1-10ms      three benchmarks of ~1, ~3 and ~10 ms           goal ≤ 40 s
    pytest-suite-2ms  the ~2 ms step as a pytest-benchmark suite     goal ≤ 15 s  (--only-now: a suite
    asv-suite-2ms     the ~2 ms step as an asv suite                 goal ≤ 15 s   needs suites:)

    python bench/verdict_time.py                         # 3 runs of each case on each tree
    python bench/verdict_time.py --runs 1 --cases pure-python-2ms --ref 2c36d69
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
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

PY_STEP = """\
def make_step(n=50000):
    def step():
        x = 0
        for i in range(n):
            x += i
        return x
    return step
"""

JSON_STEP = """\
import json

def make_step(items=700):
    doc = {"rows": [{"id": i, "name": f"row {i}", "tags": ["a", "b", str(i)], "score": i / 7} for i in range(items)]}
    def step():
        return len(json.loads(json.dumps(doc)))
    return step
"""

TORCH_STEP = """\
import torch
from torch import nn
import profopt_ci

def make_step(batch=64, width=128, layers=2):
    x = torch.randn(batch, width)
    y = torch.randint(0, 10, (batch,))
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*blocks, nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        profopt_ci.record(loss=loss.item())  # falls every step: the A/A that main rejected
    return step
"""

PYTEST_SUITE = """\
def loop(n):
    x = 0
    for i in range(n):
        x += i
    return x


def test_loop(benchmark):
    assert benchmark(loop, 50000) == 50000 * 49999 // 2
"""

ASV_SUITE = """\
class Loop:
    def setup(self):
        self.n = 50000

    def time_loop(self):
        x = 0
        for i in range(self.n):
            x += i
"""

CASES = {
    "pure-python-2ms": (15.0, {"work.py": PY_STEP}, """\
version: 1
hardware_label: bench-cpu
benchmarks:
  - {name: loop, callable: "work:make_step", params: {n: 50000}}
"""),
    "torch-mlp-1ms": (25.0, {"mlp.py": TORCH_STEP}, """\
version: 1
hardware_label: bench-cpu
env: {OMP_NUM_THREADS: "1"}
benchmarks:
  - name: mlp
    callable: "mlp:make_step"
    params: {batch: 64, width: 128, layers: 2}
    constraints: [{metric: loss, rel_tol: 0.01}]
"""),
    # suites (issue "Bring your own suite"): the same ~2 ms step, collected from a pytest-benchmark and
    # an asv suite; a tree older than suites: cannot run them (use --only-now)
    "pytest-suite-2ms": (15.0, {"bench/test_loop.py": PYTEST_SUITE}, """\
version: 1
hardware_label: bench-cpu
suites:
  - {pytest: bench/}
"""),
    "asv-suite-2ms": (15.0, {"benchmarks/__init__.py": "", "benchmarks/bench_loop.py": ASV_SUITE}, """\
version: 1
hardware_label: bench-cpu
suites:
  - {asv: benchmarks/}
"""),
    "three-1-10ms": (40.0, {"work.py": PY_STEP, "jsonwork.py": JSON_STEP, "mlp.py": TORCH_STEP}, """\
version: 1
hardware_label: bench-cpu
env: {OMP_NUM_THREADS: "1"}
benchmarks:
  - {name: loop-1ms, callable: "work:make_step", params: {n: 25000}}
  - {name: json-3ms, callable: "jsonwork:make_step", params: {items: 700}}
  - {name: mlp-10ms, callable: "mlp:make_step", params: {batch: 256, width: 512, layers: 3}}
"""),
}


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@example.com")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_case(root: Path, files: dict[str, str], spec: str) -> None:
    root.mkdir(parents=True)
    for name, text in {**files, "profopt.yml": spec}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "case")


def one_run(case_root: Path, src: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFOPT_")}
    env["PYTHONPATH"] = str(src)
    out = case_root / ".profopt"
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD", "--head", "HEAD"],
                          cwd=case_root, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    try:
        c = json.loads((out / "comparison.json").read_text())
        decisions = [b["decision"] for b in c["benchmarks"]]
        rounds = [b.get("rounds") for b in c["benchmarks"]]
    except (OSError, ValueError, KeyError):
        decisions, rounds = [f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] }"], []
    return {"wall": wall, "decisions": decisions, "rounds": rounds, "exit": proc.returncode,
            "lines": len(proc.stderr.splitlines())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="runs of each case on each tree (default 3)")
    p.add_argument("--ref", default="main", help="the git ref to compare this tree with (default main)")
    p.add_argument("--cases", nargs="*", default=[c for c in CASES if "suite" not in c], choices=list(CASES))
    p.add_argument("--only-now", action="store_true", help="this tree only (no ref worktree)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-vtime-") as tmp:
        tmp_path = Path(tmp)
        trees = {"now": HERE / "src"}
        if not args.only_now:
            ref_tree = tmp_path / "ref-tree"
            git(HERE, "worktree", "add", "-q", "--detach", str(ref_tree), args.ref)
            trees["ref"] = ref_tree / "src"
        try:
            for case in args.cases:
                _, files, spec = CASES[case]
                make_case(tmp_path / case, files, spec)
            todo = [(case, tree) for case in args.cases for tree in trees for _ in range(args.runs)]
            random.Random(args.seed).shuffle(todo)
            results: dict[tuple[str, str], list[dict]] = {}
            for i, (case, tree) in enumerate(todo, 1):
                res = one_run(tmp_path / case, trees[tree])
                results.setdefault((case, tree), []).append(res)
                print(f"[{i}/{len(todo)}] {case} {tree}: {res['wall']:.1f} s, {res['decisions']}, rounds {res['rounds']}, "
                      f"{res['lines']} log lines", file=sys.stderr, flush=True)
        finally:
            if "ref" in trees:
                git(HERE, "worktree", "remove", "--force", str(tmp_path / "ref-tree"))
    ref_label = f"ref {args.ref}"
    print(f"\n{'case':<17} {'tree':<12} {'median wall':>12} {'min–max':>14}  {'goal':>7}  decisions (rounds), log lines")
    for case in args.cases:
        goal = CASES[case][0]
        for tree in trees:
            rs = results[(case, tree)]
            walls = [r["wall"] for r in rs]
            med = statistics.median(walls)
            decided = ", ".join(f"{'/'.join(r['decisions'])} ({'/'.join(map(str, r['rounds']))})" for r in rs)
            mark = "met" if med <= goal else "missed"
            label = "now" if tree == "now" else ref_label
            print(f"{case:<17} {label:<12} {med:>10.1f} s {min(walls):>6.1f}–{max(walls):<6.1f} ≤{goal:>4.0f} s {mark:<6} "
                  f"{decided}; {statistics.median(r['lines'] for r in rs):g} lines")
    if "ref" in trees:
        for case in args.cases:
            now = statistics.median(r["wall"] for r in results[(case, "now")])
            ref = statistics.median(r["wall"] for r in results[(case, "ref")])
            print(f"{case}: now/ref = {now / ref:.2f} ({ref:.1f} s → {now:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
