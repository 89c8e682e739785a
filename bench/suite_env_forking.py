"""A pytest suite in a setup venv of its own: `profopt compare` with workers forked from a zygote
(the default) against fresh processes every round (PROFOPT_FORK_ROUNDS=1), interleaved. Prints figures.

    PYTHONPATH=src python bench/suite_env_forking.py [--pairs 3] [--rounds 8]

The side's venv holds pytest and pytest-timeout (a plugin pytest loads and rewrites every session;
the zygote leaves it to pytest since it may not be preloaded), installed offline from wheels
packed from profopt's own environment (tests/wheels.py); the project turns warnings into errors.
Per mode: the median wall of a whole A/A compare (setup included, alike in both modes), the
median step time, and the count of failed benchmarks (0 expected in both).
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
sys.path.insert(0, str(ROOT / "tests"))
import wheels  # noqa: E402 — the tests' offline wheel packer
from conftest import make_repo  # noqa: E402
from test_side_env import SUITE  # noqa: E402 — the suite the tests run in a setup venv

MODES = {"forked": {}, "fresh": {"PROFOPT_FORK_ROUNDS": "1"}}


def one(repo: Path, mode: str) -> tuple[float, float, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **MODES[mode]}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD", "--fail-on", "none",
                           "--out", f"../{mode}.json"], cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{mode}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    c = json.loads((repo.parent / f"{mode}.json").read_text())
    steps = [s["step_time_ms"] for b in c["benchmarks"] for s in b["samples"]["base"]]
    return wall, statistics.median(steps), sum(b["decision"] == "failed" for b in c["benchmarks"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-bench-env-") as tmp:
        wh = Path(tmp) / "wheels"
        wh.mkdir()
        wheels.with_requirements("pytest", wh)
        wheels.installed_wheel("pytest-timeout", wh)
        repo = Path(tmp) / "repo"
        make_repo(repo, [{
            "tests/test_speed.py": SUITE,
            "pyproject.toml": '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n',
            "profopt.yml": f"version: 1\nhardware_label: bench\nsetup: pip install -q --no-index --find-links {wh} "
                           f"pytest pytest-timeout\ndefaults: {{rounds: {args.rounds}, max_rounds: {args.rounds}}}\n"
                           "suites:\n  - {pytest: tests/}\n"}])
        runs: dict[str, list[tuple[float, float, int]]] = {m: [] for m in MODES}
        for i in range(args.pairs):
            for mode in (list(MODES) if i % 2 == 0 else list(MODES)[::-1]):
                runs[mode].append(one(repo, mode))
    for mode, figs in runs.items():
        print(f"{mode:>6}: compare {statistics.median(f[0] for f in figs):5.1f} s "
              f"(runs {' '.join(f'{f[0]:.1f}' for f in figs)}), step {statistics.median(f[1] for f in figs):.4f} ms, "
              f"failed benchmarks {sum(f[2] for f in figs)}")
    ratio = statistics.median(f[0] for f in runs["forked"]) / statistics.median(f[0] for f in runs["fresh"])
    print(f"forked / fresh wall: {ratio:.2f}")


if __name__ == "__main__":
    main()
