"""Issue 19's "Done when" cases at profopt's DEFAULT settings, each in a fresh generated git repo.

tests/test_suites.py checks the same suites with reduced rounds (so the suite stays fast); this
script runs them as the issue will be checked: `profopt compare --base HEAD~1` with no settings
in profopt.yml beyond the hardware label (rounds, max_rounds, round_ms, quality_steps, profile
all default). The suites' text is the tests' own (imported), so the two cannot drift apart.

    python bench/suite_done_when.py [--case pytest|asv|head-only] [--keep DIR]

Each case prints its verdicts and wall time and fails (exit 1) when a "Done when" check does not
hold:
- pytest: fixture plain, pedantic with setup, parametrized, a codspeed-style marker test; head
  slows `work` ~30% → ≥ 5 benchmarks, exactly `test_work` regressed;
- asv: time_/peakmem_/track_ and a class with params and setup_cache; the same slowdown → one
  benchmark per param combination, exactly the slowed time_ ones regressed, track_ on both sides;
- head-only: the PR adds profopt.yml and the suite (and the slowdown) → every benchmark measured
  on both sides, none new in the PR, `test_work` regressed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import make_repo, run_cli  # noqa: E402  (tests/ holds the repo helpers)
from test_suites import ASV_SUITE, LIB, PYTEST_SUITE, SLOW_LIB  # noqa: E402

HEAD_LABEL = "version: 1\nhardware_label: done-when\n"  # nothing else: every setting at its default
PYTEST_SPEC = HEAD_LABEL + "suites:\n  - {pytest: tests/bench/}\n"
ASV_SPEC = HEAD_LABEL + "suites:\n  - {asv: benchmarks}\n"
PYTEST_NAMES = {"test_work", "test_pedantic", "test_join[100]", "test_join[400]", "test_marker"}


def compare(root: Path) -> dict:
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--report", "report.md"], root, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"compare failed in {root} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads((root / ".profopt" / "comparison.json").read_text())


def verdicts(c: dict) -> dict[str, str | None]:
    return {b["name"]: (b.get("metrics") or {}).get("step_time_ms", {}).get("verdict") for b in c["benchmarks"]}


def check(ok: bool, what: str, failures: list[str]) -> None:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def case_pytest(root: Path, failures: list[str]) -> dict:
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": PYTEST_SPEC, **PYTEST_SUITE}, {"mylib.py": SLOW_LIB}])
    c = compare(root)
    v = verdicts(c)
    check(len(v) >= 5 and set(v) == PYTEST_NAMES, f"≥ 5 benchmarks: {sorted(v)}", failures)
    check([n for n, x in v.items() if x == "regressed"] == ["test_work"], "exactly test_work regressed", failures)
    return c


def case_asv(root: Path, failures: list[str]) -> dict:
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": ASV_SPEC, **ASV_SUITE}, {"mylib.py": SLOW_LIB}])
    c = compare(root)
    by = {b["name"]: b for b in c["benchmarks"]}
    sizes = [n for n in by if n.startswith("bench_lib.Sizes.")]
    check(len(sizes) == 8, f"one benchmark per param combination (2 methods × 2 × 2): {len(sizes)}", failures)
    regressed = sorted(n for n, x in verdicts(c).items() if x == "regressed")
    want = sorted(["bench_lib.time_work", *(n for n in sizes if ".time_work(" in n)])
    check(regressed == want, f"exactly the slowed time_ ones regressed: {regressed}", failures)
    track = by.get("bench_lib.track_length") or {}
    values = [(track.get("quality") or {}).get(s, {}).get("values", {}).get("track", [None])[0] for s in ("base", "head")]
    check(values == [139, 139], f"track_ value reported on both sides: {values}", failures)
    return c


def case_head_only(root: Path, failures: list[str]) -> dict:
    make_repo(root, [{"mylib.py": LIB}, {"mylib.py": SLOW_LIB, "profopt.yml": PYTEST_SPEC, **PYTEST_SUITE}])
    c = compare(root)
    both = [b["name"] for b in c["benchmarks"] if b["samples"].get("base") and b["samples"].get("head")]
    check(set(both) == PYTEST_NAMES, f"every benchmark measured on both sides: {sorted(both)}", failures)
    check(not c.get("new_in_pr"), f"none new in the PR: {[n['name'] for n in c.get('new_in_pr') or []]}", failures)
    check([n for n, x in verdicts(c).items() if x == "regressed"] == ["test_work"], "exactly test_work regressed",
          failures)
    return c


CASES = {"pytest": case_pytest, "asv": case_asv, "head-only": case_head_only}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), action="append", help="run only this case (repeatable)")
    ap.add_argument("--keep", type=Path, help="make the repos here and keep them (default: a temporary directory)")
    args = ap.parse_args()
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="profopt-done-when-") as tmp:
        base = args.keep or Path(tmp)
        for name in args.case or list(CASES):
            print(f"{name}:", flush=True)
            t0 = time.monotonic()
            c = CASES[name](base / name, failures)
            headline = (base / name / "report.md").read_text().splitlines()[0]
            print(f"  {time.monotonic() - t0:.0f} s wall; headline: {headline}")
            for n, x in verdicts(c).items():  # None: judged on another metric (asv's peakmem_, track_)
                print(f"    {n}: {x}")
            sys.stdout.flush()
    print("all Done-when checks hold" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
