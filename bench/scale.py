"""Scale of the document paths (issue 14 item 7): validate, diff and report (md, html) of N benchmarks.

    python bench/scale.py               # validate 10^4..3.5·10^5; diff, report md/html 10^3..10^5; 3 runs each
    python bench/scale.py --repeat 5    # more runs per figure (the median is printed)
    python bench/scale.py --big         # adds diff and report of 10^6 (minutes, ~10 GB of RAM)
    python bench/scale.py --old /tmp/old/src --verbs diff   # each figure also for another tree, runs interleaved

Each figure is one real `profopt` subprocess: wall seconds and its peak RSS (ru_maxrss from wait4),
the median of the runs. Inputs come from bench/scale_data.py (5 samples a side per benchmark);
`diff` writes comparison.json, report.md and report.html, as it does by default. The last lines
hold the goals: diff and report of 10^5 in ≤ 10 s and ≤ 1 GB, time and memory linear in N.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale_data import write  # noqa: E402


def tree_env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}


ENV = tree_env(HERE.parent / "src")
GOAL_N, GOAL_S, GOAL_MB = 100_000, 10.0, 1024.0


def measure(argv: list[str], cwd: Path, env: dict[str, str] = ENV) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def spec(n: int, path: Path) -> None:
    with path.open("w") as fh:
        fh.write("version: 1\ndefaults: {rounds: 3}\nbenchmarks:\n")
        for i in range(n):
            fh.write(f"  - name: b{i}\n    callable: bench.m:f\n    params: {{n: {i}, dtype: float32}}\n")


def figure(what: str, n: int, argv: list[str], cwd: Path, repeat: int, results: dict,
           trees: dict[str, dict[str, str]] | None = None) -> None:
    """The median of `repeat` runs; with other trees, each run of this one beside one of each of them."""
    trees = trees or {"": ENV}
    runs: dict[str, list] = {name: [] for name in trees}
    for _ in range(repeat):
        for name, env in trees.items():
            runs[name].append(measure(_own(argv, name), cwd, env))
    for name, got in runs.items():
        secs, mb = statistics.median(r[0] for r in got), statistics.median(r[1] for r in got)
        codes = sorted({r[2] for r in got})
        if name in ("", "new"):
            results[(what, n)] = (secs, mb)
        print(f"{(what + ' ' + name).strip():<9} {n:>9,} {secs:>9.2f} {mb:>9.0f} {','.join(map(str, codes)):>5} "
              f"{secs / n * 1e6:>9.1f}   runs: {' '.join(f'{r[0]:.2f}' for r in got)} s", flush=True)


def _own(argv: list[str], tree: str) -> list[str]:
    """Each tree writes and reads its own outputs (`report` of another tree's comparison.json would
    measure reading a newer format, or fail on it)."""
    if not tree:
        return argv
    return [f"{tree}-{a}" if "/" not in a and a.endswith((".json", ".md", ".html")) else a for a in argv]


def main() -> None:
    big = "--big" in sys.argv
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    verbs = sys.argv[sys.argv.index("--verbs") + 1].split(",") if "--verbs" in sys.argv else ["validate", "diff",
                                                                                               "report", "html"]
    trees = ({"old": tree_env(Path(sys.argv[sys.argv.index("--old") + 1]).resolve()), "new": ENV}
             if "--old" in sys.argv else None)
    print(f"{'verb':<9} {'N':>9} {'wall s':>9} {'peak MB':>9} {'exit':>5} {'µs/bench':>9}   (medians of {repeat})")
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="profopt-scale-") as tmp:
        work = Path(tmp)
        for n in (10_000, 100_000, 350_000) if "validate" in verbs else ():
            spec(n, work / "s.yml")
            figure("validate", n, ["validate", "--no-import", "--spec", str(work / "s.yml")], work, 1, results, trees)
        for n in (1_000, 10_000, 100_000, *((1_000_000,) if big else ())):
            base, head = write(n, work / str(n))
            figure("diff", n, ["diff", str(base), str(head), "--out", f"c{n}.json", "--report", f"d{n}.md",
                               "--html", f"d{n}.html", "--fail-on", "none"], work, repeat, results, trees)
            if "report" in verbs:
                figure("report", n, ["report", f"c{n}.json", "--out", f"r{n}.md"], work, repeat, results, trees)
            if "html" in verbs:
                figure("html", n, ["report", f"c{n}.json", "--format", "html", "--out", f"r{n}.html"], work,
                       repeat, results, trees)
            for p in (base, head):
                p.unlink()
    print()
    for what in [v for v in ("diff", "report", "html") if v in verbs]:
        secs, mb = results[(what, GOAL_N)]
        linear = results[(what, GOAL_N)][0] / results[(what, GOAL_N // 10)][0]
        met = "met" if secs <= GOAL_S and mb <= GOAL_MB else "MISSED"
        print(f"goal {what} of 10^5 ≤ {GOAL_S:g} s and ≤ 1 GB: {secs:.2f} s, {mb:.0f} MB — {met}; "
              f"10^5 / 10^4 wall {linear:.1f}x (linear: 10x)")


if __name__ == "__main__":
    main()
