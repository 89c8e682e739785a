"""The statistics behind profopt's verdicts: pure functions, lists of floats in, plain dicts out.

No I/O and no profopt imports; scipy supplies the p-values, the rest is written out here so each
rule can be read in one place.

Inputs
------
Timings and throughputs are positive, finite floats, one per round (paired: ``base[i]`` and
``head[i]`` were measured in the same round) or one per sample (unpaired). Zero, negative, NaN or
infinite values raise ``ValueError``: the caller drops failed samples before calling. Peak memory may
be zero but not negative.

Outputs
-------
``paired_change``, ``unpaired_change`` and ``memory_change`` return a dict with the keys of a
metric entry in ``profopt/comparison@1`` (docs/data-model.md):

``base`` / ``head``
    medians of the two sides.
``delta_pct``
    the change head vs base in percent, ``(exp(hl) - 1) * 100`` where ``hl`` is the Hodges–Lehmann
    estimate on log values (paired: median of the Walsh averages of ``d_i = ln(head_i / base_i)``;
    unpaired: median of all differences ``ln(head_j) - ln(base_i)``). Negative means smaller.
``ci_low_pct`` / ``ci_high_pct``
    the distribution-free confidence interval at ``confidence`` (the ``1 - alpha`` level actually
    used is in ``confidence``), from the Wilcoxon signed-rank (paired) or Mann–Whitney U (unpaired)
    distribution: exact for small samples, normal approximation beyond. ``None`` when so few values
    cannot bound an interval at that level (e.g. 6 or 7 paired rounds at 99%), and for memory.
``p_value``
    two-sided, from ``scipy.stats.wilcoxon`` / ``scipy.stats.mannwhitneyu``; ``None`` for memory.
``verdict``
    one of ``improved · regressed · unchanged · inconclusive · unstable`` (rules below).
``better``
    ``"lower"`` (time, memory) or ``"higher"`` (throughput): which direction is an improvement.
``n``
    rounds (paired) or the smaller side (unpaired, memory); ``n_base`` / ``n_head`` give both.
``outliers``
    values with ``|modified z| > 3.5`` (paired: among the ``d_i``; otherwise within each side).
``reason``
    one sentence saying why this verdict.
``paired``
    ``True`` for paired rounds, ``False`` otherwise.

Verdict rules (timings and throughput), with ``tau = threshold_pct``, checked in this order:

1. fewer than 6 rounds (paired) or 6 values on either side (unpaired) → ``inconclusive``;
2. no finite CI at this level → ``inconclusive``;
3. the CI excludes 0 and ``|delta_pct| >= tau`` → ``regressed`` when the change is in the worse
   direction for ``better`` (lower: positive delta; higher: negative delta), else ``improved``;
4. the whole CI lies inside ``[-tau, +tau]`` → ``unchanged`` (even if it excludes 0);
5. otherwise, more than 10% of the values are outliers → ``unstable`` (too noisy to judge);
6. otherwise → ``inconclusive``.

Outliers never overturn a CI that decides (rules 3–4): the HL estimate and its rank CI are robust to
them. When more than 10% are outliers and the CI decided, ``outlier_note`` says so (else None).

Memory (``memory_change``) is near deterministic: medians are compared against a tolerance,
``|head - base| <= max(tolerance_pct % of base, abs_tolerance_mb)`` → ``unchanged``, else
``regressed`` / ``improved``; fewer than 3 values on a side → ``inconclusive``.

Many benchmarks: ``benjamini_hochberg`` / ``bh_adjusted`` (flag in the report) and ``holm`` /
``holm_adjusted`` (before failing the build), with statsmodels' ``fdr_bh`` / ``holm`` definitions.
Sequential looks: ``plan_looks`` gives the round counts at which to look, ``spent_alpha`` the level
to pass as ``paired_change(..., alpha=...)`` at each look so the error over all looks stays ≤ alpha.
"""
from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import stats as sps

MIN_ROUNDS = 6
MIN_MEMORY_RUNS = 3
UNSTABLE_SHARE = 0.10
OUTLIER_CUTOFF = 3.5
# Exact null distributions up to here (a few ms to compute, cached), normal approximation beyond:
# at these sizes it cuts 3-4 order statistics fewer than the exact one (out of ~2,000-5,000), so it
# errs a little on the wide, conservative side.
EXACT_SIGNED_RANK_MAX_N = 100
EXACT_MWU_MAX_CELLS = 10_000
# A default plan never looks more often than this: every extra look thins the alpha of all looks.
MAX_DEFAULT_LOOKS = 6
_BETTER = ("lower", "higher")
_SPENDING = ("pocock", "obf", "linear")


# ---------------------------------------------------------------------------------------------
# Input checks


def _finite(name: str, values: Sequence[float], *, allow_zero: bool = False) -> np.ndarray:
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


def _check_better(better: str) -> None:
    if better not in _BETTER:
        raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")


def _level(confidence: float, alpha: float | None) -> float:
    """The alpha the CI and the verdict use: `alpha` when given, else 1 - confidence."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    a = 1.0 - confidence if alpha is None else float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    return a


def _check_threshold(threshold_pct: float) -> float:
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


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """Iglewicz–Hoaglin modified z-scores, 0.6745 (x - median) / MAD.

    When the MAD is 0 (more than half the values tie at the median) the scale falls back to
    1.253314 * mean absolute deviation from the median (same convention as IBM SPSS); when that is
    0 too every value is the median and every score is 0. Deviations at float-rounding size
    (1e-12 relative) count as 0, so values equal up to rounding are not outliers of each other.
    """
    x = np.asarray([float(v) for v in values], dtype=float)
    if x.size == 0:
        return []
    if not np.all(np.isfinite(x)):
        raise ValueError("modified z-scores: values must be finite")
    med = float(np.median(x))
    dev = x - med
    dev[np.abs(dev) <= 1e-12 * max(1.0, abs(med))] = 0.0
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        z = 0.6745 * dev / mad
    else:
        mean_ad = float(np.mean(np.abs(dev)))
        z = np.zeros_like(dev) if mean_ad == 0 else dev / (1.253314 * mean_ad)
    return [float(v) for v in z]


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


def hl_one_sample(d: Sequence[float]) -> float:
    """Hodges–Lehmann location estimate: the median of the Walsh averages."""
    if len(d) == 0:
        raise ValueError("Hodges–Lehmann estimate of no values")
    return float(np.median(walsh_averages(d)))


def hl_shift(x: Sequence[float], y: Sequence[float]) -> float:
    """Hodges–Lehmann shift estimate of y relative to x: the median of all y_j - x_i."""
    if len(x) == 0 or len(y) == 0:
        raise ValueError("Hodges–Lehmann shift needs values on both sides")
    return float(np.median(pairwise_differences(x, y)))


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
    z = float(sps.norm.isf(alpha / 2))
    return max(0, math.floor(mean - 0.5 - z * sd) + 1)


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
def mann_whitney_cut(m: int, n: int, alpha: float) -> int:
    """How many of the smallest (and largest) of the m*n differences fall outside the 1-alpha CI.

    The interval is [D_(c), D_(mn+1-c)] with c - 1 the largest j such that P(U <= j) <= alpha/2
    under the null Mann–Whitney distribution. 0 means no finite interval exists at this level.
    """
    cells = m * n
    if cells <= EXACT_MWU_MAX_CELLS:
        half = cells // 2
        # Counts of U are the coefficients of the Gaussian binomial [m+n choose m]_q
        # = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); exact in Python ints, truncated at `half`.
        c = np.zeros(half + 1, dtype=object)
        c[0] = 1
        for i in range(1, m + 1):
            k = n + i
            if k <= half:
                c[k:] = c[k:] - c[:-k]
            for r in range(min(i, half + 1)):  # divide by (1 - q^i): cumulative sum with stride i
                c[r::i] = np.cumsum(c[r::i])
        cut = _lower_tail_cut(c, math.comb(m + n, m), alpha)
    else:
        cut = _normal_cut(cells / 2, math.sqrt(cells * (m + n + 1) / 12), alpha)
    return min(cut, (cells + 1) // 2)


def _interval(sorted_stats: np.ndarray, cut: int) -> tuple[float | None, float | None]:
    if cut < 1:
        return None, None
    return float(sorted_stats[cut - 1]), float(sorted_stats[sorted_stats.size - cut])


# ---------------------------------------------------------------------------------------------
# p-values


def _wilcoxon_p(d: np.ndarray) -> float | None:
    if d.size == 0:
        return None
    if np.all(d == 0):
        return 1.0  # no signed ranks at all: nothing speaks against "no change"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about small n / ties; the verdict handles both
        p = float(sps.wilcoxon(d, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else None


def _mannwhitney_p(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size == 0 or y.size == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(sps.mannwhitneyu(y, x, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else None


# ---------------------------------------------------------------------------------------------
# Verdicts


def _pct(log_value: float | None) -> float | None:
    return None if log_value is None else float(math.expm1(log_value) * 100.0)


def _conf_label(alpha: float) -> str:
    text = f"{(1.0 - alpha) * 100:.3f}".rstrip("0").rstrip(".")
    return f"{text}% CI"


def _is_worse(delta_pct: float, better: str) -> bool:
    return delta_pct > 0 if better == "lower" else delta_pct < 0


def _decide(
    res: dict, *, units: int, unit_word: str, enough: bool, need: str, tau: float, alpha: float
) -> dict:
    """Fill `verdict` and `reason` of a timing/throughput result by the module's rules."""
    delta, lo, hi = res["delta_pct"], res["ci_low_pct"], res["ci_high_pct"]
    ci = _conf_label(alpha)
    if not enough:
        res["verdict"] = "inconclusive"
        res["reason"] = f"only {units} {unit_word}; {need} are needed for a verdict"
        return res
    many = res["outliers"] > UNSTABLE_SHARE * units
    share = f"{res['outliers']} of {units} {unit_word} are outliers (|modified z| > {OUTLIER_CUTOFF:g})"
    if lo is None or hi is None:
        res["verdict"] = "inconclusive"
        res["reason"] = f"{units} {unit_word} cannot bound a {ci}; more are needed"
        return res
    span = f"{ci} {lo:+.2f}% to {hi:+.2f}%"
    excludes_zero = lo > 0 or hi < 0
    if excludes_zero and abs(delta) >= tau:
        res["verdict"] = "regressed" if _is_worse(delta, res["better"]) else "improved"
        res["reason"] = f"{delta:+.2f}% ({span}) excludes 0 and reaches the {tau:g}% threshold"
    elif -tau <= lo and hi <= tau:
        res["verdict"] = "unchanged"
        res["reason"] = f"{delta:+.2f}% ({span}) lies within ±{tau:g}%"
    elif excludes_zero:
        res["verdict"] = "inconclusive"
        res["reason"] = (
            f"{delta:+.2f}% ({span}) excludes 0 but is below the {tau:g}% threshold"
            f" and the CI reaches beyond ±{tau:g}%"
        )
    else:
        res["verdict"] = "inconclusive"
        res["reason"] = f"{delta:+.2f}% ({span}) includes 0 and reaches beyond ±{tau:g}%"
    if many and res["verdict"] == "inconclusive":
        res["verdict"] = "unstable"
        res["reason"] = (f"{share}, more than {UNSTABLE_SHARE:.0%}, and {res['reason']}: "
                         "the measurements are too noisy to judge")
    elif many:
        res["outlier_note"] = f"{share}; the {ci} decides regardless (rank statistics are robust to them)"
    return res


def _result(base: np.ndarray, head: np.ndarray, better: str, paired: bool, alpha: float | None) -> dict:
    return {
        "base": float(np.median(base)) if base.size else None,
        "head": float(np.median(head)) if head.size else None,
        "delta_pct": None,
        "ci_low_pct": None,
        "ci_high_pct": None,
        "p_value": None,
        "verdict": "inconclusive",
        "better": better,
        "n": int(min(base.size, head.size)),
        "n_base": int(base.size),
        "n_head": int(head.size),
        "outliers": 0,
        "outlier_note": None,
        "reason": "",
        "paired": paired,
        "confidence": None if alpha is None else 1.0 - alpha,
    }


def paired_change(
    base: Sequence[float],
    head: Sequence[float],
    *,
    threshold_pct: float = 3.0,
    confidence: float = 0.99,
    better: str = "lower",
    alpha: float | None = None,
) -> dict:
    """Compare paired rounds (base[i] and head[i] measured in the same round).

    d_i = ln(head_i / base_i); Hodges–Lehmann estimate with the Wilcoxon signed-rank CI at
    1 - alpha (alpha defaults to 1 - confidence; the sequential procedure passes `spent_alpha`);
    p from scipy.stats.wilcoxon, two-sided. Verdict rules: see the module docstring.
    """
    _check_better(better)
    tau = _check_threshold(threshold_pct)
    a = _level(confidence, alpha)
    b = _finite("base", base)
    h = _finite("head", head)
    if b.size != h.size:
        raise ValueError(f"paired rounds need as many base as head values ({b.size} vs {h.size})")
    res = _result(b, h, better, True, a)
    n = b.size
    if n == 0:
        res["reason"] = "no rounds to compare"
        return res
    d = np.log(h) - np.log(b)
    walsh = walsh_averages(d)
    lo, hi = _interval(walsh, signed_rank_cut(n, a))
    res["delta_pct"] = _pct(float(np.median(walsh)))
    res["ci_low_pct"], res["ci_high_pct"] = _pct(lo), _pct(hi)
    res["p_value"] = _wilcoxon_p(d)
    res["outliers"] = sum(modified_z_outliers(d))
    return _decide(
        res, units=n, unit_word="rounds", enough=n >= MIN_ROUNDS, need=f"at least {MIN_ROUNDS}",
        tau=tau, alpha=a,
    )


def unpaired_change(
    base: Sequence[float],
    head: Sequence[float],
    *,
    threshold_pct: float = 3.0,
    confidence: float = 0.99,
    better: str = "lower",
    alpha: float | None = None,
) -> dict:
    """Compare two independent samples (e.g. two stored results).

    On log values: Hodges–Lehmann shift (median of all ln(head_j) - ln(base_i)) with the
    Mann–Whitney CI at 1 - alpha; p from scipy.stats.mannwhitneyu, two-sided; outliers counted
    within each side. Verdict rules: see the module docstring (6 values needed on each side).
    """
    _check_better(better)
    tau = _check_threshold(threshold_pct)
    a = _level(confidence, alpha)
    b = np.log(_finite("base", base))
    h = np.log(_finite("head", head))
    res = _result(np.exp(b), np.exp(h), better, False, a)
    if b.size == 0 or h.size == 0:
        res["reason"] = "no values on the " + ("base" if b.size == 0 else "head") + " side"
        return res
    diffs = pairwise_differences(b, h)
    lo, hi = _interval(diffs, mann_whitney_cut(b.size, h.size, a))
    res["delta_pct"] = _pct(float(np.median(diffs)))
    res["ci_low_pct"], res["ci_high_pct"] = _pct(lo), _pct(hi)
    res["p_value"] = _mannwhitney_p(b, h)
    res["outliers"] = sum(modified_z_outliers(b)) + sum(modified_z_outliers(h))
    smaller = min(b.size, h.size)
    return _decide(
        res, units=b.size + h.size, unit_word="samples", enough=smaller >= MIN_ROUNDS,
        need=f"at least {MIN_ROUNDS} on each side ({b.size} base, {h.size} head)", tau=tau, alpha=a,
    )


def memory_change(
    base: Sequence[float],
    head: Sequence[float],
    *,
    tolerance_pct: float = 5.0,
    abs_tolerance_mb: float = 4.0,
    better: str = "lower",
) -> dict:
    """Compare peak memory (MB): medians against max(tolerance_pct % of base, abs_tolerance_mb).

    Same keys as `paired_change`, with ci_low_pct / ci_high_pct / p_value None, plus `delta_mb`
    and `tolerance_mb`. delta_pct is None when the base median is 0 and the head's is not.
    """
    _check_better(better)
    for name, v in (("tolerance_pct", tolerance_pct), ("abs_tolerance_mb", abs_tolerance_mb)):
        if not math.isfinite(float(v)) or float(v) < 0:
            raise ValueError(f"{name} must be a non-negative number, not {v!r}")
    b = _finite("base", base, allow_zero=True)
    h = _finite("head", head, allow_zero=True)
    res = _result(b, h, better, False, None)
    res["delta_mb"] = None
    res["tolerance_mb"] = None
    if b.size < MIN_MEMORY_RUNS or h.size < MIN_MEMORY_RUNS:
        res["reason"] = (
            f"only {b.size} base and {h.size} head values; at least {MIN_MEMORY_RUNS} each are needed"
        )
        return res
    bm, hm = res["base"], res["head"]
    diff = hm - bm
    tol = max(tolerance_pct / 100.0 * bm, float(abs_tolerance_mb))
    res["delta_mb"], res["tolerance_mb"] = float(diff), float(tol)
    if bm > 0:
        res["delta_pct"] = float((hm / bm - 1.0) * 100.0)
    elif hm == 0:
        res["delta_pct"] = 0.0
    res["outliers"] = sum(modified_z_outliers(b)) + sum(modified_z_outliers(h))
    change = f"median {bm:.1f} → {hm:.1f} MB ({diff:+.1f} MB)"
    if abs(diff) <= tol:
        res["verdict"] = "unchanged"
        res["reason"] = f"{change} is within the tolerance of {tol:.1f} MB"
    else:
        res["verdict"] = "regressed" if _is_worse(diff, better) else "improved"
        res["reason"] = f"{change} exceeds the tolerance of {tol:.1f} MB"
    return res


# ---------------------------------------------------------------------------------------------
# Many benchmarks at once


def _present(p_values: Sequence[float | None]) -> tuple[list[int], np.ndarray]:
    idx, ps = [], []
    for i, p in enumerate(p_values):
        if p is None:
            continue
        f = float(p)
        if not 0.0 <= f <= 1.0:  # NaN fails this too
            raise ValueError(f"p_values[{i}] = {p!r} is not a probability in [0, 1]")
        idx.append(i)
        ps.append(f)
    return idx, np.asarray(ps, dtype=float)


def bh_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values (statsmodels `fdr_bh`); None stays None.

    m counts only the present p-values. p_adj(i) = min over j >= i of m * p_(j) / j, capped at 1.
    """
    idx, ps = _present(p_values)
    out: list[float | None] = [None] * len(p_values)
    m = ps.size
    if m == 0:
        return out
    order = np.argsort(ps, kind="stable")
    raw = ps[order] * m / np.arange(1, m + 1)
    adj = np.minimum(np.minimum.accumulate(raw[::-1])[::-1], 1.0)
    for rank, k in enumerate(order):
        out[idx[k]] = float(adj[rank])
    return out


def benjamini_hochberg(p_values: Sequence[float | None], q: float = 0.01) -> list[bool]:
    """Which hypotheses the Benjamini–Hochberg step-up procedure rejects at FDR q; None → False.

    Rejects p_(1..k) for the largest k with p_(k) <= k q / m (m = number of present p-values).
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie strictly between 0 and 1, not {q!r}")
    idx, ps = _present(p_values)
    out = [False] * len(p_values)
    m = ps.size
    order = np.argsort(ps, kind="stable")
    k_max = 0
    for rank, k in enumerate(order, start=1):
        if ps[k] * m <= rank * q:
            k_max = rank
    for k in order[:k_max]:
        out[idx[k]] = True
    return out


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (statsmodels `holm`); None stays None.

    p_adj(i) = max over j <= i of (m - j + 1) * p_(j), capped at 1.
    """
    idx, ps = _present(p_values)
    out: list[float | None] = [None] * len(p_values)
    m = ps.size
    if m == 0:
        return out
    order = np.argsort(ps, kind="stable")
    raw = ps[order] * np.arange(m, 0, -1)
    adj = np.minimum(np.maximum.accumulate(raw), 1.0)
    for rank, k in enumerate(order):
        out[idx[k]] = float(adj[rank])
    return out


def holm(p_values: Sequence[float | None], alpha: float = 0.01) -> list[bool]:
    """Which hypotheses Holm's step-down procedure rejects at family-wise level alpha; None → False.

    Walks p_(1) <= p_(2) <= … and rejects while p_(i) <= alpha / (m - i + 1); stops at the first
    that is not.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    idx, ps = _present(p_values)
    out = [False] * len(p_values)
    m = ps.size
    for rank, k in enumerate(np.argsort(ps, kind="stable"), start=1):
        if ps[k] * (m - rank + 1) > alpha:
            break
        out[idx[k]] = True
    return out


# ---------------------------------------------------------------------------------------------
# Sequential looks


def _spending(t: float, alpha: float, kind: str) -> float:
    """Cumulative alpha spent by information fraction t (Lan & DeMets 1983)."""
    if t <= 0:
        return 0.0
    if kind == "pocock":
        return alpha * math.log1p((math.e - 1.0) * t)
    if kind == "obf":
        return float(2.0 * sps.norm.sf(sps.norm.isf(alpha / 2) / math.sqrt(t)))
    return alpha * t


def spent_alpha(look: int, max_looks: int, alpha: float = 0.01, *, spending: str = "pocock") -> float:
    """The nominal level for look `look` of `max_looks` (1-based), so all looks together keep ≤ alpha.

    Alpha-spending (Lan & DeMets 1983) with information fraction t = look / max_looks; each look
    gets the increment alpha(t_k) - alpha(t_{k-1}). The increments telescope to alpha(1) = alpha,
    so by the union bound the chance of any false verdict over all looks is ≤ alpha (conservative:
    it ignores the correlation between looks).

    Default ``spending="pocock"``: the Pocock-type function alpha * ln(1 + (e - 1) t), which front-
    loads the budget (5 looks: 30%, 23%, 19%, 16%, 14% of alpha). ``"obf"`` (O'Brien–Fleming-type,
    2 - 2 Phi(z_{alpha/2} / sqrt t)) spends almost nothing early — 8e-9 at the first of 5 looks at
    alpha = 0.01, below the smallest p (2 / 2^20) that 20 signed-rank rounds can reach, so the first
    look could never decide; ``"linear"`` spends alpha / max_looks each look.
    """
    if spending not in _SPENDING:
        raise ValueError(f"spending must be one of {', '.join(_SPENDING)}, not {spending!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    if not (isinstance(look, int) and isinstance(max_looks, int)) or not 1 <= look <= max_looks:
        raise ValueError(f"need integers 1 <= look <= max_looks, got look={look!r}, max_looks={max_looks!r}")
    hi = _spending(look / max_looks, alpha, spending)
    lo = _spending((look - 1) / max_looks, alpha, spending)
    if look == max_looks:
        hi = alpha  # exact, whatever the rounding of the spending function at t = 1
    return max(hi - lo, 0.0)


def plan_looks(rounds: int, max_rounds: int, step: int | None = None) -> list[int]:
    """Round counts at which to look: rounds, rounds + step, …, ending exactly at max_rounds.

    Just [rounds] when max_rounds <= rounds. The default step is rounds // 2 (20 → 20, 30, 40, …),
    widened so that there are at most 6 looks; a last step shorter than half a step is merged into
    the final look (20, 30, 40, 50, 61 rather than …, 60, 61).
    """
    for name, v in (("rounds", rounds), ("max_rounds", max_rounds)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, not {v!r}")
    if step is not None and (not isinstance(step, int) or step < 1):
        raise ValueError(f"step must be a positive integer, not {step!r}")
    if max_rounds <= rounds:
        return [rounds]
    if step is None:
        step = max(1, rounds // 2, math.ceil((max_rounds - rounds) / (MAX_DEFAULT_LOOKS - 1)))
    looks = list(range(rounds, max_rounds, step))
    if len(looks) > 1 and max_rounds - looks[-1] < step / 2:
        looks.pop()
    return looks + [max_rounds]
