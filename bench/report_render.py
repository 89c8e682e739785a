"""Median wall time to render the 500-benchmark comparison (Markdown cut to 65,000, zh, HTML).

    PYTHONPATH=src python bench/report_render.py [--n 500] [--repeat 7]

A figure to watch, not a test: the issue asks for < 1 s per Markdown render.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import comparison_fixtures  # noqa: E402

from profopt_ci.report.render import render  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        size = len(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    comparison = comparison_fixtures.many(args.n)
    render(comparison)  # compile the templates once, as a long-lived process would
    cases = {
        "md en (cut to 65,000)": lambda: render(comparison, full_report_hint="the job summary"),
        "md zh (cut to 65,000)": lambda: render(comparison, lang="zh"),
        "md en (no limit)": lambda: render(comparison, max_chars=None),
        "html en": lambda: render(comparison, "html"),
    }
    print(f"{args.n} benchmarks, median of {args.repeat} renders")
    for label, fn in cases.items():
        seconds, size = timed(fn, args.repeat)
        print(f"  {label:24s} {seconds * 1000:8.1f} ms  {size:>10,} chars")


if __name__ == "__main__":
    main()
