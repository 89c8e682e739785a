"""Rank statistics: samples in, the numbers a verdict is built from out (no verdicts here).

In: lists of finite floats (timings, log-ratios), or 2-d arrays of many samples of one size, a row
each (a `diff` of thousands of benchmarks: one list is one row). Out: medians, modified z-scores and outlier
flags or counts; Walsh averages (the paired Hodges–Lehmann estimate is their median); how many
order statistics the Wilcoxon signed-rank / Mann–Whitney CI cuts off at a level (exact null
distributions for small samples, normal approximation beyond); two-sided p-values as scipy gives
them. Also the input checks every verdict function runs first (ValueError naming the bad value).
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

import numpy as np

MIN_ROUNDS = 6
OUTLIER_CUTOFF = 3.5
# Exact null distributions up to here (a few ms to compute, cached), normal approximation beyond:
# at these sizes it cuts 3-4 order statistics fewer than the exact one (out of ~2,000-5,000), so it
# errs a little on the wide, conservative side.
EXACT_SIGNED_RANK_MAX_N = 100
EXACT_MWU_MAX_CELLS = 10_000
_BETTER = ("lower", "higher")
_NORMAL = NormalDist()


# ---------------------------------------------------------------------------------------------
# Input checks


def finite(name: str, values: Sequence[float], *, allow_zero: bool = False) -> np.ndarray:
    out = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] = {v!r} is not a number") from None
        if not math.isfinite(f):
            raise ValueError(f"{name}[{i}] = {f} is not finite; drop failed samples before comparing")
        if f < 0 or (f == 0 and not allow_zero):
            need = "non-negative" if allow_zero else "positive"
            raise ValueError(f"{name}[{i}] = {f} must be {need}; drop failed samples before comparing")
        out.append(f)
    return np.asarray(out, dtype=float)


def check_better(better: str) -> None:
    if better not in _BETTER:
        raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")


def level(confidence: float, alpha: float | None) -> float:
    """The alpha the CI and the verdict use: `alpha` when given, else 1 - confidence."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    a = 1.0 - confidence if alpha is None else float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    return a


def check_threshold(threshold_pct: float) -> float:
    t = float(threshold_pct)
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"threshold_pct must be a non-negative number, not {threshold_pct!r}")
    return t


# ---------------------------------------------------------------------------------------------
# Descriptive helpers


def sorted_median(sorted_values: np.ndarray) -> float:
    """The median of an already sorted 1-d array (as np.median gives it)."""
    return float(row_medians(sorted_values[None, :])[0])


def modified_z_rows(x: np.ndarray) -> np.ndarray:
    """Iglewicz–Hoaglin modified z-scores, 0.6745 (x - median) / MAD, of each row of a 2-d array.

    When the MAD is 0 (more than half the values tie at the median) the scale falls back to
    1.253314 * mean absolute deviation from the median (same convention as IBM SPSS); when that is
    0 too every value is the median and every score is 0. Deviations at float-rounding size
    (1e-12 relative) count as 0, so values equal up to rounding are not outliers of each other.
    """
    med = row_medians(np.sort(x, axis=1))
    eps = 1e-12 * np.maximum(1.0, np.abs(med))
    dev = x - med[:, None]
    dev[np.abs(dev) <= eps[:, None]] = 0.0
    mad = row_medians(np.sort(np.abs(dev), axis=1))
    flat = mad == 0
    z = np.zeros_like(dev)
    if not flat.all():
        z[~flat] = 0.6745 * dev[~flat] / mad[~flat, None]
    spread = flat & np.any(dev != 0, axis=1)  # MAD 0, mean deviation not: rare
    if spread.any():
        z[spread] = dev[spread] / (1.253314 * np.mean(np.abs(dev[spread]), axis=1))[:, None]
    return z


def outlier_counts(x: np.ndarray, cutoff: float = OUTLIER_CUTOFF) -> np.ndarray:
    """How many values of each row of a 2-d array have |modified z-score| > cutoff."""
    if x.shape[1] == 0:
        return np.zeros(x.shape[0], dtype=np.int64)
    return np.count_nonzero(np.abs(modified_z_rows(x)) > cutoff, axis=1)


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """`modified_z_rows` of one list of finite values."""
    xs = np.asarray(values, dtype=float)
    if xs.size == 0:
        return []
    if not np.all(np.isfinite(xs)):
        raise ValueError("modified z-scores: values must be finite")
    return modified_z_rows(xs[None, :])[0].tolist()


def modified_z_outliers(values: Sequence[float], cutoff: float = OUTLIER_CUTOFF) -> list[bool]:
    """Which values have |modified z-score| > cutoff (3.5, Iglewicz & Hoaglin)."""
    return [abs(z) > cutoff for z in modified_z_scores(values)]


def row_medians(s: np.ndarray) -> np.ndarray:
    """The median of each row of a row-sorted 2-d array (as np.median gives each)."""
    k = s.shape[1] // 2
    return s[:, k] if s.shape[1] % 2 else (s[:, k - 1] + s[:, k]) / 2.0


# ---------------------------------------------------------------------------------------------
# Hodges–Lehmann estimates and the distribution-free intervals around them


def walsh_averages(d: Sequence[float]) -> np.ndarray:
    """All (d_i + d_j) / 2 for i <= j, sorted."""
    x = np.asarray(d, dtype=float)
    i, j = np.triu_indices(x.size)
    return np.sort((x[i] + x[j]) / 2.0)


def _lower_tail_cut(counts: np.ndarray, total: int, alpha: float) -> int:
    """1 + the largest j with P(T <= j) <= alpha/2, from exact counts of T = 0, 1, …; 0 if none."""
    cum = np.cumsum(counts)  # Python ints (object dtype): exact
    cut = 0
    for j, c in enumerate(cum):
        if c / total <= alpha / 2:  # int / int is correctly rounded, however large
            cut = j + 1
        else:
            break
    return cut


def _normal_cut(mean: float, sd: float, alpha: float) -> int:
    """Normal approximation (continuity-corrected) of `_lower_tail_cut`."""
    z = normal_isf(alpha / 2)
    return max(0, math.floor(mean - 0.5 - z * sd) + 1)


def _sps():
    """scipy.stats, imported on first use: only a Mann–Whitney of more than EXACT_MWU_MAX_CELLS
    pairs needs it."""
    from scipy import stats

    return stats


@lru_cache(maxsize=512)
def signed_rank_cut(n: int, alpha: float) -> int:
    """How many of the smallest (and of the largest) Walsh averages fall outside the 1-alpha CI.

    The interval is [W_(c), W_(M+1-c)] (1-based order statistics of the M = n(n+1)/2 Walsh
    averages) with c - 1 the largest j such that P(T+ <= j) <= alpha/2 under the null signed-rank
    distribution (Hollander & Wolfe). 0 means no finite interval exists at this level.
    """
    m_total = n * (n + 1) // 2
    if n <= EXACT_SIGNED_RANK_MAX_N:
        cut = _lower_tail_cut(_signed_rank_counts(n), 2**n, alpha)  # alpha < 1 never needs the upper half
    else:
        cut = _normal_cut(m_total / 2, math.sqrt(n * (n + 1) * (2 * n + 1) / 24), alpha)
    return min(cut, (m_total + 1) // 2)


@lru_cache(maxsize=512)
def _mwu_cumulative(m: int, n: int) -> tuple[int, ...]:
    """Exact P(U <= j) * C(m+n, m) for j = 0 … mn//2 under the null (no ties), in Python ints.

    Counts of U are the coefficients of the Gaussian binomial [m+n choose m]_q
    = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), truncated at degree mn//2 (the rest is symmetric).
    """
    half = m * n // 2
    c = np.zeros(half + 1, dtype=object)
    c[0] = 1
    for i in range(1, m + 1):
        k = n + i
        if k <= half:
            c[k:] = c[k:] - c[:-k]
        for r in range(min(i, half + 1)):  # divide by (1 - q^i): cumulative sum with stride i
            c[r::i] = np.cumsum(c[r::i])
    return tuple(int(v) for v in np.cumsum(c))


@lru_cache(maxsize=512)
def mann_whitney_cut(m: int, n: int, alpha: float) -> int:
    """How many of the smallest (and largest) of the m*n differences fall outside the 1-alpha CI.

    The interval is [D_(c), D_(mn+1-c)] with c - 1 the largest j such that P(U <= j) <= alpha/2
    under the null Mann–Whitney distribution. 0 means no finite interval exists at this level.
    """
    cells = m * n
    if cells <= EXACT_MWU_MAX_CELLS:
        total = math.comb(m + n, m)
        cut = 0
        for j, c in enumerate(_mwu_cumulative(m, n)):
            if c / total > alpha / 2:  # int / int is correctly rounded, however large
                break
            cut = j + 1
    else:
        cut = _normal_cut(cells / 2, math.sqrt(cells * (m + n + 1) / 12), alpha)
    return min(cut, (cells + 1) // 2)


def interval(sorted_stats: np.ndarray, cut: int) -> tuple[float | None, float | None]:
    if cut < 1:
        return None, None
    return float(sorted_stats[cut - 1]), float(sorted_stats[sorted_stats.size - cut])


# ---------------------------------------------------------------------------------------------
# p-values


def wilcoxon_p(d: np.ndarray) -> float | None:
    """Two-sided p of the Wilcoxon signed-rank test of `d`, equal to scipy.stats.wilcoxon(d).pvalue
    (zeros dropped, no continuity correction, method "auto"): the exact null distribution up to 50
    values without ties or zeros, every sign flip enumerated up to 13 values with them, the normal
    approximation with tie correction beyond. Done here so that a compare need not import
    scipy.stats, a large part of a short verdict's time. tests/test_mwu_p.py holds it to scipy's."""
    if d.size == 0:
        return None
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 1.0  # no signed ranks at all: nothing speaks against "no change"
    ranks, tie_term = _average_ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    count = nonzero.size
    if d.size <= 50 and tie_term == 0 and count == d.size:
        m_total = count * (count + 1) // 2
        low = _signed_rank_cumulative(count)[min(int(r_plus), m_total - int(r_plus))]
        return min(2 * low / 2**count, 1.0)  # int / int: correctly rounded
    if d.size <= 13:  # scipy's permutation test: all 2^count sign patterns of the nonzero values
        null = np.zeros(1)
        for r in ranks.tolist():
            null = np.concatenate((null, null + r))
        gamma = abs(np.finfo(float).eps * 100 * r_plus)
        less = np.count_nonzero(null <= r_plus + gamma) / null.size
        greater = np.count_nonzero(null >= r_plus - gamma) / null.size
        return float(min(2 * min(less, greater), 1.0))
    se = math.sqrt((count * (count + 1) * (2 * count + 1) - tie_term / 2) / 24)
    z = (r_plus - count * (count + 1) / 4) / se
    p = math.erfc(abs(z) / math.sqrt(2.0))  # 2 · P(Z > |z|)
    return p if math.isfinite(p) else None


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Ranks 1..n of `x`, ties given their average rank; the sum of t^3 - t over tied groups."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_x[1:] != sorted_x[:-1])))
    counts = np.diff(np.append(starts, x.size))
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)
    return ranks, float(np.sum(counts.astype(float) ** 3 - counts))


@lru_cache(maxsize=128)
def _signed_rank_counts(n: int) -> np.ndarray:
    """Exact counts of T+ = j for j = 0 … n(n+1)/2 // 2 under the null (no ties), of 2^n: the
    generating function prod (1 + q^i), truncated at that degree (the rest is symmetric)."""
    half = n * (n + 1) // 4
    counts = np.zeros(half + 1, dtype=object)
    counts[0] = 1
    for i in range(1, min(n, half) + 1):
        counts[i:] = counts[i:] + counts[:-i]
    counts.setflags(write=False)
    return counts


@lru_cache(maxsize=64)
def _signed_rank_cumulative(n: int) -> tuple[int, ...]:
    """Exact counts of T+ <= j, j = 0 … n(n+1)/2 // 2 (`_signed_rank_counts` summed)."""
    return tuple(int(v) for v in np.cumsum(_signed_rank_counts(n)))


def normal_isf(p: float) -> float:
    """z with P(Z > z) = p for a standard normal Z (scipy.stats.norm.isf, without importing it)."""
    return -_NORMAL.inv_cdf(p)


def normal_sf(z: float) -> float:
    """P(Z > z) to full relative precision in the upper tail (scipy.stats.norm.sf)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mannwhitney_p(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided p of Mann–Whitney U for y vs x, equal to scipy.stats.mannwhitneyu(y, x).pvalue."""
    if x.size == 0 or y.size == 0:
        return None
    diffs = np.subtract.outer(y, x).reshape(1, -1)
    return mannwhitney_p_rows(x[None, :], y[None, :], diffs)[0]


def mannwhitney_p_rows(x: np.ndarray, y: np.ndarray, diffs: np.ndarray) -> list[float | None]:
    """`mannwhitney_p(x[r], y[r])` of each row of two 2-d arrays; `diffs[r]` holds row r's y_j - x_i.

    scipy's rules ("auto"), done here because its per-call overhead dominated `diff` of many
    benchmarks: the exact null distribution when there are no ties and one side has at most 8
    values, else the normal approximation with tie and continuity correction. Rows of more than
    EXACT_MWU_MAX_CELLS pairs go to scipy itself.
    """
    n1, n2 = y.shape[1], x.shape[1]
    if n1 * n2 > EXACT_MWU_MAX_CELLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ps = [float(_sps().mannwhitneyu(y[r], x[r], alternative="two-sided").pvalue) for r in range(len(x))]
        return [p if math.isfinite(p) else None for p in ps]
    u1 = np.count_nonzero(diffs > 0, axis=1).astype(float) + 0.5 * np.count_nonzero(diffs == 0, axis=1).astype(float)
    u = np.maximum(u1, n1 * n2 - u1)
    both = np.sort(np.concatenate((y, x), axis=1), axis=1)
    tied = np.any(both[:, 1:] == both[:, :-1], axis=1)
    if n1 <= 8 or n2 <= 8:  # exact null distribution, where there are no ties
        lo = np.where(tied, 0, n1 * n2 - u.astype(np.int64))  # P(U >= u) = P(U <= mn - u); u >= mn/2
        p: list[float | None] = np.minimum(2.0 * mwu_exact_tail(n1, n2)[lo], 1.0).tolist()
        normal = np.flatnonzero(tied)
    else:
        p = [None] * len(u)
        normal = np.arange(len(u))
    if normal.size:
        tie_term = np.zeros(normal.size)
        for k in np.flatnonzero(tied[normal]).tolist():
            r = normal[k]
            tie_term[k] = float(sum(c**3 - c for c in Counter(y[r].tolist() + x[r].tolist()).values()))
        for r, value in zip(normal.tolist(), mwu_normal_p(u[normal], n1, n2, tie_term), strict=True):
            p[r] = value
    return p


def mwu_normal_p(u: np.ndarray, n1: int, n2: int, tie_term: np.ndarray) -> list[float | None]:
    """Normal approximation of the two-sided Mann–Whitney p (tie and continuity corrected) of each
    u >= n1 n2 / 2; `tie_term` is the sum of t^3 - t over groups of t tied values (0.0 without ties)."""
    n = n1 + n2
    s = np.sqrt(np.maximum(0.0, n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))).tolist()
    num = (u - n1 * n2 / 2 - 0.5).tolist()
    root2, erfc = math.sqrt(2.0), math.erfc
    # s == 0: every value tied, nothing speaks against "no change"
    return [(1.0 if x < 0 else None) if sd == 0.0 else min(max(2.0 * (0.5 * erfc(x / sd / root2)), 0.0), 1.0)
            for sd, x in zip(s, num, strict=True)]


@lru_cache(maxsize=512)
def mwu_exact_tail(n1: int, n2: int) -> np.ndarray:
    """P(U <= j) for j = 0 … n1 n2 // 2 under the null, as floats (each count / C(n1+n2, n1), rounded once)."""
    total = math.comb(n1 + n2, n1)
    out = np.asarray([c / total for c in _mwu_cumulative(n1, n2)], dtype=float)
    out.setflags(write=False)
    return out
