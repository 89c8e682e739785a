"""How often does compare's verdict lie, per pairing? False alarms on A/A, and slowdowns caught.

A CPU-bound callable (~1 ms a step) whose extra work is a parameter runs as base and head through
the real compare machinery — the plan, the rounds of the chosen pairing, the sequential looks, the
paired statistics — once with `pairing: lockstep` and once with `pairing: rounds`, at each pairing's
default rounds, in one run on the same machine:

- lockstep: `--comparisons` real comparisons at each case: A/A, +3%, +5% and +10% at the default τ, and
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

`--near-tau` (issue 28): the cases are A/A and +0.5τ … +2τ at the default τ, and every
comparison is decided by two rules side by side — the shipped one (`stats._decide`: the CI excludes
0 and the estimate reaches τ) and "the CI lies wholly beyond τ" — on the same resampled rounds
(common random numbers), so the two columns differ only by the rule:

    python bench/verdict_accuracy.py --near-tau --comparisons 3 --rounds-comparisons 0 --resample 1000 \
        --noise-scale 1 3

Short rounds for short steps (issue 28 §4): a ~0.1 ms step (`--step-n 4000`) at both round lengths,
the variants interleaved:

    python bench/verdict_accuracy.py --near-tau --variants r400:round_ms=400 r150:round_ms=150 \
        --comparisons 3 --rounds-comparisons 0 --resample 1000 --noise-scale 1 4 --step-n 4000
"""
from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from profopt_ci.analyze import look_schedule, stats
from profopt_ci.analyze.decide import compare_metrics, round_ratio
from profopt_ci.analyze.judge import ALPHA
from profopt_ci.measure.processes import Side
from profopt_ci.measure.rounds import RoundContext, RoundState
from profopt_ci.pipeline.entries import track_dict
from profopt_ci.pipeline.sequential import sequential_rounds
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.plan import make_plan, overrides

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

TORCH_WORKLOAD = '''\
import torch
from torch import nn

def make_step(n=40000, slowdown=1.0):
    # a ~1 ms one-thread MLP training step; `slowdown` adds that share of extra forward passes
    x = torch.randn(64, 128)
    y = torch.randint(0, 10, (64,))
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    extra = slowdown - 1.0
    state = {"debt": 0.0}
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        state["debt"] += extra * 3  # a forward is about a third of the step
        while state["debt"] >= 1.0:
            with torch.no_grad():
                model(x)
            state["debt"] -= 1.0
    return step
'''

SPEC = """\
version: 1
env: {{OMP_NUM_THREADS: "1"}}
defaults: {{seed: {seed}, profile: "off", pairing: {pairing}{extra}}}
benchmarks:
  - name: work
    callable: accuracy_workload:make_step
    params: {{n: {n}, slowdown: {slowdown}}}
"""
SETTING_KEYS = ("round_ms", "rounds", "max_rounds")
STEP_N = [40000]  # the python workload's loop length (--step-n)


def parse_variant(text: str) -> tuple[str, str, str | None]:
    """'r400:round_ms=400,rounds=12,fork_rounds=1' → (name, spec settings text, PROFOPT_FORK_ROUNDS)."""
    name, _, rest = text.partition(":")
    extra, fork = "", None
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key == "fork_rounds":
            fork = value
        elif key in SETTING_KEYS:
            extra += f", {key}: {value}"
        else:
            raise SystemExit(f"--variants {text}: {key!r} is not one of {', '.join(SETTING_KEYS)}, fork_rounds")
    return name or "lockstep", extra, fork
# (label, extra work, threshold override); None: the default τ
CASES = [("A/A", 0.0, None), ("+2% at τ=1%", 0.02, "1%"), ("+3%", 0.03, None), ("+5%", 0.05, None), ("+10%", 0.10, None)]
DEFAULT_TAU = 3.0
NEAR_TAU = [("A/A", 0.0, None)] + [(f"+{k:g}τ", k * DEFAULT_TAU / 100, None) for k in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)]


def ci_beyond_tau(res: dict, tau: float) -> str:
    """The other rule: flagged only when the whole CI lies beyond τ; unchanged when it lies within
    ±τ; otherwise inconclusive (unstable past 10% outlier rounds), as stats._decide words them."""
    lo, hi = res["ci_low_pct"], res["ci_high_pct"]
    if res["n"] < stats.MIN_ROUNDS or lo is None or hi is None:
        return "inconclusive"
    if lo >= tau:
        return "regressed"
    if hi <= -tau:
        return "improved"
    if -tau <= lo and hi <= tau:
        return "unchanged"
    return "unstable" if res["outliers"] > stats.UNSTABLE_SHARE * res["n"] else "inconclusive"


RULES = {"shipped: CI excludes 0, estimate ≥ τ": lambda res, tau: res["verdict"], "CI wholly beyond τ": ci_beyond_tau}


def real_comparison(root: Path, pairing: str, slowdown: float, threshold: str | None, seed: int,
                    extra_settings: str = "") -> dict:
    """One compare on real processes: verdict, per-round log-ratios, rounds, wall seconds."""
    specs = {side: parse_spec(SPEC.format(seed=seed, pairing=pairing, slowdown=1.0 + extra, extra=extra_settings, n=STEP_N[0]),
                              str(root / "profopt.yml"), path=root / "profopt.yml")
             for side, extra in (("base", 0.0), ("head", slowdown))}
    plan = make_plan(specs["head"], overrides(threshold=threshold, environ={}))
    for side, spec in specs.items():
        plan = plan.attach(side, spec)
    sides = [Side(name="base", root=root), Side(name="head", root=root)]
    state = RoundState()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        try:
            ctx = RoundContext(plan, sides, state, Path(work), random.Random(seed), lambda _line: None)
            alphas = sequential_rounds(ctx, plan.spec.benchmarks)
        finally:
            state.close()
    wall = time.perf_counter() - start
    bench = plan.judged("work")
    base, head = track_dict(state, bench, "base"), track_dict(state, bench, "head")
    if base["status"] != "ok" or head["status"] != "ok":
        raise SystemExit(f"a side failed: {base['error'] or head['error']}")
    metrics = compare_metrics(bench, base["samples"], head["samples"], alpha=alphas["work"])
    b = {s["round"]: s for s in base["samples"]}
    h = {s["round"]: s for s in head["samples"]}
    # the per-round log-ratio the verdict uses: the median of the round's pair ratios (lockstep), else
    # head/base of the round's medians
    ratios = [math.log(round_ratio(b[r], h[r]) or h[r]["step_time_ms"] / b[r]["step_time_ms"])
              for r in sorted(b.keys() & h.keys())]
    forked = {s["round"]: bool(s.get("forked")) for s in base["samples"]}
    return {"verdict": metrics["step_time_ms"]["verdict"], "ratios": ratios, "rounds": len(ratios), "wall": wall,
            "forked": [forked.get(r, False) for r in sorted(b.keys() & h.keys())]}


def sequential_verdict(draw, rounds: int, max_rounds: int, threshold: float, rule=None) -> tuple[str, int]:
    """The compare procedure over log-ratios drawn one round at a time: (verdict, rounds used);
    `rule(result, τ)`: another verdict rule over the same statistics (default: the shipped one)."""
    looks = look_schedule.plan_looks(rounds, max_rounds)
    d: list[float] = []
    verdict = "inconclusive"
    for k, n in enumerate(looks):
        while len(d) < n:
            d.append(draw())
        alpha = look_schedule.spent_alpha(k + 1, len(looks), ALPHA)
        res = stats.paired_change([1.0] * n, [math.exp(x) for x in d], threshold_pct=threshold, alpha=alpha)
        verdict = rule(res, threshold) if rule is not None else res["verdict"]
        if verdict not in ("inconclusive", "unstable"):
            break
    return verdict, len(d)


def share(verdicts: list[str], word: str) -> str:
    return f"{sum(v == word for v in verdicts) / len(verdicts) * 100:.1f}%" if verdicts else "—"


def report(name: str, pairing: str, extra_settings: str, real: dict[str, list[dict]], resample: int,
           rng: random.Random) -> None:
    settings = parse_spec(SPEC.format(seed=1, pairing=pairing, slowdown=1.0, extra=extra_settings, n=STEP_N[0]),
                          "x.yml").benchmarks[0].settings
    aa = [x for run in real["A/A"] for x in run["ratios"]]
    center = statistics.median(aa)
    residuals = [x - center for x in aa]
    ratios = [math.exp(x) for x in aa]
    cv = statistics.stdev(ratios) / statistics.mean(ratios)
    runs = [run for case in real.values() for run in case]
    split = {kind: [x for run in real["A/A"] for x, f in zip(run["ratios"], run.get("forked") or [], strict=False)
                    if f == kind] for kind in (False, True)}
    if split[True] and len(split[False]) > 2:
        parts = []
        for kind, label in ((False, "fresh processes"), (True, "forked from a zygote")):
            xs = split[kind]
            med = statistics.median(xs)
            parts.append(f"{label}: CV {statistics.stdev(math.exp(x) for x in xs) * 100:.2f}% (robust "
                         f"{1.4826 * statistics.median(abs(x - med) for x in xs) * 100:.2f}%) over {len(xs)} rounds")
        print("A/A per-round ratio by how the workers started — " + "; ".join(parts))
    print(f"\n== {name}: pairing {pairing}, round_ms {settings.round_ms:g} — rounds {settings.rounds} → "
          f"{settings.max_rounds} in looks "
          f"{look_schedule.plan_looks(settings.rounds, settings.max_rounds)}, α = {ALPHA}, default τ = {settings.threshold:g}%")
    robust = 1.4826 * statistics.median(abs(r) for r in residuals)  # the CV without the outlier rounds
    q = statistics.quantiles(ratios, n=20)
    print(f"A/A per-round head/base ratio (the verdict's: lockstep, the median of the round's pair ratios): "
          f"CV {cv * 100:.2f}% over {len(aa)} rounds of {len(real['A/A'])} real "
          f"comparisons (median ratio {math.exp(center):.4f}; robust CV 1.4826·MAD {robust * 100:.2f}%; "
          f"5–95% of rounds within {q[0]:.3f}–{q[-1]:.3f})")
    print(f"per real comparison: median {statistics.median(r['rounds'] for r in runs):g} rounds, median wall "
          f"{statistics.median(r['wall'] for r in runs):.1f} s (min {min(r['wall'] for r in runs):.1f}, "
          f"max {max(r['wall'] for r in runs):.1f}) over {len(runs)} comparisons")
    for label, extra, tau in CASES:
        threshold = float(tau.rstrip("%")) if tau else settings.threshold
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


def report_rules(name: str, real: dict[str, list[dict]], settings, resample: int, rng: random.Random,
                 scale: float = 1.0) -> None:
    """--near-tau: each case decided by both RULES over the same resampled rounds; `scale` widens the
    measured A/A residuals (a noisier machine, synthetic)."""
    residuals = [x * scale for x in _residuals(real)]
    ratios = [math.exp(x) for x in residuals]
    robust = 1.4826 * statistics.median(abs(x) for x in residuals)
    walls = [r["wall"] for case in real.values() for r in case]
    print(f"\n== {name} (round_ms {settings.round_ms:g}; median wall of a real comparison "
          f"{statistics.median(walls):.1f} s): near τ = {settings.threshold:g}%: {resample} resampled comparisons per case, both rules on the "
          f"same rounds; rounds {settings.rounds} → {settings.max_rounds}; A/A residuals of "
          f"{sum(len(r['ratios']) for r in real['A/A'])} real rounds × {scale:g}: per-round CV "
          f"{statistics.stdev(ratios) * 100:.2f}% (robust {robust * 100:.2f}%)")
    print(f"{'case':<8} {'rule':<38} {'flagged':>8} {'unchanged':>10} {'inconcl.':>9} {'unstable':>9} {'rounds':>7}"
          "  real (shipped rule)")
    for label, extra, _ in NEAR_TAU:
        shift = math.log1p(extra)
        streams = [[shift + rng.choice(residuals) for _ in range(settings.max_rounds)] for _ in range(resample)]
        measured = [r["verdict"] for r in real.get(label, [])]
        for rule_name, rule in RULES.items():
            got = [sequential_verdict(iter(stream).__next__, settings.rounds, settings.max_rounds,
                                      settings.threshold, rule) for stream in streams]
            verdicts = [v for v, _ in got]
            flagged = sum(v in ("regressed", "improved") for v in verdicts) / len(verdicts) * 100
            real_txt = (", ".join(f"{v} {measured.count(v)}" for v in sorted(set(measured)))
                        if measured and rule_name.startswith("shipped") and scale == 1 else "")
            print(f"{label:<8} {rule_name:<38} {flagged:>7.1f}% {share(verdicts, 'unchanged'):>10} "
                  f"{share(verdicts, 'inconclusive'):>9} {share(verdicts, 'unstable'):>9} "
                  f"{statistics.median(n for _, n in got):>7g}  {real_txt}")


def _residuals(real: dict[str, list[dict]]) -> list[float]:
    aa = [x for run in real["A/A"] for x in run["ratios"]]
    center = statistics.median(aa)
    return [x - center for x in aa]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--comparisons", type=int, default=30, help="real lockstep comparisons per case (default 30)")
    p.add_argument("--rounds-comparisons", type=int, default=10,
                   help="real A/A comparisons of pairing: rounds (default 10; its effects are resampled)")
    p.add_argument("--resample", type=int, default=200, help="resampled comparisons per case and pairing")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--near-tau", action="store_true",
                   help="cases A/A and +0.5τ … +2τ, each decided by both verdict rules (see above)")
    p.add_argument("--noise-scale", type=float, nargs="+", default=[1.0],
                   help="--near-tau: also resample with the A/A residuals widened this many times (a noisier machine)")
    p.add_argument("--workload", choices=("python", "torch"), default="python",
                   help="python: a ~1 ms pure-Python loop (default); torch: a ~1 ms one-thread MLP training step, "
                        "whose workers fork from a zygote")
    p.add_argument("--variants", nargs="*", default=["lockstep:"],
                   help="lockstep variants run side by side, interleaved: NAME:key=value,… with keys round_ms, "
                        "rounds, max_rounds and fork_rounds (PROFOPT_FORK_ROUNDS; 1: no zygote); default: the "
                        "spec defaults, named lockstep")
    p.add_argument("--step-n", type=int, default=40000,
                   help="python workload: the loop's length, 40000 ≈ 1 ms a step here (default), 4000 ≈ 0.1 ms")
    args = p.parse_args()
    STEP_N[0] = args.step_n
    variants = [parse_variant(v) for v in args.variants]
    rng = random.Random(args.seed)
    real: dict[str, dict[str, list[dict]]] = {name: {} for name, _, _ in variants} | {"rounds": {}}
    cases = NEAR_TAU if args.near_tau else CASES
    plan = [(name, case, args.comparisons) for name, _, _ in variants for case in cases] + \
        [("rounds", CASES[0], args.rounds_comparisons)]
    how = {name: ("lockstep", extra, fork) for name, extra, fork in variants} | {"rounds": ("rounds", "", None)}
    with tempfile.TemporaryDirectory(prefix="profopt-accuracy-") as tmp:
        root = Path(tmp)
        (root / "accuracy_workload.py").write_text(textwrap.dedent(TORCH_WORKLOAD if args.workload == "torch"
                                                                   else WORKLOAD))
        # interleave the cases and variants so a change in the machine's load lands on all of them alike
        todo = [(name, case) for name, case, n in plan for _ in range(n)]
        rng.shuffle(todo)
        for i, (name, (label, extra, tau)) in enumerate(todo, 1):
            pairing, settings, fork = how[name]
            os.environ.pop("PROFOPT_FORK_ROUNDS", None)
            if fork is not None:
                os.environ["PROFOPT_FORK_ROUNDS"] = fork
            res = real_comparison(root, pairing, extra, tau, rng.randrange(2**31), settings)
            real[name].setdefault(label, []).append(res)
            print(f"[{i}/{len(todo)}] {name} {label}: {res['verdict']}, {res['rounds']} rounds, {res['wall']:.1f} s",
                  file=sys.stderr, flush=True)
    for name, (pairing, settings, _) in how.items():
        if not real[name].get("A/A"):
            continue
        if args.near_tau:
            spec_settings = parse_spec(SPEC.format(seed=1, pairing=pairing, slowdown=1.0, extra=settings, n=STEP_N[0]),
                                       "x.yml").benchmarks[0].settings
            for scale in args.noise_scale:
                report_rules(name, real[name], spec_settings, args.resample, rng, scale)
        else:
            report(name, pairing, settings, real[name], args.resample, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
