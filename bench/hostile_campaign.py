"""The hostile-input campaign of issue 28 at full size: ≥ 1,000 seeded inputs, 0 internal errors.

Mutated specs (`validate`), comparisons (`report`), results (`diff`), shard files (`merge`), and refs,
flag values, suite paths and pull requests that change the spec (`compare`, in real git
repositories), each through the real CLI entry point; the seeds are real `profopt run` / `compare`
output (tests/hostile_campaign.py makes them and the cases). A case fails when profopt had an
internal error: an exception left `main`, it said "internal error" or printed a traceback, it exited
outside 0–3, it hung, or it exited 3 without the results file it was asked for.

Prints per verb the cases, the exit codes and the failures, then each failing case; exits 1 when
any case failed. tests/test_hostile_campaign.py runs a smaller slice of the same campaign.

    python bench/hostile_campaign.py                  # 1,200 cases, seed 28 (a few minutes on 2 vCPUs)
    python bench/hostile_campaign.py --seed 7 --scale 0.2
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests")]
import hostile_campaign as hc  # noqa: E402  (tests/ holds the campaign, its seeds and mutators)

FULL = {"validate": 420, "report": 330, "diff": 180, "merge": 180, "compare": 90}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full size (1,200 cases)")
    ap.add_argument("--trace", action="store_true", help="print every case as it ends")
    args = ap.parse_args()
    counts = {verb: max(1, round(n * args.scale)) for verb, n in FULL.items()}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="profopt-campaign-") as tmp:
        seeds = hc.prepare(Path(tmp))
        print(f"seeds ready in {time.monotonic() - start:.0f} s; {sum(counts.values())} cases, seed {args.seed}",
              flush=True)
        done = [0]

        def progress(outcome: hc.Outcome) -> None:
            if args.trace:
                print(f"  case {done[0] + 1} {outcome.case.verb} exit {outcome.code} {outcome.seconds:.1f} s: "
                      f"{str(outcome.case.argv)[:200]}", flush=True)
            done[0] += 1
            if outcome.problem:
                print(f"  case {done[0]} ({outcome.case.verb}): {outcome.problem}", flush=True)
            elif done[0] % 100 == 0:
                print(f"  {done[0]} cases", flush=True)

        outcomes = hc.campaign(seeds, args.seed, counts, progress)
    print(f"\n{'verb':<9} {'cases':>6} {'failures':>9} {'seconds':>8}  exit codes")
    for verb, row in hc.summary(outcomes).items():
        codes = ", ".join(f"{c}: {n}" for c, n in sorted(row["codes"].items(), key=lambda kv: str(kv[0])))
        print(f"{verb:<9} {row['cases']:>6} {row['failures']:>9} {row['seconds']:>8.0f}  {codes}")
    failing = [o for o in outcomes if o.problem]
    print(f"\n{len(outcomes)} cases, {len(failing)} internal error(s), {time.monotonic() - start:.0f} s in all")
    for o in failing:
        print(f"\n--- {o.case.verb}: {o.problem}\nargv: {o.case.argv}\ninput: {o.case.what[:1500]}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
