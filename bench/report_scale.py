"""The report stage's own time and memory on a big comparison: Markdown (cut to 65,000) and HTML.

    PYTHONPATH=src python bench/report_scale.py C.json [C2.json …] [--against /work/main/src] [--repeat 3]

Each file is read once (documents.comparison.load_comparison, not timed: that is the reader's
cost); then render(c, "md") in en and zh and write_html(c, …) are timed with perf_counter (median
of --repeat), and their peak Python allocation is taken with tracemalloc in a separate run.
--against runs the same in a child process on another source tree (e.g. main before this change),
so both trees are measured side by side in one run. Make a comparison with
`python bench/scale_data.py N DIR` and `profopt diff DIR/base.json DIR/head.json --out C.json`.
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
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(path: str, repeat: int) -> dict:
    """Seconds (median) and peak MB of each case, in this process."""
    from profopt_ci.documents.comparison import load_comparison
    from profopt_ci.report.render import render, write_html

    c = load_comparison(path)
    out = Path(tempfile.mkdtemp(prefix="profopt-report-scale-")) / "r.html"
    cases = {"md en": lambda: render(c, "md", "en", full_report_hint="the job summary"),
             "md zh": lambda: render(c, "md", "zh"),
             "html": lambda: write_html(c, out)}
    figures = {"n": len(c.get("benchmarks") or [])}
    for name, fn in cases.items():
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        figures[name] = (statistics.median(times), peak / 1e6)
    figures["html MB"] = out.stat().st_size / 1e6
    out.unlink()
    return figures


def child(src: str, path: str, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import report_scale; "
            f"print(json.dumps(report_scale.measure({path!r}, {repeat})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(tree: str, f: dict) -> str:
    cells = [f"{f[k][0]:8.2f} s {f[k][1]:7.0f} MB" for k in ("md en", "md zh", "html")]
    return f"{tree:<28} {f['n']:>8,}  " + "  ".join(cells) + f"  {f['html MB']:8.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--against", help="another source tree to measure beside this one")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    this = str(HERE.parent / "src")
    trees = [this] + ([args.against] if args.against else [])
    print(f"{'tree':<28} {'N':>8}  {'md en (s, peak)':>22}  {'md zh (s, peak)':>22}  {'html (s, peak)':>22}  page")
    for path in args.files:
        for tree in trees:
            print(row(tree[-28:], child(tree, path, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
