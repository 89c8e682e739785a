"""The `instructions` instrument: runs per side, their verdict, and what goes into the outputs.

In: a spec, the benchmarks whose `instrument` includes instructions, the sides. Out:
- `measure_instructions` → {benchmark: {side: side result}}, a side result being
  {"status", "error", "n", "runs", "est_cycles_runs", "instructions", "est_cycles", "functions",
  "objects", "quality"} (docs/data-model.md), each run one valgrind process (callgrind.run_once);
- `instruction_change` → a metric entry of comparison@1 (base, head, delta_pct, ci_low_pct,
  ci_high_pct, p_value, verdict, …), judged like memory: head/base against τ;
- `merge` / `mark_failures` / `results_entry` put them into a comparison or results@1.

Runs: MIN_RUNS per side; more, up to MAX_RUNS, only when a side's counts disagree by more than
NOISE_FLOOR_PCT. The noise floor is measured, per side: the spread (max − min over the median) of
that side's runs, at least NOISE_FLOOR_PCT (the largest A/A spread bench/instructions.py saw on
pure-Python steps, which two agreeing runs cannot show). The comparison's floor is the larger
side's: each median lies inside its side's range, so the ratio of medians errs by at most about
(spread_base + spread_head) / 2 ≤ max of the two; with 2–5 runs a range understates the jitter,
which the max leaves room for. Verdict, with τ = `instructions_threshold` (default 0.5%), in order:
1. |Δ| ≤ floor → unchanged (a difference this small is the tool's own jitter) — unless a
   disagreeing side raised the floor to τ or more: that floor cannot tell a τ-sized change from
   jitter, so the change falls to rule 3;
2. both sides' runs agree within NOISE_FLOOR_PCT → |Δ| > τ is regressed / improved, else unchanged;
3. a side disagrees (said in `reason`): the interval is widened to every base/head pairing of
   runs, ± the floor; all of it beyond τ → regressed / improved, all of it inside ±τ →
   unchanged, else inconclusive.
The interval (ci_low_pct … ci_high_pct) is that range of runs ± the floor, not a confidence
interval, and there is no p-value: the counts are not samples of a noisy time.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from profopt_ci.documents.statement import put
from profopt_ci.measure import callgrind
from profopt_ci.measure.processes import BenchmarkFailed, Side
from profopt_ci.specfile.load import Benchmark, Spec
from profopt_ci.words.i18n import EN, message

MIN_RUNS = 2
MAX_RUNS = 5
NOISE_FLOOR_PCT = 0.02
DIFF_ROWS = 10
WHAT_IT_IS = EN["instr.what"]  # the report says it in each language (report/instruction_words.py)
FUNCTIONS_NOTE = EN["instr.functions"]


def wanted(benches: list[Benchmark]) -> list[Benchmark]:
    return [b for b in benches if "instructions" in b.settings.instrument]


def preflight(spec: Spec, benches: list[Benchmark]) -> None:
    """Before measuring anything: valgrind must be there (else UsageError, exit 2)."""
    if wanted(benches):
        callgrind.valgrind_path(_env_path(spec))


def _env_path(spec: Spec) -> dict[str, str] | None:
    import os

    return {**os.environ, **spec.env} if "PATH" in spec.env else None


def spread_pct(values: list[float]) -> float:
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid * 100.0 if mid else 0.0


def measure_instructions(spec: Spec, benches: list[Benchmark], sides: list[Side], ok: Callable[[str, str], bool],
                         workdir: Path, log: Callable[[str], None]) -> dict[str, dict[str, dict]]:
    """{benchmark: {side: result}} for each instructions benchmark and each side still ok."""
    out: dict[str, dict[str, dict]] = {}
    for bench in wanted(benches):
        live = [s for s in sides if ok(bench.name, s.name)]
        log(f"profopt: counting instructions of {bench.name} under valgrind [{', '.join(s.name for s in live)}]")
        with ThreadPoolExecutor(max_workers=max(1, len(live))) as pool:
            results = pool.map(lambda s, b=bench: measure_side(s.spec or spec, s.bench(b), s, workdir), live)
            out[bench.name] = dict(zip((s.name for s in live), results, strict=True))
        for side, r in out[bench.name].items():
            if r["status"] == "ok":
                log(f"profopt: {bench.name} [{side}]: {r['instructions']:,.0f} instructions per step "
                    f"(N={r['n']}, {len(r['runs'])} runs)")
            else:
                log(f"profopt: {bench.name} [{side}]: instructions {r['status']}: {r['error'].splitlines()[0]}")
    return out


def measure_side(spec: Spec, bench: Benchmark, side: Side, workdir: Path) -> dict:
    """MIN_RUNS valgrind runs, more while they disagree; a failure is kept as status + error."""
    runs: list[dict] = []
    try:
        while len(runs) < MIN_RUNS or (len(runs) < MAX_RUNS and
                                       spread_pct([r["instructions"] for r in runs]) > NOISE_FLOOR_PCT):
            runs.append(callgrind.run_once(spec, bench, side, workdir, len(runs)))
    except BenchmarkFailed as exc:
        return {"status": exc.status, "error": exc.message, "runs": [r["instructions"] for r in runs]}
    first = runs[0]
    cycles = [r["est_cycles"] for r in runs if r["est_cycles"] is not None]
    return {"status": "ok", "error": None, "n": first["n"], "runs": [r["instructions"] for r in runs],
            "est_cycles_runs": cycles, "instructions": statistics.median(r["instructions"] for r in runs),
            "est_cycles": statistics.median(cycles) if cycles else None, "functions": first["functions"],
            "objects": first["objects"], "quality": first["quality"]}


def instruction_change(base: list[float], head: list[float], *, threshold_pct: float,
                       min_floor_pct: float = NOISE_FLOOR_PCT, unit: str = "instructions") -> dict:
    """Compare per-step counts of the runs of each side (module docstring for the rules).

    Adds `noise_floor_pct` (the floor used), `noise_floor_by_side` and `noise_floor_min_pct`."""
    res: dict = {"base": None, "head": None, "delta_pct": None, "ci_low_pct": None, "ci_high_pct": None,
                 "p_value": None, "verdict": "inconclusive", "better": "lower", "paired": False,
                 "interval": "runs_range", "n_base": len(base), "n_head": len(head),
                 "n": min(len(base), len(head)), "threshold_pct": threshold_pct, "noise_floor_pct": None,
                 "noise_floor_min_pct": min_floor_pct, "runs": {"base": base, "head": head}}
    if not base or not head or min(base) <= 0:
        return put(res, "reason", message("why.instr_none", unit=unit, side="base" if not base else "head"))
    b, h = statistics.median(base), statistics.median(head)
    delta = (h / b - 1.0) * 100.0
    spreads = {"base": spread_pct(base), "head": spread_pct(head)}
    by_side = {side: max(min_floor_pct, s) for side, s in spreads.items()}
    floor_pct = max(by_side.values())
    lo = (min(head) / max(base) - 1.0) * 100.0 - floor_pct
    hi = (max(head) / min(base) - 1.0) * 100.0 + floor_pct
    res.update(base=b, head=h, delta_pct=delta, ci_low_pct=lo, ci_high_pct=hi, spread_pct=spreads,
               noise_floor_pct=floor_pct, noise_floor_by_side=by_side, mde=max(threshold_pct, floor_pct))
    change = {"unit": unit, "base": b, "head": h, "delta": delta}
    noisy = [side for side, s in spreads.items() if s > min_floor_pct]
    # A floor raised by a disagreeing side to τ or more cannot tell a τ-sized change from jitter.
    if abs(delta) <= floor_pct and (not noisy or floor_pct < threshold_pct):
        res["verdict"] = "unchanged"
        return put(res, "reason", message("why.instr_floor", **change, floor=floor_pct))
    if not noisy:
        res["verdict"] = "unchanged" if abs(delta) <= threshold_pct else ("regressed" if delta > 0 else "improved")
        key = "why.instr_within" if res["verdict"] == "unchanged" else "why.instr_beyond"
        return put(res, "reason", message(key, **change, tau=threshold_pct))
    if lo > threshold_pct or hi < -threshold_pct:
        res["verdict"] = "regressed" if lo > threshold_pct else "improved"
    elif -threshold_pct <= lo and hi <= threshold_pct:
        res["verdict"] = "unchanged"
    disagree = [message("why.instr_disagree", side=s, pct=spreads[s]) for s in noisy]
    return put(res, "reason", message("why.instr_widened", **change, disagree=disagree, least=min_floor_pct, floor=floor_pct,
                             lo=lo, hi=hi, verdict=res["verdict"], tau=threshold_pct))



def side_metrics(bench: Benchmark, base: dict, head: dict) -> dict[str, dict]:
    """`instructions` (and `est_cycles` with cache_sim) metric entries from two ok side results."""
    tau = bench.settings.instructions_threshold
    out = {"instructions": instruction_change(base["runs"], head["runs"], threshold_pct=tau)}
    if base.get("est_cycles_runs") and head.get("est_cycles_runs"):
        out["est_cycles"] = instruction_change(base["est_cycles_runs"], head["est_cycles_runs"], threshold_pct=tau,
                                               unit="est_cycles")
    return out
