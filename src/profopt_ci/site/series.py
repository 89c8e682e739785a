"""Per hardware label and benchmark, the nightly series the pages draw, and the label's own marks.

In: the `Nightly` rows of the store (site/nightlies.py), oldest first. Out: one `Label` per
hardware label: its nightlies and a `Series` per benchmark — the nightlies it appears in (it ran,
or it failed and says why), each metric's medians and CIs (None where a nightly has no figure) —
and per nightly the environment's changes (fingerprint fields that differ from the nightly before)
and how far the runner probe was from the nightlies before it.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from profopt_ci.measure.runner import MIN_HISTORY, OFF_PCT
from profopt_ci.site.nightlies import Nightly

METRIC_ORDER = ("step_time_ms", "throughput", "peak_memory_mb", "cpu_time_ms", "cuda_max_allocated_mb",
                "cuda_max_reserved_mb", "instructions", "est_cycles")
RUNNER_WINDOW = 20  # the runner probe is judged against this many nightlies before it, as compare does


@dataclass(frozen=True)
class Values:
    median: list[float | None]
    low: list[float | None]
    high: list[float | None]


@dataclass(frozen=True)
class Series:
    label: str
    name: str
    unit: str | None
    params: str
    at: list[int]                 # index of each point's nightly in its Label's nightlies
    failed: list[str | None]      # the status when that nightly did not finish this benchmark
    metrics: dict[str, Values]    # in METRIC_ORDER, then the recorded values by name

    def __len__(self) -> int:
        return len(self.at)


@dataclass(frozen=True)
class Label:
    label: str
    nightlies: list[Nightly]
    env_changes: dict[int, list[tuple[str, str, str]]]   # nightly index → (field, before, after)
    runner_off: dict[int, float]                          # nightly index → % off the nightlies before
    series: dict[str, Series] = field(default_factory=dict)


def _metric_keys(keys: set[str]) -> list[str]:
    known = [k for k in METRIC_ORDER if k in keys]
    return known + sorted(keys - set(known))


def _series(label: str, name: str, nights: list[Nightly]) -> Series:
    at, failed, keys = [], [], set()
    unit, params = None, ""
    for i, n in enumerate(nights):
        run = n.runs.get(name)
        if run is not None:
            at.append(i)
            failed.append(None)
            keys.update(run.metrics)
            unit, params = run.unit or unit, run.params or params
        elif name in n.failed:
            at.append(i)
            failed.append(n.failed[name])
    metrics = {}
    for key in _metric_keys(keys):
        med, low, high = [], [], []
        for i in at:
            run = nights[i].runs.get(name)
            p = run.metrics.get(key) if run is not None else None
            med.append(p.median if p else None)
            low.append(p.low if p else None)
            high.append(p.high if p else None)
        metrics[key] = Values(med, low, high)
    return Series(label, name, unit, params, at, failed, metrics)


def env_changes(nights: list[Nightly]) -> dict[int, list[tuple[str, str, str]]]:
    out = {}
    for i in range(1, len(nights)):
        before, after = nights[i - 1].env, nights[i].env
        moved = [(k, before.get(k, "—"), after.get(k, "—")) for k in sorted(set(before) | set(after))
                 if before.get(k) != after.get(k)]
        if moved:
            out[i] = moved
    return out


def runner_off(nights: list[Nightly]) -> dict[int, float]:
    """Nightlies whose runner probe was more than OFF_PCT from the median of the ones before it."""
    out: dict[int, float] = {}
    history: dict[str, list[float]] = {}
    for i, n in enumerate(nights):
        if n.runner_ms is None:
            continue
        before = history.setdefault(n.runner_key, [])
        recent = before[-RUNNER_WINDOW:]
        if len(recent) >= MIN_HISTORY:
            off = (n.runner_ms / statistics.median(recent) - 1) * 100
            if abs(off) > OFF_PCT:
                out[i] = round(off, 1)
        before.append(n.runner_ms)
    return out


def labels_of(nights: list[Nightly]) -> list[Label]:
    """One Label per hardware label (sorted), each with a Series per benchmark (sorted by name)."""
    by_label: dict[str, list[Nightly]] = {}
    for n in nights:
        by_label.setdefault(n.label, []).append(n)
    out = []
    for label in sorted(by_label):
        group = by_label[label]
        names = sorted({name for n in group for name in (*n.runs, *n.failed)})
        lab = Label(label, group, env_changes(group), runner_off(group))
        lab.series.update({name: _series(label, name, group) for name in names})
        out.append(lab)
    return out
