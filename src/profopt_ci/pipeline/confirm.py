"""`confirm: true`: a flagged benchmark is measured again, independently, before it is blamed.

In: a compare's finished `CompareRun`-like state — its plan, its prepared sides, the decided entries
— and a callable that measures some benchmarks afresh into a new `RoundState` (compare_refs.py passes
its look-by-look rounds). Out: the entries with each confirmed benchmark's `confirm` block, and a
note; a benchmark whose second run disagrees becomes `inconclusive`, both estimates said.

Flagged: a timed metric (step time, throughput, memory) regressed or improved, and the benchmark's
`confirm` setting on. The second run is independent: new worker processes (a new RoundState, new
zygotes), the benchmarks in the reverse order, a new seed for the round order. Only the metrics the
first run flagged are held against it: each verdict stands when the second run's verdict is the same.
With a false-alarm rate p per run, a change passes both only with p² (docs/accuracy.md measures it).
"""
from __future__ import annotations

import random
from collections.abc import Callable

from profopt_ci.analyze.decide import changed_metric, decide_benchmark, decided
from profopt_ci.documents.comparison import revised
from profopt_ci.specfile.load import Benchmark
from profopt_ci.words.i18n import message

CHANGED = ("regressed", "improved")
TIMED = ("step_time_ms", "throughput", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb",
         "energy_per_step_j")
# the seed of the confirmation run: a different one, and told apart from the first in the JSON
Remeasure = Callable[[list[Benchmark], int], list[dict]]


def flagged(entries: list[dict], benches: dict[str, Benchmark]) -> list[str]:
    """Benchmarks to confirm: `confirm` on, not failed, a timed metric regressed or improved."""
    out = []
    for e in entries:
        b = benches.get(e["name"])
        if b is None or not b.settings.confirm or e.get("decision") == "failed":
            continue
        if any((e.get("metrics") or {}).get(m, {}).get("verdict") in CHANGED for m in TIMED):
            out.append(e["name"])
    return out


def second_seed(seed: int) -> int:
    """Another seed for the confirmation run, drawn from the first so a seeded spec stays reproducible."""
    return random.Random(seed ^ 0x5EED).randrange(2**32)


def _figures(m: dict) -> dict:
    return {k: m.get(k) for k in ("delta_pct", "ci_low_pct", "ci_high_pct", "p_value", "verdict")}


def _figures_said(m: dict) -> str:
    """` +5.0% (CI +3.1…+6.9%)`, said after the verdict (a message field: figures read alike in every language)."""
    if m.get("delta_pct") is None:
        return ""
    ci = (f" (CI {m['ci_low_pct']:+.1f}…{m['ci_high_pct']:+.1f}%)"
          if m.get("ci_low_pct") is not None and m.get("ci_high_pct") is not None else "")
    return f" {m['delta_pct']:+.1f}%{ci}"


def apply(entries: list[dict], second: list[dict], benches: dict[str, Benchmark],
          seed: int) -> tuple[list[dict], list[dict]]:
    """Each flagged metric held against the second run: the entries again, and the notes (one per
    benchmark not confirmed)."""
    again = {e["name"]: e for e in second}
    notes: list[dict] = []
    out = []
    for e in entries:
        e, note = _held(e, again.get(e["name"]), benches, seed)
        out.append(e)
        notes += note
    return out, notes


def _held(e: dict, s: dict | None, benches: dict[str, Benchmark], seed: int) -> tuple[dict, list[dict]]:
    """One entry held against its second run: the entry with its `confirm` block (and, not
    confirmed, its changed metrics inconclusive and decided again), and the note that says so."""
    if s is None:
        return e, []
    metrics = {m: r for m, r in (e.get("metrics") or {}).items() if m in TIMED and r.get("verdict") in CHANGED}
    runs = {m: {"first": _figures(r), "second": _figures((s.get("metrics") or {}).get(m) or {})} for m, r in metrics.items()}
    agreed = s.get("decision") != "failed" and all(v["second"]["verdict"] == v["first"]["verdict"] for v in runs.values())
    e = revised(e, confirm={"seed": seed, "rounds": s.get("rounds"), "agreed": agreed, "metrics": runs})
    if agreed:
        return e, []
    why = message("why.not_confirmed")
    held = {m: (changed_metric(r, verdict="inconclusive", reason=why["text"], reason_msg=why) if m in metrics else r)
            for m, r in e["metrics"].items()}
    e = decided(e, *decide_benchmark(benches[e["name"]], held, e["constraints"]), metrics=held)
    first = runs.get("step_time_ms") or next(iter(runs.values()))
    return e, [message("note.not_confirmed", name=e["name"], first=first["first"].get("verdict") or "failed",
                       first_figures=_figures_said(first["first"]),
                       second=first["second"].get("verdict") or "failed",
                       second_figures=_figures_said(first["second"]))]
