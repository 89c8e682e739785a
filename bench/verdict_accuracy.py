"""How often does compare's verdict lie? False alarms on A/A, and slowdowns caught.

A CPU-bound workload whose slowdown is a parameter runs as base and head through the real
compare machinery (fresh worker processes, RMIT rounds in a seeded random order, the sequential
looks of the default 20 → 60 rounds, the paired statistics). Then:

- `--real-aa` A/A comparisons and `--real-slow` comparisons at each slowdown run for real;
- the per-round log-ratios they measured are resampled (whole rounds, with replacement; the A/A
  residuals shifted by ln(1 + slowdown)) into `--resample` more comparisons per case, each decided
  by the same sequential procedure, so the rates rest on ≥ 100 comparisons without hours of runs.

Prints the false "regressed" rate (goal ≤ 1%), the share of 5% and 10% slowdowns caught (goals ≥ 95%
and ≥ 99%), the measured A/A CV, and the wall time per comparison.

    python bench/verdict_accuracy.py                       # the defaults quoted in docs/accuracy.md
    python bench/verdict_accuracy.py --real-aa 3 --real-slow 3 --resample 50   # a quick look
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from profopt_ci import stats
from profopt_ci.compare import ALPHA, _track_dict, sequential_rounds
from profopt_ci.decide import compare_metrics
from profopt_ci.rounds import RoundState
from profopt_ci.runner import Side
from profopt_ci.spec import parse_spec

WORKLOAD = '''\
def make_step(n=20000, slowdown=1.0):
    count = int(n * slowdown)
    def step():
        x = 0
        for i in range(count):
            x += i
        return x
    return step
'''

SPEC = """\
version: 1
defaults: {{warmup: {warmup}, min_time_ms: {min_time_ms}, values: {values}, rounds: 20, max_rounds: 60, seed: {seed}}}
benchmarks:
  - name: work
    callable: accuracy_workload:make_step
    params: {{n: 20000, slowdown: {slowdown}}}
"""


def spec_for(root: Path, slowdown: float, seed: int, args: argparse.Namespace):
    text = SPEC.format(slowdown=slowdown, seed=seed, warmup=args.warmup, min_time_ms=args.min_time_ms, values=args.values)
    return parse_spec(text, str(root / "profopt.yml"), path=root / "profopt.yml")


def real_comparison(root: Path, slowdown: float, seed: int, args) -> tuple[str, list[float], float]:
    """One compare on real processes; returns (verdict, per-round log-ratios, wall seconds)."""
    base_spec = spec_for(root, 1.0, seed, args)
    head_spec = spec_for(root, slowdown, seed, args)
    sides = [Side(name="base", root=root, spec=base_spec), Side(name="head", root=root, spec=head_spec)]
    state = RoundState()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        alphas = sequential_rounds(head_spec, head_spec.benchmarks, sides, state, Path(work), random.Random(seed),
                                   log=lambda _line: None)
    wall = time.perf_counter() - start
    bench = head_spec.benchmarks[0]
    base, head = _track_dict(state, bench, "base"), _track_dict(state, bench, "head")
    metrics = compare_metrics(bench, base["samples"], head["samples"], paired=True, alpha=alphas["work"])
    b = {s["round"]: s["step_time_ms"] for s in base["samples"]}
    h = {s["round"]: s["step_time_ms"] for s in head["samples"]}
    ratios = [math.log(h[r] / b[r]) for r in sorted(b.keys() & h.keys())]
    return metrics["step_time_ms"]["verdict"], ratios, wall


def sequential_verdict(draw, rounds: int = 20, max_rounds: int = 60, threshold: float = 3.0) -> str:
    """The compare procedure over log-ratios drawn one round at a time."""
    plan = stats.plan_looks(rounds, max_rounds)
    d: list[float] = []
    verdict = "inconclusive"
    for k, n in enumerate(plan):
        while len(d) < n:
            d.append(draw())
        alpha = stats.spent_alpha(k + 1, len(plan), ALPHA)
        res = stats.paired_change([1.0] * n, [math.exp(x) for x in d], threshold_pct=threshold, alpha=alpha)
        verdict = res["verdict"]
        if verdict != "inconclusive":
            break
    return verdict


def synthetic(noise_cv: float, slowdowns: list[float], count: int, rng: random.Random) -> int:
    """The same sequential procedure on lognormal per-round noise: a projection, not a measurement."""
    sigma = math.sqrt(math.log1p(noise_cv**2))
    print(f"SYNTHETIC: per-round log-ratio noise lognormal, CV {noise_cv * 100:g}% (no processes run)")
    for slowdown in [0.0, *slowdowns]:
        shift = math.log1p(slowdown)
        verdicts = [sequential_verdict(lambda s=shift: s + rng.gauss(0, sigma)) for _ in range(count)]
        word = "regressed"
        label = "A/A false 'regressed'" if slowdown == 0 else f"{slowdown:.0%} slowdown caught"
        print(f"  {label}: {rate(verdicts, word) * 100:.1f}% of {count}; "
              f"inconclusive {rate(verdicts, 'inconclusive') * 100:.1f}%, unchanged {rate(verdicts, 'unchanged') * 100:.1f}%")
    return 0


def rate(verdicts: list[str], word: str) -> float:
    return sum(v == word for v in verdicts) / len(verdicts) if verdicts else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--real-aa", type=int, default=20)
    p.add_argument("--real-slow", type=int, default=20, help="real comparisons at each slowdown")
    p.add_argument("--slowdowns", default="0.05,0.10")
    p.add_argument("--resample", type=int, default=200, help="resampled comparisons per case")
    p.add_argument("--min-time-ms", type=float, default=20.0)
    p.add_argument("--values", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--synthetic-cv", type=float, default=None,
                   help="no real runs: per-round noise drawn lognormal with this CV (e.g. 0.05), to project "
                        "the procedure onto a quieter runner")
    args = p.parse_args()
    slowdowns = [float(x) for x in args.slowdowns.split(",")]
    rng = random.Random(args.seed)
    if args.synthetic_cv is not None:
        return synthetic(args.synthetic_cv, slowdowns, args.resample, rng)

    with tempfile.TemporaryDirectory(prefix="profopt-accuracy-") as tmp:
        root = Path(tmp)
        (root / "accuracy_workload.py").write_text(textwrap.dedent(WORKLOAD))
        results: dict[float, list[tuple[str, list[float], float]]] = {}
        plan = [(0.0, args.real_aa)] + [(s, args.real_slow if s == slowdowns[0] else max(args.real_slow // 2, 1))
                                         for s in slowdowns]
        for slowdown, count in plan:
            results[slowdown] = []
            for i in range(count):
                res = real_comparison(root, 1.0 + slowdown, rng.randrange(2**31), args)
                results[slowdown].append(res)
                print(f"real {slowdown:+.0%} #{i + 1}: {res[0]}, {len(res[1])} rounds, {res[2]:.1f} s",
                      file=sys.stderr, flush=True)

    aa_ratios = [x for _, ratios, _ in results[0.0] for x in ratios]
    center = statistics.median(aa_ratios)
    residuals = [x - center for x in aa_ratios]
    walls = [w for runs in results.values() for _, _, w in runs]
    rounds_run = [len(r) for runs in results.values() for _, r, _ in runs]

    print(f"machine: {args.min_time_ms:g} ms per value × {args.values} values, warm-up {args.warmup}; "
          f"rounds 20 → 60 in looks {stats.plan_looks(20, 60)}, α = {ALPHA}, τ = 3%")
    aa_cv = statistics.stdev([math.exp(x) for x in aa_ratios]) / statistics.mean([math.exp(x) for x in aa_ratios])
    print(f"A/A per-round head/base ratio: CV {aa_cv * 100:.2f}% over {len(aa_ratios)} rounds "
          f"(median ratio {math.exp(center):.4f})")
    print(f"wall time per comparison: median {statistics.median(walls):.1f} s "
          f"(min {min(walls):.1f}, max {max(walls):.1f}); rounds run: median {statistics.median(rounds_run):g}")
    for slowdown in [0.0, *slowdowns]:
        real = [v for v, _, _ in results[slowdown]]
        shift = math.log1p(slowdown)
        synth = [sequential_verdict(lambda s=shift: s + rng.choice(residuals)) for _ in range(args.resample)]
        allv = real + synth
        if slowdown == 0.0:
            print(f"A/A: false 'regressed' {rate(allv, 'regressed') * 100:.2f}% of {len(allv)} "
                  f"(real: {sum(v == 'regressed' for v in real)}/{len(real)}; goal ≤ 1%); "
                  f"false 'improved' {rate(allv, 'improved') * 100:.2f}%; "
                  f"unchanged {rate(allv, 'unchanged') * 100:.1f}%, inconclusive {rate(allv, 'inconclusive') * 100:.1f}%")
        else:
            goal = "≥ 95%" if slowdown < 0.075 else "≥ 99%"
            print(f"{slowdown:.0%} slowdown: caught (regressed) {rate(allv, 'regressed') * 100:.1f}% of {len(allv)} "
                  f"(real: {sum(v == 'regressed' for v in real)}/{len(real)}; goal {goal}); "
                  f"inconclusive {rate(allv, 'inconclusive') * 100:.1f}%, unchanged {rate(allv, 'unchanged') * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
