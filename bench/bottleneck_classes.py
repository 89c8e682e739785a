"""Five steps whose bottleneck is plain at sight, in one A/A compare at the defaults: is each named right?

The truth is the remedy that helps: a 1024² matmul chain's time scales with FLOPs (compute); `a*b+c`
over 64 MB tensors with bytes moved (memory bandwidth); 600 elementwise ops on 16-element tensors
and a 2-layer, 64-wide transformer training step (batch 8×64) with the number of ops, not their
size (launch/framework overhead); a pure-Python loop in the same module (it imports torch) with
Python lines (interpreter overhead). One fresh repository, one `profopt compare --base HEAD --head
HEAD` by the real CLI; prints each benchmark's class, the evidence that named it, and whether it
holds; exit 1 when one does not. `--scaling` also prints the transformer's step time at widths
32…256 (4× the FLOPs for much less than 4× the time at the small end: overhead, not compute).

    PYTHONPATH=src python bench/bottleneck_classes.py [--scaling]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]
from conftest import make_repo  # noqa: E402

STEPS = '''\
import torch

torch.manual_seed(0)


def matmul_chain(n=1024, k=4):
    a = torch.randn(n, n) / n ** 0.5

    def step():
        x = a
        for _ in range(k):
            x = x @ a
        return x
    return step


def triad(mb=64):
    n = mb * 2**20 // 4
    a, b, c, out = torch.randn(n), torch.randn(n), torch.randn(n), torch.empty(n)

    def step():
        torch.add(torch.mul(a, b, out=out), c, out=out)
    return step


def tiny_ops(n=600):
    xs = [torch.randn(16) for _ in range(4)]

    def step():
        x = xs[0]
        for i in range(n):
            x = x * xs[i % 4] + 1 if i % 2 else x - xs[(i + 1) % 4]
        return x
    return step


def transformer(width=64, layers=2, batch=8, seq=64):
    layer = torch.nn.TransformerEncoderLayer(width, 4, dim_feedforward=4 * width, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    head = torch.nn.Linear(width, 10)
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-3)
    x, y = torch.randn(batch, seq, width), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(head(model(x).mean(1)), y)
        loss.backward()
        opt.step()
    return step


def pure_python(n=20000):
    def step():
        s = 0
        for i in range(n):
            s += i * i % 7
        return s
    return step
'''

SPEC = """\
version: 1
hardware_label: bench-cpu
benchmarks:
  - {name: matmul-chain, callable: "steps:matmul_chain"}
  - {name: triad-64mb, callable: "steps:triad"}
  - {name: tiny-ops, callable: "steps:tiny_ops"}
  - {name: transformer-64, callable: "steps:transformer"}
  - {name: pure-python, callable: "steps:pure_python"}
"""

WANT = {"matmul-chain": "compute", "triad-64mb": "memory bandwidth", "tiny-ops": "launch/framework overhead",
        "transformer-64": "launch/framework overhead", "pure-python": "interpreter overhead"}


def scaling(root: Path) -> None:
    code = ("import sys, time, statistics; sys.path.insert(0, '.'); import steps\n"
            "for w in (32, 64, 128, 256):\n"
            "    s = steps.transformer(width=w)\n"
            "    [s() for _ in range(5)]\n"
            "    t = []\n"
            "    for _ in range(7):\n"
            "        a = time.perf_counter(); [s() for _ in range(10)]; t.append((time.perf_counter() - a) / 10 * 1e3)\n"
            "    print(f'transformer width {w}: {statistics.median(t):.2f} ms a step')\n")
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scaling", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-classes-") as tmp:
        root = Path(tmp) / "repo"
        make_repo(root, [{"steps.py": STEPS, "profopt.yml": SPEC}])
        if args.scaling:
            scaling(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROFOPT_")}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD", "--head", "HEAD"],
                              cwd=root, env=env, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - start
        try:
            doc = json.loads((root / ".profopt" / "comparison.json").read_text())
        except OSError:
            print(proc.stderr[-2000:])
            return 1
        bad = 0
        for b in doc["benchmarks"]:
            got = (b.get("bottleneck") or {}).get("class")
            ok = got == WANT[b["name"]]
            bad += not ok
            ev = "; ".join((b.get("bottleneck") or {}).get("evidence") or [])[:220]
            print(f"{b['name']:<15} {'holds' if ok else 'FAILS':<6} {b['decision']:<10} {str(got):<26} {ev}")
        print(f"\n{len(WANT) - bad}/{len(WANT)} named right; compare {wall:.1f} s, exit {proc.returncode}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
