"""What a comparison says beside its entries, shared by compare, diff and stored: what differs besides
the code (`differences`: params, env, the machine's fingerprint), the notes on outliers a CI decided
anyway, on step times that follow page faults, on GPU clocks and on torch.compile, the policy and
the overall verdict. The entries themselves are the judge's (analyze/judge.py)."""
from __future__ import annotations

from profopt_ci.analyze.decide import (
    SPEED,
    counts,
    overall,
    policy_failures,
    summary,
    throttled_rounds,
)
from profopt_ci.analyze.judge import ALPHA, has_gpu
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.measure.fingerprint import material_keys
from profopt_ci.measure.gpu import CLOCKS_MOVED_MHZ
from profopt_ci.measure.rounds import RoundState
from profopt_ci.specfile.load import Benchmark
from profopt_ci.words.i18n import message


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
        if not has_gpu(rows_b, rows_h):  # one look per side: a diff may hold very many entries
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
