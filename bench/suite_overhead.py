"""What a suite benchmark costs per step against the same function as a profopt callable.

Writes one throwaway tree with `mylib.work(n)` (~0.3 µs) measured five ways — a profopt callable
(a closure, as a factory returns it), pytest-benchmark's fixture (`benchmark(mylib.work, 20)`),
pytest-codspeed's marker (the test body), an asv `time_` function and a pyperf `bench_func` — and
runs `profopt run` on each in turn, the forms interleaved round after round (`--reps`), so a
drift of the machine reaches all of them alike. Prints each form's median step time over the
repetitions and its difference from the callable in µs (the goal: within 1 µs).

    python bench/suite_overhead.py [--reps 5] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = {
    "mylib.py": "def work(n):\n    x = 0\n    for i in range(n):\n        x += i\n    return x\n",
    "bench_callable.py": "import mylib\n\n\ndef make_step(n=20):\n    return lambda: mylib.work(n)\n",
    "tests/bench/test_fixture.py": "import mylib\n\n\ndef test_work(benchmark):\n    benchmark(mylib.work, 20)\n",
    "tests/marker/test_marker.py": textwrap.dedent("""\
        import pytest

        import mylib


        @pytest.mark.benchmark
        def test_work():
            mylib.work(20)
        """),
    "benchmarks/__init__.py": "",
    "benchmarks/bench.py": "import mylib\n\n\ndef time_work():\n    mylib.work(20)\n",
    "perf.py": "import pyperf\n\nimport mylib\n\nrunner = pyperf.Runner()\nrunner.bench_func('work', mylib.work, 20)\n",
    "profopt.yml": "version: 1\nhardware_label: bench\ndefaults: {profile: \"off\"}\nbenchmarks:\n"
                   "  - {name: work, callable: bench_callable:make_step}\n",
}
FORMS = {
    "callable": [],
    "pytest fixture": ["--suite", "pytest:tests/bench/"],
    "codspeed marker": ["--suite", "pytest:tests/marker/"],
    "asv time_": ["--suite", "asv:benchmarks"],
    "pyperf bench_func": ["--suite", "pyperf:perf.py"],
}


def run_form(tree: Path, flags: list[str], rounds: int) -> float:
    """One `profopt run` of one form: the median step time (ms) of its benchmark."""
    out = tree / "r.json"
    spec = ["--spec", "profopt.yml"] if not flags else []
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    if flags:  # a suite alone: no spec file in the tree
        (tree / "profopt.yml").rename(tree / "spec.off")
    try:
        subprocess.run([sys.executable, "-m", "profopt_ci", "run", *spec, *flags, "--rounds", str(rounds),
                        "--out", str(out)], cwd=tree, env=env, check=True, capture_output=True, text=True)
    finally:
        if flags:
            (tree / "spec.off").rename(tree / "profopt.yml")
    (entry,) = json.loads(out.read_text())["benchmarks"].values()
    return entry["summary"]["step_time_ms"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-overhead-") as tmp:
        tree = Path(tmp)
        for rel, text in FILES.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
        got: dict[str, list[float]] = {f: [] for f in FORMS}
        for rep in range(args.reps):
            order = list(FORMS) if rep % 2 == 0 else list(reversed(FORMS))
            for form in order:
                got[form].append(run_form(tree, FORMS[form], args.rounds))
        ref = statistics.median(got["callable"])
        print(f"{'form':<20} {'median µs/step':>15} {'vs callable µs':>15}   (each: {args.reps} runs × "
              f"{args.rounds} rounds, interleaved)")
        for form, values in got.items():
            med = statistics.median(values)
            print(f"{form:<20} {med * 1000:>15.3f} {(med - ref) * 1000:>+15.3f}")


if __name__ == "__main__":
    main()
