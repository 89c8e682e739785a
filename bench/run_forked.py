"""`profopt run` of the bundled torch example with its later samples forked from a zygote, against
fresh processes every sample (PROFOPT_FORK_ROUNDS=1), interleaved. Prints figures.

    PYTHONPATH=src python bench/run_forked.py [--pairs 3]

Per mode: the median wall of a whole `profopt run` (8 rounds, the example's spec), and the medians
of the results' step time and peak memory, so a faster run is seen to measure the same step.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "torch_train"
MODES = {"forked": {}, "fresh": {"PROFOPT_FORK_ROUNDS": "1"}}


def one(repo: Path, mode: str) -> tuple[float, float, float]:
    out = repo / f"r-{mode}.json"
    env = {**os.environ, **MODES[mode]}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "profopt_ci", "run", "--out", str(out)], cwd=repo, env=env, check=True,
                   capture_output=True)
    wall = time.perf_counter() - t
    summary = json.loads(out.read_text())["benchmarks"]["train-step"]["summary"]
    return wall, summary["step_time_ms"], summary["peak_memory_mb"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-bench-run-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("tuned"))
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x"}
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "a"]):
            subprocess.run(cmd, cwd=repo, env=env, check=True)
        runs: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
        for i in range(args.pairs):
            for mode in (list(MODES) if i % 2 == 0 else list(MODES)[::-1]):
                runs[mode].append(one(repo, mode))
    for mode, figs in runs.items():
        med = [statistics.median(f[k] for f in figs) for k in range(3)]
        print(f"{mode:>6}: run {med[0]:5.1f} s (runs {' '.join(f'{f[0]:.1f}' for f in figs)}), "
              f"step {med[1]:.3f} ms, peak memory {med[2]:.0f} MB")
    ratio = statistics.median(f[0] for f in runs["forked"]) / statistics.median(f[0] for f in runs["fresh"])
    print(f"forked / fresh wall: {ratio:.2f}")


if __name__ == "__main__":
    main()
