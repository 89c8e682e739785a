"""Does a 2-thread torch training step's A/A decide (issue 38 §1)? The MLP of examples/torch_train and a
tiny GPT (2 layers, width 64), each with `torch.set_num_threads(2)` and a loss constraint, compared
with themselves (two commits, the same code, `--measure all`) by the real CLI of each tree given
(`--tree NAME=SRC`, default this checkout), the trees interleaved, `--runs` times. Prints each run's
decision, step time change and CI, rounds and wall, then per case and tree how many ended
`no-change` and the median wall.

    python bench/torch_aa.py --runs 3
    python bench/torch_aa.py --tree old=/tmp/old-main/src --tree new=src --runs 3 --cases gpt
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

ROOT = Path(__file__).resolve().parent.parent

MLP = '''\
import torch

torch.set_num_threads(2)


def make_step(batch=64, hidden=128, layers=4):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(torch.nn.Linear(32, hidden), *blocks, torch.nn.Linear(hidden, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, 32), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        import profopt_ci
        profopt_ci.record(loss=float(loss))
    return step
'''

GPT = '''\
import torch

torch.set_num_threads(2)


class Block(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, vocab=128, width=64, layers=2, heads=4, seq=64):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, width), torch.nn.Embedding(seq, width)
        self.blocks = torch.nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln, self.head = torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


def make_step(batch=8, seq=64):
    torch.manual_seed(0)
    model = GPT(seq=seq)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(0, 128, (batch, seq + 1))

    def step():
        opt.zero_grad()
        logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 128), data[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        import profopt_ci
        profopt_ci.record(loss=float(loss))
    return step
'''

SPEC = ("version: 1\nhardware_label: bench-cpu\nbenchmarks:\n"
        "  - {name: step, callable: \"case:make_step\", constraints: [{metric: loss, rel_tol: 0.01}]}\n")
CASES = {"mlp": MLP, "gpt": GPT}


def repo(work: Path, case: str) -> Path:
    root = work / case
    root.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "b@example.com"], ["config", "user.name", "b"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / "case.py").write_text(CASES[case])
    (root / "profopt.yml").write_text(SPEC)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "step"], cwd=root, check=True)
    (root / "notes.md").write_text("an unrelated commit\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "notes"], cwd=root, check=True)
    return root


def compare(src: Path, root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.monotonic()
    out = root / "aa.json"
    out.unlink(missing_ok=True)
    extra = ["--measure", "all"] if (src / "profopt_ci" / "reach").is_dir() else []  # older trees measure all anyway
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1",
                           "--fail-on", "none", "--out", str(out), "--report", str(root / "aa.md"), *extra],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    if not out.is_file():
        return {"wall": wall, "decision": "error", "error": proc.stderr[-500:]}
    b = json.loads(out.read_text())["benchmarks"][0]
    m = b["metrics"].get("step_time_ms") or {}
    return {"wall": round(wall, 1), "decision": b["decision"], "rounds": b["rounds"], "delta": m.get("delta_pct"),
            "ci": [m.get("ci_low_pct"), m.get("ci_high_pct")]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=SRC")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = ap.parse_args()
    trees = [(t.partition("=")[0], Path(t.partition("=")[2]).resolve()) for t in args.tree] or [("this", ROOT / "src")]
    with tempfile.TemporaryDirectory(prefix="profopt-torch-aa-") as tmp:
        for case in args.cases:
            root = repo(Path(tmp), case)
            got: dict[str, list[dict]] = {}
            for r in range(args.runs):
                for name, src in (trees if r % 2 == 0 else trees[::-1]):
                    res = compare(src, root)
                    got.setdefault(name, []).append(res)
                    print(f"  {case} {name} run {r + 1}: {res}", flush=True)
            for name, runs in got.items():
                ok = sum(x["decision"] == "no-change" for x in runs)
                print(f"{case:4s} {name:8s} no-change {ok}/{len(runs)}, median wall "
                      f"{statistics.median(x['wall'] for x in runs):.1f} s "
                      f"(max {max(x['wall'] for x in runs):.1f}), rounds {[x.get('rounds') for x in runs]}", flush=True)


if __name__ == "__main__":
    main()
