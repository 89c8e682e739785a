"""Issue 38's Done-when for the time budget and the accept label, through the real CLI in fresh
repositories (the fixtures of tests/test_budget.py and tests/test_accept.py):

- budget: eight ~1 ms benchmarks, `--measure all --time-budget 25s --fail-on regression`, `--runs`
  times: exit code, wall, how many are in the comparison and how many carry `mde`, and the budget's
  lines (what was held, what was cut);
- accept: a real +30% regression under `synchronize` (no label), `labeled` profopt-accept and
  `unlabeled` events (GITHUB_EVENT_PATH): exit code, wall and headline of each.

    python bench/gate_done_when.py --runs 3
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("PYTHONPATH", str(ROOT / "src"))

from conftest import CPU_STEP, make_repo  # noqa: E402


def budget(runs: int) -> None:
    from test_budget import SPEC

    for run in range(runs):
        root = Path(tempfile.mkdtemp(prefix="budget-")) / "repo"
        make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC}, {"x": "1"}])
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1",
                            "--measure", "all", "--time-budget", "25s", "--fail-on", "regression"],
                           cwd=root, capture_output=True, text=True)
        wall = time.monotonic() - t0
        c = json.loads((root / ".profopt" / "comparison.json").read_text())
        mde = [b for b in c["benchmarks"] if isinstance((b["metrics"].get("step_time_ms") or {}).get("mde"), float)]
        print(f"budget run {run + 1}: exit {p.returncode}, wall {wall:.1f} s, {len(c['benchmarks'])} in the comparison, "
              f"mde on {len(mde)}: {[(b['name'], b['decision'], b['rounds']) for b in c['benchmarks']]}")
        for line in p.stderr.splitlines():
            if "time budget" in line:
                print("   ", line)


def accept() -> None:
    import test_accept as t

    tmp = Path(tempfile.mkdtemp(prefix="accept-"))
    root, cache = tmp / "repo", tmp / "cache"
    make_repo(root, [{"bench_step.py": t.STEP.format(n=40000), "profopt.yml": t.SPEC},
                     {"bench_step.py": t.STEP.format(n=52000)}])
    for action, labels in (("synchronize", ["bug"]), ("labeled", ["bug", t.LABEL]), ("unlabeled", ["bug"])):
        proc, wall = t._compare(root, cache, t._event(tmp / f"{action}.json", action, labels))
        doc, report = t._read(root)
        b = doc["benchmarks"][0]
        print(f"accept {action}: exit {proc.returncode}, {wall:.1f} s, {b['decision']} "
              f"{b['metrics']['step_time_ms']['delta_pct']:+.1f}%, headline: {report.splitlines()[0][:100]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("budget", "accept"))
    args = ap.parse_args()
    if args.only != "accept":
        budget(args.runs)
    if args.only != "budget":
        accept()


if __name__ == "__main__":
    main()
