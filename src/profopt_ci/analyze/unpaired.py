"""Unpaired comparisons — `profopt diff`, a stored baseline — of one benchmark or of thousands at once.

In: (Benchmark, base samples, head samples) per benchmark (`compare_unpaired`), or two lists of
values (`unpaired_change`, `memory_change`). Out: per benchmark the metric entries of
`profopt/comparison@1` (docs/data-model.md): step time and throughput by the Hodges–Lehmann shift of
the log values with its Mann–Whitney CI and p (verdict rules: analyze/stats.py), peak memory by its
medians against a tolerance.

Why all at once: a diff of many benchmarks makes two Mann–Whitney comparisons a benchmark, of about 5 + 5
values, where numpy's per-call overhead costs more than the arithmetic. So the samples of one size
are stacked into a (rows × n) array and each step (log, sort, pairwise differences, medians, order
statistics, U, modified z) runs once per group; one benchmark is a group of one row. A sample that
holds no usable value of a metric (None, NaN, ±inf, 0, a negative, a bool, a string) is dropped
from that metric, and the benchmark's metric joins the group of its remaining size.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter
from types import NoneType

import numpy as np
from msgspec import UNSET

from profopt_ci.analyze import stats
from profopt_ci.analyze.ranks import (
    check_better,
    check_threshold,
    finite,
    level,
    mann_whitney_cut,
    mannwhitney_p_rows,
    outlier_counts,
    row_medians,
)
from profopt_ci.analyze.stats import MEMORY_METRICS, SPEED
from profopt_ci.documents.statement import put
from profopt_ci.documents.types import Sample, picked
from profopt_ci.figures import is_measurement
from profopt_ci.specfile.load import Benchmark
from profopt_ci.words.i18n import message

CELLS = 1 << 20  # pairwise differences held at once by one vectorized step: small arrays, little overhead
_ENERGY = "energy_per_step_j"  # a GPU step's (decide.ENERGY): only its rows have it
_SHIFT = {SPEED: "lower", "throughput": "higher", _ENERGY: "lower"}
_ORDER = (SPEED, "throughput", *MEMORY_METRICS, _ENERGY)  # the metrics' order in an entry
_GET = itemgetter(*_ORDER)
_GET_TIMED = itemgetter(*_ORDER[:-1])
_BASE, _HEAD = itemgetter(1), itemgetter(2)
_ALPHA = level(0.99, None)  # the level of a diff: its benchmarks together (analyze.judge.ALPHA)

Item = tuple[Benchmark, Sequence[Mapping], Sequence[Mapping]]
# a metric of some benchmarks left with as many usable values: (metric, items, base rows, head rows)
Group = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def compare_unpaired(items: Sequence[Item]) -> list[dict[str, dict]]:
    """Each item's metric entries, keyed in the order step time, throughput, memories."""
    out: list[dict[str, dict]] = [{} for _ in items]
    n_base = np.fromiter(map(len, map(_BASE, items)), dtype=np.int64, count=len(items))
    n_head = np.fromiter(map(len, map(_HEAD, items)), dtype=np.int64, count=len(items))
    thinned: list[tuple[str, int, np.ndarray, np.ndarray]] = []  # some samples dropped: regrouped below
    for same in _same_shape(n_base, n_head):
        if n_base[same[0]] and n_head[same[0]]:
            chunk = max(1, CELLS // int(n_base[same[0]] * n_head[same[0]]))
            for k in range(0, same.size, chunk):  # rows read as records are decoded per chunk, not all at once
                for group in _shape_group(items, same[k:k + chunk], thinned):
                    _judge(items, group, out)
    for group in _regrouped(thinned):
        _judge(items, group, out)
    if thinned:  # their metrics came in two passes: back into the entry's order
        for i in {i for _, i, _, _ in thinned}:
            out[i] = {m: out[i][m] for m in _ORDER if m in out[i]}
    return out


def unpaired_change(base: Sequence[float], head: Sequence[float], *, threshold_pct: float = 3.0,
                    confidence: float = 0.99, better: str = "lower", alpha: float | None = None) -> dict:
    """Compare two independent samples of positive timings (or throughputs, better="higher").

    On log values: Hodges–Lehmann shift (median of all ln(head_j) - ln(base_i)) with the
    Mann–Whitney CI at 1 - alpha (alpha defaults to 1 - confidence); p two-sided, as
    scipy.stats.mannwhitneyu gives it; outliers counted within each side. Verdict rules: see
    analyze/stats.py (6 values needed on each side).
    """
    check_better(better)
    tau = check_threshold(threshold_pct)
    a = level(confidence, alpha)
    b, h = finite("base", base), finite("head", head)
    if b.size == 0 or h.size == 0:
        res = stats.result_of(_median(np.exp(np.log(b))), _median(np.exp(np.log(h))), b.size, h.size, better, False, a)
        return stats.metric(put(res, "reason", message("why.no_values", side="base" if b.size == 0 else "head")))
    return _shift_rows(b[None, :], h[None, :], better, [tau], a)[0]


def memory_change(base: Sequence[float], head: Sequence[float], *, tolerance_pct: float = 5.0,
                  abs_tolerance_mb: float = stats.ABS_TOLERANCE_MB, better: str = "lower") -> dict:
    """Compare peak memory (MB): medians against max(tolerance_pct % of base, abs_tolerance_mb).

    The keys of `unpaired_change`, with ci_low_pct / ci_high_pct / p_value None, plus `delta_mb`
    and `tolerance_mb`. delta_pct is None when the base median is 0 and the head's is not.
    """
    check_better(better)
    stats.check_tolerances(tolerance_pct, abs_tolerance_mb)
    b, h = finite("base", base, allow_zero=True), finite("head", head, allow_zero=True)
    if b.size == 0 or h.size == 0:
        res = stats.result_of(_median(b), _median(h), b.size, h.size, better, False, None)
        return stats.judge_memory(res, 0, tolerance_pct=tolerance_pct, abs_tolerance_mb=abs_tolerance_mb)
    return _memory_rows(b[None, :], h[None, :], better, [tolerance_pct], abs_tolerance_mb)[0]


def _median(x: np.ndarray) -> float | None:
    return float(row_medians(np.sort(x[None, :], axis=1))[0]) if x.size else None


def _same_shape(n_base: np.ndarray, n_head: np.ndarray) -> list[np.ndarray]:
    """The item indices grouped by (base count, head count), each group in the items' order."""
    if not n_base.size:
        return []
    shape = n_base * (int(n_head.max()) + 1) + n_head
    order = np.argsort(shape, kind="stable")
    starts = np.flatnonzero(np.diff(shape[order], prepend=-1))
    return np.split(order, starts[1:])


def _shape_group(items: Sequence[Item], idx: np.ndarray, thinned: list) -> list[Group]:
    """The metrics of the items `idx`, which all have as many base (and head) samples: those whose
    every sample is usable as groups; the others' usable values appended to `thinned`."""
    chosen = list(map(items.__getitem__, idx.tolist()))
    base_rows = _picked(list(chain.from_iterable(map(_BASE, chosen))))  # one pass over the group's rows
    head_rows = _picked(list(chain.from_iterable(map(_HEAD, chosen))))
    groups = []
    for metric, col_b, col_h in zip(_ORDER, zip(*base_rows, strict=True), zip(*head_rows, strict=True), strict=True):
        if _nowhere(col_b) or _nowhere(col_h):
            continue  # no sample of a side has it: the metric is left out of every entry
        (vb, full_b, none_b), (vh, full_h, none_h) = _values(col_b, idx.size), _values(col_h, idx.size)
        whole = full_b & full_h
        groups.append((metric, idx[whole], vb[whole], vh[whole]))
        for r in np.flatnonzero(~whole & ~none_b & ~none_h).tolist():  # some values usable, some not: rare
            thinned.append((metric, int(idx[r]), vb[r][np.isfinite(vb[r])], vh[r][np.isfinite(vh[r])]))
    return groups


def _regrouped(thinned: list[tuple[str, int, np.ndarray, np.ndarray]]) -> list[Group]:
    """The thinned metrics, stacked by (metric, base count, head count)."""
    by: dict[tuple[str, int, int], list] = {}
    for metric, i, b, h in thinned:
        by.setdefault((metric, b.size, h.size), []).append((i, b, h))
    return [(metric, np.asarray([i for i, _, _ in rows]), np.stack([b for _, b, _ in rows]),
             np.stack([h for _, _, h in rows])) for (metric, _, _), rows in by.items()]


def _picked(rows: Sequence[Mapping]) -> list[tuple]:
    """Each row's values of `_ORDER`, None or UNSET where absent: one visit per row (each is a cache miss at
    10^6). Rows of a read file (documents.types.Sample) are read field by field in C."""
    if rows and type(rows[0]) is Sample:
        try:
            return picked(rows, _ORDER)
        except TypeError:  # read rows beside built ones (a dict has no astuple)
            pass
    try:
        return list(map(_GET, rows))
    except (KeyError, TypeError):
        pass
    try:  # a CPU step's rows: no energy
        return [(*_GET_TIMED(r), r.get(_ENERGY)) for r in rows]
    except (KeyError, TypeError):  # rows rebuilt from a stored summary hold only the metrics it has
        return [tuple(r.get(m) for m in _ORDER) for r in rows]


def _nowhere(col: tuple) -> bool:
    """No row has the metric: None (a dict row without it) or UNSET (a read row's absent field)."""
    return (col[0] is None or col[0] is UNSET) and col.count(None) + col.count(UNSET) == len(col)


def _values(col: tuple, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A column as a (count × samples) float array, NaN where a value is not usable; which rows are
    all usable, and which have no usable value."""
    if not set(map(type, col)) <= {float, NoneType}:  # an int, a bool, a string, UNSET: each value asked
        col = tuple(float(v) if is_measurement(v) else None for v in col)
    values = np.asarray(col, dtype=float).reshape(count, -1)  # None → NaN
    usable = np.isfinite(values) & (values > 0)
    values[~usable] = np.nan
    return values, usable.all(axis=1), ~usable.any(axis=1)


def _judge(items: Sequence[Item], group: Group, out: list[dict]) -> None:
    """One group's metric entries into out[item][metric], with each benchmark's settings."""
    metric, idx, b, h = group
    if not idx.size:
        return
    rows = idx.tolist()
    if metric in _SHIFT:
        taus = _Checked(check_threshold)
        found = _shift_rows(b, h, _SHIFT[metric], [taus[items[i][0].settings.threshold] for i in rows], _ALPHA)
    else:
        tolerances = _Checked(lambda tol: stats.check_tolerances(tol, stats.ABS_TOLERANCE_MB) or tol)
        found = _memory_rows(b, h, "lower", [tolerances[items[i][0].settings.memory_tolerance] for i in rows],
                             stats.ABS_TOLERANCE_MB)
    for i, res in zip(rows, found, strict=True):
        out[i][metric] = res


class _Checked(dict):
    """check(value) per distinct setting value, as it is first looked up (raising on a bad one)."""

    def __init__(self, check) -> None:
        super().__init__()
        self.check = check

    def __missing__(self, value):
        self[value] = out = self.check(value)
        return out


def _shift_rows(raw_b: np.ndarray, raw_h: np.ndarray, better: str, taus: list[float], alpha: float) -> list[dict]:
    """The timing (or throughput) entry of each row pair: HL shift, Mann–Whitney CI and p, verdict."""
    rows, m, n = raw_b.shape[0], raw_b.shape[1], raw_h.shape[1]
    b, h = np.log(raw_b), np.log(raw_h)
    base_med = row_medians(np.sort(np.exp(b), axis=1)).tolist()
    head_med = row_medians(np.sort(np.exp(h), axis=1)).tolist()
    diffs = np.sort((h[:, :, None] - b[:, None, :]).reshape(rows, n * m), axis=1)
    hl = row_medians(diffs).tolist()
    cut = mann_whitney_cut(m, n, alpha)
    lo = diffs[:, cut - 1].tolist() if cut >= 1 else [None] * rows
    hi = diffs[:, n * m - cut].tolist() if cut >= 1 else [None] * rows
    p = mannwhitney_p_rows(b, h, diffs)
    outliers = (outlier_counts(b) + outlier_counts(h)).tolist()
    result_of, judge = stats.result_of, stats.judge_shift
    return [judge(result_of(bm, hm, m, n, better, False, alpha), d, low, high, pv, k, tau=tau, alpha=alpha)
            for bm, hm, d, low, high, pv, k, tau in zip(base_med, head_med, hl, lo, hi, p, outliers, taus, strict=True)]


def _memory_rows(b: np.ndarray, h: np.ndarray, better: str, tolerances: list[float],
                 abs_tolerance_mb: float) -> list[dict]:
    """The memory entry of each row pair: medians against the tolerance."""
    rows, m, n = b.shape[0], b.shape[1], h.shape[1]
    base_med = row_medians(np.sort(b, axis=1)).tolist()
    head_med = row_medians(np.sort(h, axis=1)).tolist()
    enough = min(m, n) >= stats.MIN_MEMORY_RUNS
    outliers = (outlier_counts(b) + outlier_counts(h)).tolist() if enough else [0] * rows
    result_of, judge = stats.result_of, stats.judge_memory
    return [judge(result_of(bm, hm, m, n, better, False, None), k, tolerance_pct=tol, abs_tolerance_mb=abs_tolerance_mb)
            for bm, hm, k, tol in zip(base_med, head_med, outliers, tolerances, strict=True)]
