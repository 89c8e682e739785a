"""How often does compare's verdict lie, per pairing? False alarms on A/A, and slowdowns caught.

A CPU-bound callable (~1 ms a step) whose extra work is a parameter runs as base and head through
the real compare machinery — the plan, the rounds of the chosen pairing, the sequential looks, the
paired statistics — once with `pairing: lockstep` and once with `pairing: rounds`, at each pairing's
default rounds, in one run on the same machine:

- lockstep: `--comparisons` real comparisons at each case: A/A, +5% and +10% at the default τ, and
  +2% at τ = 1%;
- rounds (the old fresh-process pairing, 3–5× slower per comparison): `--rounds-comparisons` real
  A/A comparisons only; its effects are resampled (below) and said to be;
- then, per pairing, the measured A/A per-round log-ratios are resampled (whole rounds, with
  replacement, the residuals shifted by ln(1 + effect)) into `--resample` more comparisons per case,
  each decided by the same sequential procedure, so every rate rests on ≥ 100 comparisons.

Prints per pairing: the A/A per-round CV, false `regressed` and `unchanged` shares over the A/A
comparisons, the share caught at each effect, and the median rounds and wall time per comparison.

    python bench/verdict_accuracy.py                              # full size (about an hour on 2 vCPUs)
    python bench/verdict_accuracy.py --comparisons 10 --rounds-comparisons 4   # about 20 minutes
    python bench/verdict_accuracy.py --comparisons 2 --rounds-comparisons 1 --resample 50  # a smoke run
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

from profopt_ci.analyze import looks as sequential
from profopt_ci.analyze import stats
from profopt_ci.analyze.decide import compare_metrics
from profopt_ci.measure.processes import Side
from profopt_ci.measure.rounds import RoundState
from profopt_ci.pipeline.entries import ALPHA, track_dict
from profopt_ci.pipeline.sequential import sequential_rounds
from profopt_ci.spec.load import parse_spec
from profopt_ci.spec.plan import make_plan, overrides

WORKLOAD = '''\
def make_step(n=40000, slowdown=1.0):
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
defaults: {{seed: {seed}, profile: "off", pairing: {pairing}}}
benchmarks:
  - name: work
    callable: accuracy_workload:make_step
    params: {{n: 40000, slowdown: {slowdown}}}
"""
# (label, extra work, threshold override); None: the default τ
CASES = [("A/A", 0.0, None), ("+2% at τ=1%", 0.02, "1%"), ("+5%", 0.05, None), ("+10%", 0.10, None)]


def real_comparison(root: Path, pairing: str, slowdown: float, threshold: str | None, seed: int) -> dict:
    """One compare on real processes: verdict, per-round log-ratios, rounds, wall seconds."""
    specs = {side: parse_spec(SPEC.format(seed=seed, pairing=pairing, slowdown=1.0 + extra),
                              str(root / "profopt.yml"), path=root / "profopt.yml")
             for side, extra in (("base", 0.0), ("head", slowdown))}
    plan = make_plan(specs["head"], overrides(threshold=threshold, environ={}))
    for side, spec in specs.items():
        plan.attach(side, spec)
    sides = [Side(name="base", root=root), Side(name="head", root=root)]
    state = RoundState()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        alphas = sequential_rounds(plan, plan.spec.benchmarks, sides, state, Path(work), random.Random(seed),
                                   log=lambda _line: None)
    wall = time.perf_counter() - start
    bench = plan.judged("work")
    base, head = track_dict(state, bench, "base"), track_dict(state, bench, "head")
    if base["status"] != "ok" or head["status"] != "ok":
        raise SystemExit(f"a side failed: {base['error'] or head['error']}")
    metrics = compare_metrics(bench, base["samples"], head["samples"], paired=True, alpha=alphas["work"])
    b = {s["round"]: s["step_time_ms"] for s in base["samples"]}
    h = {s["round"]: s["step_time_ms"] for s in head["samples"]}
    ratios = [math.log(h[r] / b[r]) for r in sorted(b.keys() & h.keys())]
    return {"verdict": metrics["step_time_ms"]["verdict"], "ratios": ratios, "rounds": len(ratios), "wall": wall}


def sequential_verdict(draw, rounds: int, max_rounds: int, threshold: float) -> tuple[str, int]:
    """The compare procedure over log-ratios drawn one round at a time: (verdict, rounds used)."""
    looks = sequential.plan_looks(rounds, max_rounds)
    d: list[float] = []
    verdict = "inconclusive"
    for k, n in enumerate(looks):
        while len(d) < n:
            d.append(draw())
        alpha = sequential.spent_alpha(k + 1, len(looks), ALPHA)
        verdict = stats.paired_change([1.0] * n, [math.exp(x) for x in d], threshold_pct=threshold,
                                      alpha=alpha)["verdict"]
        if verdict not in ("inconclusive", "unstable"):
            break
    return verdict, len(d)


def share(verdicts: list[str], word: str) -> str:
    return f"{sum(v == word for v in verdicts) / len(verdicts) * 100:.1f}%" if verdicts else "—"


def report(pairing: str, real: dict[str, list[dict]], resample: int, rng: random.Random) -> None:
    settings = parse_spec(SPEC.format(seed=1, pairing=pairing, slowdown=1.0), "x.yml").benchmarks[0].settings
    aa = [x for run in real["A/A"] for x in run["ratios"]]
    center = statistics.median(aa)
    residuals = [x - center for x in aa]
    ratios = [math.exp(x) for x in aa]
    cv = statistics.stdev(ratios) / statistics.mean(ratios)
    runs = [run for case in real.values() for run in case]
    print(f"\n== pairing: {pairing} — rounds {settings.rounds} → {settings.max_rounds} in looks "
          f"{sequential.plan_looks(settings.rounds, settings.max_rounds)}, α = {ALPHA}, default τ = {settings.threshold_pct:g}%")
    robust = 1.4826 * statistics.median(abs(r) for r in residuals)  # the CV without the outlier rounds
    q = statistics.quantiles(ratios, n=20)
    print(f"A/A per-round head/base ratio: CV {cv * 100:.2f}% over {len(aa)} rounds of {len(real['A/A'])} real "
          f"comparisons (median ratio {math.exp(center):.4f}; robust CV 1.4826·MAD {robust * 100:.2f}%; "
          f"5–95% of rounds within {q[0]:.3f}–{q[-1]:.3f})")
    print(f"per real comparison: median {statistics.median(r['rounds'] for r in runs):g} rounds, median wall "
          f"{statistics.median(r['wall'] for r in runs):.1f} s (min {min(r['wall'] for r in runs):.1f}, "
          f"max {max(r['wall'] for r in runs):.1f}) over {len(runs)} comparisons")
    for label, extra, tau in CASES:
        threshold = float(tau.rstrip("%")) if tau else settings.threshold_pct
        shift = math.log1p(extra)
        drawn = [sequential_verdict(lambda s=shift: s + rng.choice(residuals), settings.rounds, settings.max_rounds,
                                    threshold) for _ in range(resample)]
        measured = [r["verdict"] for r in real.get(label, [])]
        allv = measured + [v for v, _ in drawn]
        word = "regressed"
        head = "false 'regressed'" if extra == 0 else "caught (regressed)"
        real_txt = (f"real {sum(v == word for v in measured)}/{len(measured)} regressed"
                    + (f", {sum(v == 'unchanged' for v in measured)}/{len(measured)} unchanged" if extra == 0 else "")
                    if measured else "no real runs: resampled from the A/A rounds only")
        print(f"{label:<12} {head} {share(allv, word)} of {len(allv)} ({real_txt}; + {resample} resampled, "
              f"median {statistics.median(n for _, n in drawn):g} rounds), unchanged {share(allv, 'unchanged')}, "
              f"inconclusive {share(allv, 'inconclusive')}, unstable {share(allv, 'unstable')}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--comparisons", type=int, default=30, help="real lockstep comparisons per case (default 30)")
    p.add_argument("--rounds-comparisons", type=int, default=10,
                   help="real A/A comparisons of pairing: rounds (default 10; its effects are resampled)")
    p.add_argument("--resample", type=int, default=200, help="resampled comparisons per case and pairing")
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args()
    rng = random.Random(args.seed)
    real: dict[str, dict[str, list[dict]]] = {"lockstep": {}, "rounds": {}}
    plan = [("lockstep", case, args.comparisons) for case in CASES] + [("rounds", CASES[0], args.rounds_comparisons)]
    with tempfile.TemporaryDirectory(prefix="profopt-accuracy-") as tmp:
        root = Path(tmp)
        (root / "accuracy_workload.py").write_text(textwrap.dedent(WORKLOAD))
        # interleave the cases so a change in the machine's load lands on all of them alike
        todo = [(pairing, case) for pairing, case, n in plan for _ in range(n)]
        rng.shuffle(todo)
        for i, (pairing, (label, extra, tau)) in enumerate(todo, 1):
            res = real_comparison(root, pairing, extra, tau, rng.randrange(2**31))
            real[pairing].setdefault(label, []).append(res)
            print(f"[{i}/{len(todo)}] {pairing} {label}: {res['verdict']}, {res['rounds']} rounds, {res['wall']:.1f} s",
                  file=sys.stderr, flush=True)
    for pairing in ("lockstep", "rounds"):
        if real[pairing].get("A/A"):
            report(pairing, real[pairing], args.resample, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
