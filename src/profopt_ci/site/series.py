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

import numpy as np

from profopt_ci.measure.runner import MIN_HISTORY, OFF_PCT
from profopt_ci.site.nightlies import Nightly

METRIC_ORDER = ("step_time_ms", "throughput", "peak_memory_mb", "cpu_time_ms", "cuda_max_allocated_mb",
                "cuda_max_reserved_mb", "instructions", "est_cycles")
RUNNER_WINDOW = 20  # the runner probe is judged against this many nightlies before it, as compare does


@dataclass(frozen=True)
class Values:
    """One metric of a series, a value per point; NaN where that nightly has no figure."""

    median: list[float]
    low: list[float]
    high: list[float]


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


def _all_series(label: str, nights: list[Nightly]) -> dict[str, Series]:
    """Every benchmark's series of one label: the nightlies' flat metric lists laid into one
    (benchmark × [median, low, high] × nightly) array per metric, then cut per benchmark."""
    names = sorted({name for n in nights for name in (*n.names, *n.failed)})
    index = {name: j for j, name in enumerate(names)}
    ran = np.zeros((len(names), len(nights)), dtype=bool)
    present = np.zeros((len(names), len(nights)), dtype=bool)   # ran, or failed and said why
    grids: dict[str, np.ndarray] = {}
    unit: dict[str, str | None] = {}
    params: dict[str, str] = {}
    last_names: list[str] | None = None
    cols = np.zeros(0, dtype=np.int64)
    for i, n in enumerate(nights):
        if n.names != last_names:  # consecutive nightlies usually run the same benchmarks
            last_names, cols = n.names, np.asarray([index[name] for name in n.names], dtype=np.int64)
            unit.update({name: u for name, u in zip(n.names, n.units, strict=True) if u})
            params.update({name: p for name, p in zip(n.names, n.params, strict=True) if p})
        ran[cols, i] = True
        for name in n.failed:
            present[index[name], i] = True
        for key, flat in n.metrics.items():
            grid = grids.get(key)
            if grid is None:
                grid = grids[key] = np.full((len(names), 3, len(nights)), np.nan)
            grid[cols, :, i] = np.frombuffer(flat, dtype="<f8").reshape(-1, 3)
    present |= ran
    out = {}
    for name, j in index.items():
        at = np.flatnonzero(present[j])
        failed = [None if ok else nights[i].failed.get(name) for i, ok in zip(at.tolist(), ran[j, at].tolist(), strict=True)]
        metrics = {}
        for key in _metric_keys({k for k, g in grids.items() if not np.isnan(g[j, 0, at]).all()}):
            g = grids[key][j][:, at]
            metrics[key] = Values(g[0].tolist(), g[1].tolist(), g[2].tolist())
        out[name] = Series(label, name, unit.get(name), params.get(name, ""), at.tolist(), failed, metrics)
    return out


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
        lab = Label(label, group, env_changes(group), runner_off(group))
        lab.series.update(_all_series(label, group))
        out.append(lab)
    return out
