"""One benchmark's entry of a comparison, from both sides' samples: shared by compare, diff and stored.

In: a `Benchmark` (how to judge: threshold, constraints, goal) and each side's {status, error,
samples}, paired (rounds of one compare) or not (two stored results). Out: the benchmark entry of
`profopt/comparison@1` (docs/data-model.md) with its metrics, constraints and goal; `finish` gives
them with the multiplicity corrections and each decision; `differences` lists what differs besides
the code (params, env, the machine's fingerprint); `outlier_notes` the notes on outliers a CI
decided anyway.

A paired entry gets its metrics in `build_entry`. An unpaired one (diff, stored baseline) gets its
metrics, goal and outlier rounds in `resolve`, which `finish` runs first: all unpaired entries at
once, through `analyze.unpaired` (a diff of 10^5 benchmarks).
"""
from __future__ import annotations

from profopt_ci.analyze import unpaired
from profopt_ci.analyze.decide import (
    SPEED,
    broken_reason,
    check_constraint,
    compare_metrics,
    counts,
    decide_benchmark,
    decided,
    goal_status,
    multiplicity_corrected,
    overall,
    policy_failures,
    summary,
    throttled,
    throttled_rounds,
)
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.measure.fingerprint import material_keys
from profopt_ci.measure.gpu import CLOCKS_MOVED_MHZ
from profopt_ci.measure.rounds import RoundState
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
        return decided(entry, "failed", message("reason.failed_error", side=side, status=d["status"], error=first)
                       if first else message("reason.failed", side=side, status=d["status"]))
    traces = (base.get("quality"), head.get("quality"))
    if bench.constraints or traces != (None, None):
        entry["quality"] = {"base": traces[0], "head": traces[1]}
    entry["constraints"] = [check_constraint(c, rows_b, rows_h, traces) for c in bench.constraints]
    if _has_gpu(rows_b, rows_h):  # a GPU step's throttled rounds: counted, and left out of the verdict
        skip = throttled_rounds(rows_b, rows_h)
        entry["throttled_rounds"] = len(skip) if paired else sum(map(throttled, (*rows_b, *rows_h)))
        if not paired and entry["throttled_rounds"]:
            entry[_JUDGED] = ([r for r in rows_b if not throttled(r)], [r for r in rows_h if not throttled(r)])
    if paired:
        return _filled(entry, bench, compare_metrics(bench, rows_b, rows_h, alpha=alpha))
    entry[_PENDING] = bench  # the metrics of all unpaired entries are computed together in `resolve`
    return entry


def _has_gpu(rows_b: list, rows_h: list) -> bool:
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
        entries[k] = decided(e, *_decide(benches[e["name"]], metrics, e["constraints"]), metrics=metrics)
    for k, e in enumerate(entries):  # in place: each dict goes as its Entry is made, never both for all
        entries[k] = comparison_doc.entry(e)
    return entries


def differences(spec_pairs: list[tuple[Benchmark, Benchmark]], base: dict, head: dict) -> list[dict]:
    """Anything besides code that differs between the sides: params, env, the machine."""
    out = []
    for b, h in spec_pairs:
        for key in sorted(set(b.params) | set(h.params)):
            if b.params.get(key) != h.params.get(key):
                out.append({"scope": "params", "benchmark": h.name, "key": key,
                            "base": b.params.get(key), "head": h.params.get(key)})
        for key in sorted(set(b.env) | set(h.env)):
            if b.env.get(key) != h.env.get(key):
                out.append({"scope": "env", "benchmark": h.name, "key": key, "base": b.env.get(key), "head": h.env.get(key)})
    for key in sorted(set(base.get("env") or {}) | set(head.get("env") or {})):
        bv, hv = (base.get("env") or {}).get(key), (head.get("env") or {}).get(key)
        if bv != hv:
            out.append({"scope": "env", "benchmark": None, "key": key, "base": bv, "head": hv})
    bf, hf = base.get("fingerprint") or {}, head.get("fingerprint") or {}
    material = set(material_keys(bf, hf))
    for key in sorted(set(bf) | set(hf)):
        if bf.get(key) != hf.get(key):
            out.append({"scope": "fingerprint", "benchmark": None, "key": key, "base": bf.get(key),
                        "head": hf.get(key), "material": key in material})
    return out


def outlier_notes(entries: list[dict]) -> list[dict]:
    """The outlier share of a step time whose CI decided anyway: a note, not a verdict."""
    out = []
    for e in entries:
        speed = (e.get("metrics") or {}).get(SPEED, {})
        if speed.get("outlier_note"):
            out.append(message("note.outliers", name=e["name"], note=speed.get("outlier_note_msg") or speed["outlier_note"]))
    return out


FAULTS_MIN = 20.0  # page faults a step (median over a side's rounds) before a step's time may follow them
FAULTS_ROUNDS = 8  # rounds a side needs before their correlation is read
FAULTS_RHO = 0.5  # Spearman's rho of page faults against step time across rounds, at p < 0.05


def fault_notes(entries: list[dict]) -> list[dict]:
    """Where a step's time follows its page faults from round to round (each round a new process):
    its allocator hands memory back to the kernel and takes it again each step, and how much differs
    from process to process, so its time does too (docs/experiments.md: 0 against 300–500 faults a
    step, 2.5 against 3.0–4.4 ms, in the same seconds). A note with the figures and the remedy.

    Paired rounds are read first, within each round: head's faults less base's against head's time
    over base's, which the machine's drift from round to round leaves alone. Otherwise (or where that
    shows nothing) each side's rounds on their own."""
    out = []
    for e in entries:
        if e.get("decision") == "failed":
            continue
        paired = _paired_follows(e["samples"])
        if paired is not None:
            out.append(message("note.page_faults_paired", name=e["name"], **paired))
            continue
        best = None
        for side in ("base", "head"):
            rows = [(s["faults_per_step"], s["step_time_ms"]) for s in e["samples"][side]
                    if s.get("faults_per_step") is not None]
            found = _follows_faults(rows)
            if found is not None and (best is None or found["rho"] > best["rho"]):
                best = {**found, "side": side}
        if best is not None:
            out.append(message("note.page_faults", name=e["name"], **best))
    return out


def _correlated(x: list[float], y: list[float]) -> float | None:
    """Spearman's rho of x against y where it is ≥ FAULTS_RHO at p < 0.05, else None."""
    if len(x) < FAULTS_ROUNDS or min(x) == max(x):
        return None
    from scipy.stats import spearmanr

    rho, p = spearmanr(x, y)
    return round(float(rho), 2) if rho >= FAULTS_RHO and p < 0.05 else None  # NaN reads as no


def _follows_faults(rows: list[tuple[float, float]]) -> dict | None:
    faults = sorted(f for f, _ in rows)
    if not faults or faults[len(faults) // 2] < FAULTS_MIN:
        return None
    rho = _correlated([f for f, _ in rows], [t for _, t in rows])
    if rho is None:
        return None
    times = sorted(t for _, t in rows)
    return {"rho": rho, "rounds": len(rows), "faults_low": round(faults[0]), "faults_high": round(faults[-1]),
            "ms_low": times[0], "ms_high": times[-1]}


def _paired_follows(samples: dict[str, list]) -> dict | None:
    by_round = {s.get("round"): s for s in samples["base"] if s.get("faults_per_step") is not None}
    rows = [(by_round[s.get("round")], s) for s in samples["head"]
            if s.get("faults_per_step") is not None and s.get("round") in by_round]
    if not rows or sorted(max(b["faults_per_step"], h["faults_per_step"]) for b, h in rows)[len(rows) // 2] < FAULTS_MIN:
        return None
    diff = [h["faults_per_step"] - b["faults_per_step"] for b, h in rows]
    ratio = [h["step_time_ms"] / b["step_time_ms"] for b, h in rows]
    rho = _correlated(diff, ratio)
    if rho is None:
        return None
    return {"rho": rho, "rounds": len(rows), "diff_low": round(min(diff)), "diff_high": round(max(diff)),
            "ratio_low_pct": round(100 * (min(ratio) - 1), 1), "ratio_high_pct": round(100 * (max(ratio) - 1), 1)}


PROFILED = ("regressed", "improved", "inconclusive", "unstable")


def worth_profiling(entry: dict) -> bool:
    """Whether a benchmark's profile has something to explain: its step time or a memory peak
    changed, or its step time was left undecided (one whose figures held has nothing for a
    bottleneck note: a profile of each side was ~12% of a suite compare, docs/reach.md)."""
    metrics = entry.get("metrics") or {}
    return any((metrics.get(key) or {}).get("verdict") in PROFILED for key in
               ("step_time_ms", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb"))


def track_dict(state: RoundState, bench: Benchmark, side: str) -> dict:
    t = state.track(bench.name, side)
    return {"status": t.status, "error": t.error, "samples": t.samples, "quality": t.quality}


def policy(entries: list[dict], fail_on: str | None, accept: str | None = None) -> dict | None:
    """The `policy` section under `--fail-on` (None: none, as the demo's): the rule and who broke it;
    `accept`: the accept label the pull request carries (a failing policy passes)."""
    if fail_on is None:
        return None
    return comparison_doc.policy(fail_on, policy_failures(entries, fail_on), accept)


def accepted_note(judged: dict | None) -> list[dict]:
    """What a policy the accept label turned into a pass says, as the comparison's first note (nothing
    otherwise)."""
    if not judged or not judged.get("accepted"):
        return []
    return [message("note.accepted", label=judged["label"], names=judged["failing"], fail_on=judged["fail_on"])]


def verdict(entries: list[dict]) -> dict:
    """The comparison's overall decision, summary sentence and counts (documents.comparison.build).
    A benchmark the change does not reach (measure: changed) is counted, and said apart: the summary
    is the measured ones', or that the change reaches none."""
    measured = [e for e in entries if (e.get("reach") or {}).get("measured", True)]
    skipped = len(entries) - len(measured)
    said = summary(measured, 1 - ALPHA) if measured or not entries else message("summary.unreached", n=skipped)
    tally = counts(entries)
    if skipped:
        tally["not_measured"] = skipped
    return {"decision": overall(entries), "summary": said["text"], "summary_msg": said, "counts": tally}


THROTTLE_WORDS = {"power_cap": "power cap", "hw_slowdown": "hardware slowdown", "sync_boost": "sync boost",
                  "sw_thermal": "thermal (software)", "hw_thermal": "thermal (hardware)",
                  "power_brake": "power brake"}


def gpu_notes(entries: list[dict]) -> list[dict]:
    """What a GPU step's telemetry says, with the remedy: clocks that moved during the rounds, rounds
    that were throttled (left out of the verdict), or once, telemetry that could not be read."""
    out, missing = [], None
    for e in entries:
        samples = e.get("samples") or {}
        rows_b, rows_h = samples.get("base") or [], samples.get("head") or []
        if not _has_gpu(rows_b, rows_h):  # one look per side: a diff may hold very many entries
            continue
        blocks = [s["gpu"] for s in (*rows_b, *rows_h) if s.get("gpu")]
        if not blocks:
            continue
        if all(b.get("unavailable") for b in blocks):
            missing = missing or blocks[0]["unavailable"]
            continue
        low = [b["sm_mhz_min"] for b in blocks if b.get("sm_mhz_min") is not None]
        high = [b["sm_mhz_max"] for b in blocks if b.get("sm_mhz_max") is not None]
        if low and high and max(high) - min(low) > CLOCKS_MOVED_MHZ:
            out.append(message("note.gpu_clocks", name=e["name"], low=min(low), high=max(high)))
        n = len(throttled_rounds(rows_b, rows_h))
        if n:
            reasons = sorted({r for b in blocks for r in b.get("throttle") or []})
            out.append(message("note.gpu_throttled", name=e["name"], n=n, rounds=max(len(rows_b), len(rows_h)),
                               reasons=[THROTTLE_WORDS.get(r, r) for r in reasons]))
    if missing:
        out.append(message("note.gpu_unavailable", why=missing))
    return out


def compile_notes(entries: list[dict]) -> list[dict]:
    """A torch.compile step's graph breaks and recompiles where the sides differ ("head: 3 graph
    breaks, base: 0"), and values taken again because something compiled inside them."""
    out = []
    for e in entries:
        samples = e.get("samples") or {}
        if not any(rows and rows[0].get("compile") for rows in (samples.get("base"), samples.get("head"))):
            continue  # one look per side: a step's samples all have compile counts, or none
        per = {side: [s["compile"] for s in samples.get(side) or [] if s.get("compile")]
               for side in ("base", "head")}
        if not per["base"] and not per["head"]:
            continue
        said = {side: {k: max((c.get(k) or 0 for c in rows), default=0)
                       for k in ("graph_breaks", "recompiles", "retaken")} for side, rows in per.items()}
        b, h = said["base"], said["head"]
        if b["graph_breaks"] != h["graph_breaks"]:
            reasons = sorted({r for c in per["head"] for r in c.get("break_reasons") or []}
                             - {r for c in per["base"] for r in c.get("break_reasons") or []})
            out.append(message("note.graph_breaks", name=e["name"], head=h["graph_breaks"], base=b["graph_breaks"],
                               reasons="; ".join(reasons[:3]) or "—"))
        if b["recompiles"] != h["recompiles"]:
            out.append(message("note.recompiles", name=e["name"], head=h["recompiles"], base=b["recompiles"]))
        retaken = sum(c.get("retaken") or 0 for rows in per.values() for c in rows)
        if retaken:
            out.append(message("note.compile_retaken", name=e["name"], n=retaken))
    return out
