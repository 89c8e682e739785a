"""Many benchmarks' unpaired metrics at once: what `decide.compare_metrics(..., paired=False)` gives each.

In: (Benchmark, base samples, head samples) per benchmark, as `profopt diff` and the stored-baseline
compare have them. Out: one metrics dict per benchmark, equal — every float, verdict and reason —
to `[decide.compare_metrics(b, base, head, paired=False) for b, base, head in items]`.

Why: a diff of 10^5 benchmarks makes 2·10^5 Mann–Whitney comparisons and 10^5 memory comparisons of
about 5 + 5 values; numpy's per-call overhead on 5 values costs more than the arithmetic. Here the
metrics with the same sample counts are stacked into one (rows × n) array and each step (log, sort,
pairwise differences, medians, order statistics, U, modified z) runs once per group. The floats are
the scalar path's: the same numpy ufuncs element by element, the same formulas in the same order, and
the dicts come from the same builders (`stats.result_of`, `judge_shift`, `judge_memory`).

What is rare goes to the scalar functions, which stay the reference: a benchmark with an int, a
bool or a string for a metric, with NaN, ±inf, 0 or a negative beside usable values of a metric
(those the scalar path drops), or with more than `MAX_N` samples a side, is compared by
`compare_metrics` whole; a row whose
MAD is 0 while its deviations are not gets its outliers from `ranks.modified_z_outliers`. Ties
and larger samples take the normal approximation of the p-value (`ranks.mwu_normal_p_many`).
Tested against the scalar path on random inputs in tests/test_batch_stats.py.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter
from types import NoneType

import numpy as np

from profopt_ci.analyze import decide, stats
from profopt_ci.analyze.ranks import (
    OUTLIER_CUTOFF,
    check_threshold,
    level,
    mann_whitney_cut,
    modified_z_outliers,
    mwu_exact_tail,
    mwu_normal_p_many,
)
from profopt_ci.documents.records import Rows
from profopt_ci.spec.load import Benchmark

MAX_N = 64  # samples a side; beyond, fast_median switches to np.median: the scalar path takes them
CHUNK = 4096  # items per vectorized step: the arrays stay small, the per-call overhead negligible
_SHIFT = {decide.SPEED: "lower", "throughput": "higher"}
_ORDER = (*_SHIFT, *decide.MEMORY_METRICS)  # compare_metrics' key order
_GET = itemgetter(*_ORDER)
_BASE, _HEAD = itemgetter(1), itemgetter(2)
_ALPHA = level(0.99, None)  # unpaired_change's default level, as compare_metrics calls it

Item = tuple[Benchmark, Sequence[Mapping], Sequence[Mapping]]


def compare_unpaired(items: Sequence[Item]) -> list[dict[str, dict]]:
    """`decide.compare_metrics(bench, base, head, paired=False)` for each item, vectorized."""
    out: list[dict[str, dict]] = [{} for _ in items]
    if not out:
        return out
    n_base = np.fromiter(map(len, map(_BASE, items)), dtype=np.int64, count=len(items))
    n_head = np.fromiter(map(len, map(_HEAD, items)), dtype=np.int64, count=len(items))
    fits = (n_base > 0) & (n_base <= MAX_N) & (n_head > 0) & (n_head <= MAX_N)
    scalar = np.flatnonzero(~fits).tolist()
    shape = np.where(fits, n_base * (MAX_N + 1) + n_head, -1)
    order = np.argsort(shape, kind="stable")  # the items of one shape together, in their order
    starts = np.flatnonzero(np.diff(shape[order], prepend=-2))
    for same in np.split(order, starts[1:]):
        if fits[same[0]]:
            for k in range(0, same.size, CHUNK):  # rows read as records are decoded per chunk, not all at once
                scalar += _shape_group(items, same[k:k + CHUNK], out)
    for i in sorted(scalar):
        out[i] = decide.compare_metrics(*items[i], paired=False)
    return out


def _shape_group(items: Sequence[Item], idx: np.ndarray, out: list[dict]) -> list[int]:
    """Fill `out` for the items `idx`, which all have as many base (and head) samples; → the rest."""
    chosen = list(map(items.__getitem__, idx.tolist()))
    base_rows = list(chain.from_iterable(map(_picked, map(_BASE, chosen))))
    head_rows = list(chain.from_iterable(map(_picked, map(_HEAD, chosen))))
    scalar = np.zeros(idx.size, dtype=bool)
    columns = []
    for metric, col_b, col_h in zip(_ORDER, _columns(base_rows), _columns(head_rows), strict=True):
        if _nowhere(col_b) or _nowhere(col_h):
            continue  # no sample of a side has it: compare_metrics skips the metric for every item
        (vb, full_b, none_b), (vh, full_h, none_h) = _values(col_b, idx.size, scalar), _values(col_h, idx.size, scalar)
        skip = none_b | none_h  # no usable value on a side: skipped, whatever the other side holds
        scalar |= ~skip & ~(full_b & full_h)  # some values usable, some not: the scalar path drops them
        columns.append((metric, vb, vh, ~skip))
    for metric, vb, vh, present in columns:
        rows = present & ~scalar
        if rows.any():
            (_shift_rows if metric in _SHIFT else _memory_rows)(items, metric, idx[rows], vb[rows], vh[rows], out)
    return idx[scalar].tolist()


def _picked(rows: Sequence[Mapping]) -> list[tuple]:
    """Each row's values of `_ORDER`, None where absent: one visit per row (each is a cache miss at
    10^6). Rows of a read file (documents.records.Rows) decode just these keys from their text."""
    if isinstance(rows, Rows):
        return rows.pick(_ORDER)
    try:
        return list(map(_GET, rows))
    except (KeyError, TypeError):  # rows rebuilt from a stored summary hold only the metrics it has
        return [tuple(r.get(m) for m in _ORDER) for r in rows]


def _columns(values: list[tuple]) -> list[tuple]:
    """The values of each metric of `_ORDER` over all rows (from `_picked`)."""
    return list(zip(*values, strict=True))


def _nowhere(col: tuple) -> bool:
    return col[0] is None and col.count(None) == len(col)


def _values(col: tuple, count: int, scalar: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A column as a (count × samples) float array, which rows are all usable (positive finite
    floats) and which have no usable value; a row with a bool, an int or a string → `scalar`."""
    if not set(map(type, col)) <= {float, NoneType}:
        odd = np.asarray([type(v) not in (float, NoneType) for v in col]).reshape(count, -1).any(axis=1)
        scalar |= odd
        col = tuple(v if type(v) is float else None for v in col)
    values = np.asarray(col, dtype=float).reshape(count, -1)  # None → NaN: neither is usable
    usable = np.isfinite(values) & (values > 0)
    return values, usable.all(axis=1), ~usable.any(axis=1)


def _mid(s: np.ndarray) -> np.ndarray:
    """Row medians of row-sorted `s`, as `ranks._list_median` computes each."""
    k = s.shape[1] // 2
    return s[:, k] if s.shape[1] % 2 else (s[:, k - 1] + s[:, k]) / 2.0


def _shift_rows(items: Sequence[Item], metric: str, idx: np.ndarray, raw_b: np.ndarray, raw_h: np.ndarray,
                out: list[dict]) -> None:
    """`stats.unpaired_change` of each row (timings and throughputs) into out[item][metric]."""
    m, n = raw_b.shape[1], raw_h.shape[1]
    rows = idx.tolist()
    b, h = np.log(raw_b), np.log(raw_h)
    base_med = _mid(np.sort(np.exp(b), axis=1)).tolist()
    head_med = _mid(np.sort(np.exp(h), axis=1)).tolist()
    diffs = np.sort((h[:, :, None] - b[:, None, :]).reshape(len(rows), n * m), axis=1)
    hl = _mid(diffs).tolist()
    cut = mann_whitney_cut(m, n, _ALPHA)
    lo = diffs[:, cut - 1].tolist() if cut >= 1 else [None] * len(rows)
    hi = diffs[:, n * m - cut].tolist() if cut >= 1 else [None] * len(rows)
    p = _mwu_p(b, h, diffs)
    outliers = (_outlier_counts(b) + _outlier_counts(h)).tolist()
    better, taus = _SHIFT[metric], _Checked(check_threshold)
    result_of, judge = stats.result_of, stats.judge_shift
    for i, bm, hm, d, low, high, pv, k in zip(rows, base_med, head_med, hl, lo, hi, p, outliers, strict=True):
        res = result_of(bm, hm, m, n, better, False, _ALPHA)
        out[i][metric] = judge(res, d, low, high, pv, k, tau=taus[items[i][0].settings.threshold_pct], alpha=_ALPHA)


class _Checked(dict):
    """check(value) per distinct setting value, as it is first looked up (raising as the scalar path would)."""

    def __init__(self, check) -> None:
        super().__init__()
        self.check = check

    def __missing__(self, value):
        self[value] = out = self.check(value)
        return out


def _mwu_p(x: np.ndarray, y: np.ndarray, diffs: np.ndarray) -> list[float | None]:
    """`ranks.mannwhitney_p(x[r], y[r])` of each row; `diffs` holds each row's y_j - x_i."""
    n1, n2 = y.shape[1], x.shape[1]
    u1 = np.count_nonzero(diffs > 0, axis=1).astype(float) + 0.5 * np.count_nonzero(diffs == 0, axis=1).astype(float)
    u = np.maximum(u1, n1 * n2 - u1)
    both = np.sort(np.concatenate((y, x), axis=1), axis=1)
    tied = np.any(both[:, 1:] == both[:, :-1], axis=1)
    if n1 <= 8 or n2 <= 8:  # exact null distribution, where there are no ties
        lo = np.where(tied, 0, n1 * n2 - u.astype(np.int64))
        p: list[float | None] = np.minimum(2.0 * mwu_exact_tail(n1, n2)[lo], 1.0).tolist()
        normal = np.flatnonzero(tied)
    else:
        p = [None] * len(u)
        normal = np.arange(len(u))
    if normal.size:  # the normal approximation, tie-corrected where there are ties
        tie_term = np.zeros(normal.size)
        for k in np.flatnonzero(tied[normal]).tolist():
            r = normal[k]
            tie_term[k] = float(sum(c**3 - c for c in Counter(y[r].tolist() + x[r].tolist()).values()))
        for r, value in zip(normal.tolist(), mwu_normal_p_many(u[normal], n1, n2, tie_term), strict=True):
            p[r] = value
    return p


def _outlier_counts(x: np.ndarray) -> np.ndarray:
    """How many values of each row `ranks.modified_z_outliers` flags."""
    med = _mid(np.sort(x, axis=1))
    eps = 1e-12 * np.maximum(1.0, np.abs(med))
    dev = x - med[:, None]
    dev[np.abs(dev) <= eps[:, None]] = 0.0
    mad = _mid(np.sort(np.abs(dev), axis=1))
    flat = mad == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = 0.6745 * dev / np.where(flat, 1.0, mad)[:, None]
    counts = np.count_nonzero(np.abs(z) > OUTLIER_CUTOFF, axis=1)
    counts[flat] = 0  # every deviation 0: every score 0
    for r in np.flatnonzero(flat & np.any(dev != 0, axis=1)):  # MAD 0, mean deviation not: rare
        counts[r] = sum(modified_z_outliers(x[r]))
    return counts


def _memory_rows(items: Sequence[Item], metric: str, idx: np.ndarray, b: np.ndarray, h: np.ndarray,
                 out: list[dict]) -> None:
    """`stats.memory_change` of each row, with compare_metrics' tolerances, into out[item][metric]."""
    m, n = b.shape[1], h.shape[1]
    rows = idx.tolist()
    base_med = _mid(np.sort(b, axis=1)).tolist()
    head_med = _mid(np.sort(h, axis=1)).tolist()
    enough = min(m, n) >= stats.MIN_MEMORY_RUNS
    outliers = (_outlier_counts(b) + _outlier_counts(h)).tolist() if enough else [0] * len(rows)
    tolerances = _Checked(lambda tol: stats.check_tolerances(tol, stats.ABS_TOLERANCE_MB))
    result_of, judge = stats.result_of, stats.judge_memory
    for i, bm, hm, k in zip(rows, base_med, head_med, outliers, strict=True):
        tol = items[i][0].settings.memory_tolerance_pct
        tolerances[tol]  # noqa: B018 (checked once per distinct value)
        out[i][metric] = judge(result_of(bm, hm, m, n, "lower", False, None), k, tolerance_pct=tol,
                               abs_tolerance_mb=stats.ABS_TOLERANCE_MB)
