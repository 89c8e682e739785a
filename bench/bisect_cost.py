"""What `confirm` and `profopt bisect` cost: probes and seconds, at the tool's defaults.

bisect: a generated linear history of N commits (a ~2 ms pure-Python step) where one commit, at
about 60% of the history, makes the step 30% slower; `profopt bisect --good c0 --bad cN` by the
real CLI in a subprocess, timed end to end. Printed per N: the probes, the compares in all (the
ends' compare included), the seconds, whether it named the right commit. N = 8 and 64 are measured;
N = 512 is estimated as the compares its search makes (counted by running the same search,
analyze.bisection.Search, against the culprit's position) × the mean seconds of one compare measured
at N = 64, and is marked "estimated" (`--measure-512` measures it too: about 25 minutes here).

confirm: two benchmarks, one 30% slower in head, one unchanged; `profopt compare` with and without
`--confirm`, the runs interleaved (`--runs` each) so a slower period lands on both. Printed: the
median seconds of each, the ratio, and what confirm re-measured (only the flagged benchmark).

    python bench/bisect_cost.py                 # bisect over 8 and 64 measured, 512 estimated; confirm ×3
    python bench/bisect_cost.py --sizes 8 --runs 1
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "src"))

from profopt_ci.analyze.bisection import Search  # noqa: E402

STEP = """\
def make_step(us=2000, factor=20):
    n = int(us * factor)
    def step():
        x = 0
        for i in range(n):
            x += i
        return x
    return step
"""
SPEC = """\
version: 1
hardware_label: bench-cpu
benchmarks:
{benches}
"""
BENCH = """\
  - name: {name}
    callable: bench.work:make_step
    params: {{us: 2000, factor: {factor}}}
"""


def _git(root: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.com")
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def history(root: Path, n: int, culprit: int) -> list[str]:
    """c0 … cn (n commits after c0): c<culprit> changes the spec's factor 20 → 26 (30% more work)."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    shas = []
    for i in range(n + 1):
        factor = 26 if i >= culprit else 20
        files = {"bench/__init__.py": "", "bench/work.py": STEP, f"docs/c{i}.txt": f"{i}\n",
                 "profopt.yml": SPEC.format(benches=BENCH.format(name="busy", factor=factor))}
        _write(root, files)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"c{i}")
        shas.append(_git(root, "rev-parse", "HEAD"))
    return shas


def cli(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, PYTHONPATH=str(HERE / "src"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    return proc, time.monotonic() - t0


def counted(n: int, culprit_index: int) -> int:
    """Probes the search makes over n commits (index n-1 the bad end) when the culprit is at that index."""
    s, probes = Search(n), 0
    while (i := s.next_probe()) is not None:
        s.record(i, "bad" if i >= culprit_index else "good")
        probes += 1
    return probes


def bisect_case(n: int, work: Path) -> dict:
    culprit = max(1, round(n * 0.6))
    root = work / f"h{n}"
    shas = history(root, n, culprit)
    proc, seconds = cli(["bisect", "--good", shas[0], "--bad", shas[-1], "--out", "b.json", "--report", "b.md"], root)
    if proc.returncode != 0:
        raise SystemExit(f"bisect over {n} failed:\n{proc.stderr[-3000:]}")
    doc = json.loads((root / "b.json").read_text())
    compares = 1 + len(doc["probes"])  # the ends' compare, then every probe (step checks included)
    return {"n": n, "probes": len(doc["probes"]), "compares": compares, "seconds": seconds,
            "per_compare": seconds / compares, "right": doc["first_bad"]["commit"] == shas[culprit],
            "counted": counted(n, culprit - 1), "measured": True}


def estimate(n: int, per_compare: float) -> dict:
    culprit = max(1, round(n * 0.6))
    probes = counted(n, culprit - 1) + 1  # the search, then the step check against the bad end
    return {"n": n, "probes": probes, "compares": probes + 1, "seconds": (probes + 1) * per_compare,
            "per_compare": per_compare, "right": None, "counted": probes - 1, "measured": False}


def confirm_case(work: Path, runs: int) -> dict:
    root = work / "confirm"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    for factor in (20, 26):
        benches = BENCH.format(name="slower", factor=factor) + BENCH.format(name="same", factor=20)
        _write(root, {"bench/__init__.py": "", "bench/work.py": STEP, "profopt.yml": SPEC.format(benches=benches)})
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"factor {factor}")
    times: dict[str, list[float]] = {"plain": [], "confirm": []}
    again: list[list[str]] = []
    for _ in range(runs):
        for kind in ("plain", "confirm"):
            flags = ["--confirm"] if kind == "confirm" else []
            proc, seconds = cli(["compare", "--base", "HEAD~1", "--out", f"{kind}.json", "--report", f"{kind}.md",
                                 "--html", f"{kind}.html", *flags], root)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"compare {kind} failed:\n{proc.stderr[-3000:]}")
            times[kind].append(seconds)
            if kind == "confirm":
                doc = json.loads((root / "confirm.json").read_text())
                again.append([b["name"] for b in doc["benchmarks"] if "confirm" in b])
    return {"plain": times["plain"], "confirm": times["confirm"], "again": again}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="8,64", help="history sizes to measure (default 8,64; 512 is estimated)")
    p.add_argument("--measure-512", action="store_true", help="measure 512 too instead of estimating it")
    p.add_argument("--runs", type=int, default=3, help="compares of each kind for confirm (default 3)")
    p.add_argument("--skip-confirm", action="store_true")
    a = p.parse_args()
    sizes = [int(x) for x in a.sizes.split(",") if x] + ([512] if a.measure_512 else [])
    with tempfile.TemporaryDirectory(prefix="profopt-bisect-cost-") as tmp:
        work = Path(tmp)
        rows = [bisect_case(n, work) for n in sizes]
        if not a.measure_512:
            per = rows[-1]["per_compare"]
            rows.append(estimate(512, per))
        print("bisect at the defaults (a ~2 ms step, one commit 30% slower at ~60% of the history):")
        print(f"{'commits':>8} {'probes':>7} {'compares':>9} {'seconds':>8} {'s/compare':>10}  named right  figures")
        for r in rows:
            right = "—" if r["right"] is None else ("yes" if r["right"] else "NO")
            print(f"{r['n']:>8} {r['probes']:>7} {r['compares']:>9} {r['seconds']:>8.0f} {r['per_compare']:>10.1f}  "
                  f"{right:>11}  {'measured' if r['measured'] else 'estimated: counted probes x measured s/compare'}")
        print(f"(the search alone: ⌈log2 N⌉ = {', '.join(str(math.ceil(math.log2(r['n']))) for r in rows)} probes; "
              "plus the ends' compare and one step check)")
        if not a.skip_confirm:
            c = confirm_case(work, a.runs)
            plain, conf = statistics.median(c["plain"]), statistics.median(c["confirm"])
            print(f"\nconfirm (2 benchmarks, 1 flagged; {a.runs} runs each, interleaved):")
            print(f"  compare            median {plain:.1f} s  ({min(c['plain']):.1f}–{max(c['plain']):.1f})")
            print(f"  compare --confirm  median {conf:.1f} s  ({min(c['confirm']):.1f}–{max(c['confirm']):.1f})")
            print(f"  ratio {conf / plain:.2f}x, +{conf - plain:.1f} s; re-measured: {c['again']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
