"""Rank statistics: samples in, the numbers a verdict is built from out (no verdicts here).

In: lists of finite floats (timings, log-ratios). Out: medians, CVs, modified z-scores and outlier
flags; Hodges–Lehmann estimates (one-sample on paired log-ratios, shift between two samples); how
many order statistics the Wilcoxon signed-rank / Mann–Whitney CI cuts off at a level (exact null
distributions for small samples, normal approximation beyond); two-sided p-values from scipy. Also
the input checks every verdict function runs first (ValueError naming the bad value).
"""
from __future__ import annotations

import math
import statistics
import warnings
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

MIN_ROUNDS = 6
OUTLIER_CUTOFF = 3.5
# Exact null distributions up to here (a few ms to compute, cached), normal approximation beyond:
# at these sizes it cuts 3-4 order statistics fewer than the exact one (out of ~2,000-5,000), so it
# errs a little on the wide, conservative side.
EXACT_SIGNED_RANK_MAX_N = 100
EXACT_MWU_MAX_CELLS = 10_000
_BETTER = ("lower", "higher")


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


def median(values: Sequence[float]) -> float:
    """Median of finite values; ValueError when empty or not finite."""
    if len(values) == 0:
        raise ValueError("median of no values")
    xs = [float(v) for v in values]
    if not all(math.isfinite(x) for x in xs):
        raise ValueError("median: values must be finite")
    return float(statistics.median(xs))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation: sample standard deviation (ddof=1) over the mean.

    Needs at least 2 finite values and a non-zero mean (ValueError otherwise).
    """
    xs = [float(v) for v in values]
    if len(xs) < 2:
        raise ValueError("cv needs at least 2 values")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError("cv: values must be finite")
    mean = statistics.fmean(xs)
    if mean == 0:
        raise ValueError("cv is undefined when the mean is 0")
    return float(statistics.stdev(xs) / abs(mean))


def fast_median(values: np.ndarray) -> float:
    """np.median of a 1-d float array, the same float, without numpy's ~10 µs per call on tiny ones.

    `diff` of 10^5 benchmarks takes a million medians of 5-25 values: numpy's overhead dominated.
    """
    if values.size > 64:
        return float(np.median(values))
    return _list_median(sorted(values.tolist()))


def _list_median(xs: list[float]) -> float:
    k = len(xs) // 2
    if len(xs) % 2:
        return float(xs[k])
    return float((xs[k - 1] + xs[k]) / 2.0)


def sorted_median(sorted_values: np.ndarray) -> float:
    """The median of an already sorted 1-d array (as np.median gives it)."""
    k = sorted_values.size // 2
    if sorted_values.size % 2:
        return float(sorted_values[k])
    return float((sorted_values[k - 1] + sorted_values[k]) / 2.0)


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """Iglewicz–Hoaglin modified z-scores, 0.6745 (x - median) / MAD.

    When the MAD is 0 (more than half the values tie at the median) the scale falls back to
    1.253314 * mean absolute deviation from the median (same convention as IBM SPSS); when that is
    0 too every value is the median and every score is 0. Deviations at float-rounding size
    (1e-12 relative) count as 0, so values equal up to rounding are not outliers of each other.
    """
    # Plain floats, not numpy: these run on 5-25 values, 3x per benchmark, where numpy's per-call
    # overhead is most of the cost; the arithmetic is the same float by float.
    xs = values.tolist() if isinstance(values, np.ndarray) else [float(v) for v in values]
    if not xs:
        return []
    if not all(math.isfinite(v) for v in xs):
        raise ValueError("modified z-scores: values must be finite")
    med = _list_median(sorted(xs))
    eps = 1e-12 * max(1.0, abs(med))
    dev = [0.0 if abs(d) <= eps else d for d in (v - med for v in xs)]
    mad = _list_median(sorted(abs(d) for d in dev))
    if mad > 0:
        return [0.6745 * d / mad for d in dev]
    mean_ad = float(np.mean(np.abs(np.asarray(dev))))
    return [0.0] * len(dev) if mean_ad == 0 else [d / (1.253314 * mean_ad) for d in dev]


def modified_z_outliers(values: Sequence[float], cutoff: float = OUTLIER_CUTOFF) -> list[bool]:
    """Which values have |modified z-score| > cutoff (3.5, Iglewicz & Hoaglin)."""
    return [abs(z) > cutoff for z in modified_z_scores(values)]


# ---------------------------------------------------------------------------------------------
# Hodges–Lehmann estimates and the distribution-free intervals around them


def walsh_averages(d: Sequence[float]) -> np.ndarray:
    """All (d_i + d_j) / 2 for i <= j, sorted."""
    x = np.asarray(d, dtype=float)
    i, j = np.triu_indices(x.size)
    return np.sort((x[i] + x[j]) / 2.0)


def pairwise_differences(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """All y_j - x_i, sorted."""
    return np.sort(np.subtract.outer(np.asarray(y, float), np.asarray(x, float)).ravel())


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
    z = float(_sps().norm.isf(alpha / 2))
    return max(0, math.floor(mean - 0.5 - z * sd) + 1)


def _sps():
    """scipy.stats, imported on first use: ~0.6 s that a diff of small samples never needs."""
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
        half = m_total // 2  # alpha < 1 never needs the upper half
        counts = np.zeros(half + 1, dtype=object)
        counts[0] = 1
        for i in range(1, n + 1):  # generating function prod (1 + q^i), truncated at degree `half`
            if i <= half:
                counts[i:] = counts[i:] + counts[:-i]
        cut = _lower_tail_cut(counts, 2**n, alpha)
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
    if d.size == 0:
        return None
    if np.all(d == 0):
        return 1.0  # no signed ranks at all: nothing speaks against "no change"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about small n / ties; the verdict handles both
        p = float(_sps().wilcoxon(d, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else None


def mannwhitney_p(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided p of Mann–Whitney U for y vs x, equal to scipy.stats.mannwhitneyu(y, x).pvalue.

    scipy's per-call overhead (~2 ms) dominated `diff` of many benchmarks, so small samples are
    done here with scipy's rules ("auto"): exact null distribution when there are no ties and one
    side has at most 8 values, else the normal approximation with tie and continuity correction.
    Large samples (more than EXACT_MWU_MAX_CELLS pairs) still go to scipy.
    """
    if x.size == 0 or y.size == 0:
        return None
    n1, n2 = y.size, x.size
    if n1 * n2 > EXACT_MWU_MAX_CELLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = float(_sps().mannwhitneyu(y, x, alternative="two-sided").pvalue)
        return p if math.isfinite(p) else None
    d = np.subtract.outer(y, x)
    u1 = float(np.count_nonzero(d > 0)) + 0.5 * float(np.count_nonzero(d == 0))
    u = max(u1, n1 * n2 - u1)
    both = y.tolist() + x.tolist()
    t = np.asarray(list(Counter(both).values()), dtype=float) if len(set(both)) < len(both) else None
    if (n1 <= 8 or n2 <= 8) and t is None:
        lo = n1 * n2 - int(u)  # P(U >= u) = P(U <= mn - u) by symmetry; u >= mn/2
        p = 2.0 * (_mwu_cumulative(n1, n2)[lo] / math.comb(n1 + n2, n1))
        return min(p, 1.0)
    tie_term = 0.0 if t is None else float(np.sum(t**3 - t))
    return mwu_normal_p(u, n1, n2, tie_term)


def mwu_normal_p(u: float, n1: int, n2: int, tie_term: float) -> float | None:
    """Normal approximation of the two-sided Mann–Whitney p (tie and continuity corrected), u >= n1 n2 / 2.

    `tie_term` is the sum of t^3 - t over groups of t tied values (0.0 without ties).
    """
    n = n1 + n2
    s = math.sqrt(max(0.0, n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))))
    num = u - n1 * n2 / 2 - 0.5
    if s == 0.0:
        return 1.0 if num < 0 else None  # every value tied: nothing speaks against "no change"
    p = 2.0 * (0.5 * math.erfc(num / s / math.sqrt(2.0)))
    return min(max(p, 0.0), 1.0)


def mwu_normal_p_many(u: np.ndarray, n1: int, n2: int, tie_term: np.ndarray) -> list[float | None]:
    """`mwu_normal_p` of each element (the same operations in the same order, so the same floats)."""
    n = n1 + n2
    s = np.sqrt(np.maximum(0.0, n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))).tolist()
    num = (u - n1 * n2 / 2 - 0.5).tolist()
    root2, erfc = math.sqrt(2.0), math.erfc
    return [(1.0 if x < 0 else None) if sd == 0.0 else min(max(2.0 * (0.5 * erfc(x / sd / root2)), 0.0), 1.0)
            for sd, x in zip(s, num, strict=True)]


@lru_cache(maxsize=512)
def mwu_exact_tail(n1: int, n2: int) -> np.ndarray:
    """P(U <= j) for j = 0 … n1 n2 // 2 under the null, as floats (each count / C(n1+n2, n1), rounded once)."""
    total = math.comb(n1 + n2, n1)
    out = np.asarray([c / total for c in _mwu_cumulative(n1, n2)], dtype=float)
    out.setflags(write=False)
    return out
