"""The runner's own speed: a short fixed probe timed in every run, and how far it is off the label's history.

In: nothing (the probe is a fixed pure-Python workload run in profopt's own process), and for the
check the probes of the label's stored nightly runs. Out: `probe()` → {"probe": PROBE, "ms": best
time, "python": version}; `check(record, history)` → the same with the history's median, how many
runs it rests on, `off_pct`, and `slow`/`fast` when it is more than OFF_PCT away.

Why: a VM in its first minutes after boot, or one whose neighbours are busy, ran every step 38–50%
slower; the paired verdict was still right, but two runs of the same PR gave CIs that did not
overlap and nothing told the reader the runner was off. The CI covers the variation within one
run; this says when the run as a whole was not on its usual machine state.
"""
from __future__ import annotations

import platform
import statistics
import time

from profopt_ci.words.i18n import message

PROBE = "python-loop@1"  # the workload below; a new workload is a new name (histories do not mix)
REPEATS = 7
OFF_PCT = 20.0  # beyond this share from the label's median, the report says so
MIN_HISTORY = 3


def _work(n: int = 200_000) -> int:
    total = 0
    for i in range(n):
        total += (i * i) % 7
    return total


def probe(repeats: int = REPEATS) -> dict:
    """The best of `repeats` timings of the fixed workload (its cost: docs/experiments.md), in ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        _work()
        best = min(best, (time.perf_counter_ns() - start) / 1e6)
    return {"probe": PROBE, "ms": round(best, 4), "python": platform.python_version()}


def combine(*records: dict | None) -> dict | None:
    """One record from probes taken before and after the run (the median of their times)."""
    usable = [r for r in records if r and isinstance(r.get("ms"), (int, float))]
    if not usable:
        return None
    return {**usable[0], "ms": round(statistics.median(r["ms"] for r in usable), 4), "samples": len(usable)}


def history_of(docs: list[dict], record: dict) -> list[float]:
    """The probe times of stored runs (baseline@1 `runner`) taken with the same probe and Python."""
    out = []
    for doc in docs:
        r = doc.get("runner") or {}
        if r.get("probe") == record.get("probe") and r.get("python") == record.get("python") \
                and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0:
            out.append(float(r["ms"]))
    return out


def check(record: dict, history: list[float], label: str) -> tuple[dict, dict | None]:
    """The record with the history's figures, and the report's note when the runner was off."""
    out = {**record, "history_ms": None, "history_n": len(history), "off_pct": None, "state": "no history"}
    if len(history) < MIN_HISTORY or not record.get("ms"):
        return out, None
    median = statistics.median(history)
    off = (record["ms"] / median - 1) * 100
    out.update(history_ms=round(median, 4), off_pct=round(off, 1),
               state="slow" if off > OFF_PCT else "fast" if off < -OFF_PCT else "usual")
    if out["state"] == "usual":
        return out, None
    note = message("note.runner_slow" if off > 0 else "note.runner_fast", off_pct=abs(off), ms=record["ms"],
                   median_ms=median, runs=len(history), label=label)
    return out, note
