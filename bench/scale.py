"""Scale of the document paths (issue 14 item 7): validate, diff and report (md, html) of N benchmarks.

    python bench/scale.py               # validate 10^4..3.5·10^5; diff, report md/html 10^3..10^5; 3 runs each
    python bench/scale.py --repeat 5    # more runs per figure (the median is printed)
    python bench/scale.py --big         # adds diff and report of 10^6 (minutes, ~10 GB of RAM)

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

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])}
GOAL_N, GOAL_S, GOAL_MB = 100_000, 10.0, 1024.0


def measure(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.main", *argv], cwd=cwd, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def spec(n: int, path: Path) -> None:
    with path.open("w") as fh:
        fh.write("version: 1\ndefaults: {rounds: 3}\nbenchmarks:\n")
        for i in range(n):
            fh.write(f"  - name: b{i}\n    callable: bench.m:f\n    params: {{n: {i}, dtype: float32}}\n")


def figure(what: str, n: int, argv: list[str], cwd: Path, repeat: int, results: dict) -> None:
    runs = [measure(argv, cwd) for _ in range(repeat)]
    secs, mb = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    codes = sorted({r[2] for r in runs})
    results[(what, n)] = (secs, mb)
    print(f"{what:<9} {n:>9,} {secs:>9.2f} {mb:>9.0f} {','.join(map(str, codes)):>5} {secs / n * 1e6:>9.1f}"
          f"   runs: {' '.join(f'{r[0]:.2f}' for r in runs)} s", flush=True)


def main() -> None:
    big = "--big" in sys.argv
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    print(f"{'verb':<9} {'N':>9} {'wall s':>9} {'peak MB':>9} {'exit':>5} {'µs/bench':>9}   (medians of {repeat})")
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="profopt-scale-") as tmp:
        work = Path(tmp)
        for n in (10_000, 100_000, 350_000):
            spec(n, work / "s.yml")
            figure("validate", n, ["validate", "--no-import", "--spec", str(work / "s.yml")], work, 1, results)
        for n in (1_000, 10_000, 100_000, *((1_000_000,) if big else ())):
            base, head = write(n, work / str(n))
            figure("diff", n, ["diff", str(base), str(head), "--out", f"c{n}.json", "--report", f"d{n}.md",
                               "--html", f"d{n}.html", "--fail-on", "none"], work, repeat, results)
            figure("report", n, ["report", f"c{n}.json", "--out", f"r{n}.md"], work, repeat, results)
            figure("html", n, ["report", f"c{n}.json", "--format", "html", "--out", f"r{n}.html"], work, repeat,
                   results)
            for p in (base, head):
                p.unlink()
    print()
    for what in ("diff", "report", "html"):
        secs, mb = results[(what, GOAL_N)]
        linear = results[(what, GOAL_N)][0] / results[(what, GOAL_N // 10)][0]
        met = "met" if secs <= GOAL_S and mb <= GOAL_MB else "MISSED"
        print(f"goal {what} of 10^5 ≤ {GOAL_S:g} s and ≤ 1 GB: {secs:.2f} s, {mb:.0f} MB — {met}; "
              f"10^5 / 10^4 wall {linear:.1f}x (linear: 10x)")


if __name__ == "__main__":
    main()
