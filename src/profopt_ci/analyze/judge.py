"""The judge: one benchmark's entry of a comparison from both sides' samples (`build_entry`), and
the entries of a comparison decided together (`finish`): shared by compare, diff and stored.

In: a `Benchmark` (how to judge: threshold, constraints, goal) and each side's {status, error,
samples}, paired (rounds of one compare) or not (two stored results). Out: the benchmark entry of
`profopt/comparison@1` (docs/data-model.md) with its metrics, constraints and goal; `finish` gives
each its multiplicity correction and its decision (`analyze.decide.DECISIONS`), as the frozen
`Entry` the comparison holds. Compare judges a benchmark at each look (`look`, an `Entry` too:
pipeline/sequential.py) and once more with its passes (pipeline/compare_run.py); `worth_profiling`
reads a look's entry.

A paired entry gets its metrics in `build_entry`. An unpaired one (diff, stored baseline) gets its
metrics, goal and outlier rounds in `resolve`, which `finish` runs first: all unpaired entries at
once, through `analyze.unpaired` (a diff may hold thousands of benchmarks).
"""
from __future__ import annotations

from profopt_ci.analyze import unpaired
from profopt_ci.analyze.decide import (
    SPEED,
    broken_reason,
    check_constraint,
    compare_metrics,
    decide_benchmark,
    decision_of,
    goal_status,
    multiplicity_corrected,
    throttled,
    throttled_rounds,
)
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.specfile.load import Benchmark
from profopt_ci.words.i18n import message

ALPHA = 0.01  # the family-wise level of a compare: its looks together, its benchmarks together
_PENDING = "_pending_metrics"  # an unpaired entry's Benchmark until `resolve`; never serialized


_JUDGED = "_judged_samples"  # an unpaired GPU entry's samples less the throttled ones, until `resolve`



def build_entry(bench: Benchmark, base: dict, head: dict, *, paired: bool, alpha: float | None = None) -> dict:
    """One benchmark of a comparison; `base`/`head` are {status, error, samples}."""
    rows_b, rows_h = base["samples"], head["samples"]  # read once: a read file's entries are Records
    status_b, status_h = base["status"], head["status"]
    entry: dict = {
        "name": bench.name,
        "unit": bench.unit,
        "goal": None,
        "status": {"base": status_b, "head": status_h},
        "error": None,
        "rounds": min(len(rows_b), len(rows_h)),
        "outlier_rounds": 0,
        "metrics": {},
        "constraints": [],
        "bottleneck": None,
        "profile": None,
        "samples": {"base": rows_b, "head": rows_h},
    }
    failed = [(side, d) for side, d, st in (("base", base, status_b), ("head", head, status_h)) if st != "ok"]
    if not failed and not (rows_b and rows_h):
        counted_only = not rows_b and not rows_h and (base.get("instructions") or head.get("instructions"))
        if bench.settings.timed and not counted_only:  # instructions-only: no timed samples
            failed = [(side, {**d, "status": "failed", "error": "no samples were measured"})
                      for side, d, rows in (("base", base, rows_b), ("head", head, rows_h)) if not rows]
    if failed:
        side, d = failed[0]
        entry["error"] = {"side": side, "status": d["status"], "message": d.get("error") or d["status"]}
        first = (d.get("error") or "").splitlines()[0].rstrip(": ") if d.get("error") else ""
        return {**entry, **decision_of("failed", message("reason.failed_error", side=side, status=d["status"], error=first)
                                    if first else message("reason.failed", side=side, status=d["status"]))}
    traces = (base.get("quality"), head.get("quality"))
    if bench.constraints or traces != (None, None):
        entry["quality"] = {"base": traces[0], "head": traces[1]}
    entry["constraints"] = [check_constraint(c, rows_b, rows_h, traces) for c in bench.constraints]
    if has_gpu(rows_b, rows_h):  # a GPU step's throttled rounds: counted, and left out of the verdict
        skip = throttled_rounds(rows_b, rows_h)
        entry["throttled_rounds"] = len(skip) if paired else sum(map(throttled, (*rows_b, *rows_h)))
        if not paired and entry["throttled_rounds"]:
            entry[_JUDGED] = ([r for r in rows_b if not throttled(r)], [r for r in rows_h if not throttled(r)])
    if paired:
        return _filled(entry, bench, compare_metrics(bench, rows_b, rows_h, alpha=alpha))
    entry[_PENDING] = bench  # the metrics of all unpaired entries are computed together in `resolve`
    return entry



def has_gpu(rows_b: list, rows_h: list) -> bool:
    """Whether a side's first sample carries GPU telemetry (a step's samples all do, or none)."""
    return any(bool(rows[0].get("gpu")) for rows in (rows_b, rows_h) if rows)



def _filled(entry: dict, bench: Benchmark, metrics: dict[str, dict]) -> dict:
    """The entry with its timed metrics first, then any the instructions merge put in meanwhile
    (their order before). A suite benchmark that judges only some metrics (asv's peakmem_: peak
    memory; track_, mem_: their recorded value, a constraint) keeps only those: its step time is not
    what it measures."""
    if bench.judged is not None:
        metrics = {m: r for m, r in metrics.items() if m in bench.judged}
    out = {**entry, "metrics": {**metrics, **entry["metrics"]} if entry["metrics"] else metrics,
           "outlier_rounds": metrics.get(SPEED, {}).get("outliers", 0), "goal": goal_status(bench, metrics)}
    out.pop(_PENDING, None)  # resolved
    out.pop(_JUDGED, None)
    return out



def _decide(bench: Benchmark, metrics: dict[str, dict], constraints: list[dict]) -> tuple[str, dict]:
    """decide_benchmark, except that a benchmark judged on its constraints alone (asv's track_,
    mem_) is decided by them: it has no timed metric to be inconclusive about."""
    if bench.judged is not None and not metrics and constraints:
        broken = [c for c in constraints if not c["ok"]]
        if broken:
            return "reject", broken_reason(broken)
        return "no-change", message("reason.held")
    return decide_benchmark(bench, metrics, constraints)


RESOLVE_SLICE = 8192  # entries whose samples are judged together: the arrays of one slice at a time



def resolve(entries: list[dict]) -> list[dict]:
    """The entries again, with the metrics of the unpaired ones `build_entry` left pending computed
    together (in slices)."""
    pending = [k for k, e in enumerate(entries) if _PENDING in e]
    out = list(entries)
    for k in range(0, len(pending), RESOLVE_SLICE):
        part = pending[k:k + RESOLVE_SLICE]
        items = [(entries[i][_PENDING], *(entries[i].get(_JUDGED) or (entries[i]["samples"]["base"],
                                                                    entries[i]["samples"]["head"]))) for i in part]
        for i, metrics in zip(part, unpaired.compare_unpaired(items), strict=True):
            out[i] = _filled(entries[i], entries[i][_PENDING], metrics)
    return out



def finish(entries: list[dict], benches: dict[str, Benchmark]) -> list[Entry]:
    """New entries: unpaired metrics (`resolve`), multiplicity across benchmarks, then each
    decision; each made its frozen `Entry` as the comparison holds it (later passes return new ones)."""
    entries = resolve(entries)
    judged = [k for k, e in enumerate(entries) if e.get("decision") != "failed"]
    for k, corrected in zip(judged, multiplicity_corrected([entries[k] for k in judged]), strict=True):
        e = entries[k]
        metrics = {**e["metrics"], **corrected}
        entries[k] = {**e, "metrics": metrics, **decision_of(*_decide(benches[e["name"]], metrics, e["constraints"]))}
    for k, e in enumerate(entries):  # in place: each dict goes as its Entry is made, never both for all
        entries[k] = comparison_doc.entry(e)
    return entries


def look(bench: Benchmark, base: dict, head: dict, *, alpha: float) -> Entry:
    """One benchmark judged at one look of its rounds, at the α the look spends: its frozen `Entry`,
    decided as `finish` decides it alone (the other benchmarks' multiplicity, the instructions and
    the passes after the rounds come in the comparison's own `finish`)."""
    return finish([build_entry(bench, base, head, paired=True, alpha=alpha)], {bench.name: bench})[0]


PROFILED = ("regressed", "improved", "inconclusive", "unstable")



def worth_profiling(entry: Entry) -> bool:
    """Whether a benchmark's profile has something to explain: its step time or a memory peak
    changed, or its step time was left undecided (one whose figures held has nothing for a
    bottleneck note, and a profile of each side is a share of a suite compare worth saving: docs/reach.md)."""
    metrics = entry.get("metrics") or {}
    return any((metrics.get(key) or {}).get("verdict") in PROFILED for key in
               ("step_time_ms", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb"))
