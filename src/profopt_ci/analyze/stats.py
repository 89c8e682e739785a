"""The statistics behind profopt's verdicts: pure functions, lists of floats in, plain dicts out.

No I/O; scipy supplies the p-values (through `ranks`), the verdict rules are written out here so
each can be read in one place.

Inputs
------
Timings and throughputs are positive, finite floats, one per round (paired: ``base[i]`` and
``head[i]`` were measured in the same round) or one per sample (unpaired). Zero, negative, NaN or
infinite values raise ``ValueError``: the caller drops failed samples before calling. Peak memory may
be zero but not negative.

Outputs
-------
``paired_change`` here, ``unpaired_change`` and ``memory_change`` (analyze/unpaired.py, which
judges with ``judge_shift`` and ``judge_memory`` here) return a dict with the keys of a metric entry
in ``profopt/comparison@1`` (docs/data-model.md):

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

Building blocks (rank statistics, input checks) are in `ranks`; unpaired samples, of one benchmark
or thousands, in `unpaired`; the corrections across benchmarks in `multiplicity`; sequential looks in
`looks`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from profopt_ci.analyze.ranks import (
    MIN_ROUNDS,
    OUTLIER_CUTOFF,
    check_better,
    check_threshold,
    finite,
    interval,
    level,
    modified_z_outliers,
    signed_rank_cut,
    sorted_median,
    walsh_averages,
    wilcoxon_p,
)
from profopt_ci.documents.statement import put
from profopt_ci.documents.types import Message
from profopt_ci.documents.types_comparison import Metric, typed_messages
from profopt_ci.words.i18n import message

SPEED = "step_time_ms"
MEMORY_METRICS = ("peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb")
MIN_MEMORY_RUNS = 3
ABS_TOLERANCE_MB = 4.0  # memory_change's default floor of the tolerance
UNSTABLE_SHARE = 0.10


# ---------------------------------------------------------------------------------------------
# Verdicts


def _pct(log_value: float | None) -> float | None:
    return None if log_value is None else float(math.expm1(log_value) * 100.0)


@lru_cache(maxsize=256)
def _conf_label(alpha: float) -> str:
    """The confidence level as the reasons print it: 99, 99.5."""
    return f"{(1.0 - alpha) * 100:.3f}".rstrip("0").rstrip(".")


def _is_worse(delta_pct: float, better: str) -> bool:
    return delta_pct > 0 if better == "lower" else delta_pct < 0


def _decide(
    res: dict, *, units: int, unit_word: str, enough: bool, need: Callable[[int], Message], tau: float, alpha: float,
    nominal: float | None = None,
) -> Metric:
    """Fill `verdict` and `reason` of a timing/throughput result by the module's rules. The reasons
    and the outlier note name the nominal level (`nominal`, the alpha the report's headings say; the
    look's own `alpha` when not given): a sequential look's CI is at its spent alpha (99.748% at one
    look of five), which keeps the nominal level over all looks, so that is the level it stands for.
    The look's own level stays in the entry's `confidence`."""
    if not enough:
        res["verdict"] = "inconclusive"
        return metric(put(res, "reason", need(units)))
    delta, lo, hi = res["delta_pct"], res["ci_low_pct"], res["ci_high_pct"]
    ci = _conf_label(alpha if nominal is None else nominal)
    if lo is not None and hi is not None:
        # a change of this size, with the same noise, would have a CI as wide around it that excludes
        # 0, and an estimate at least τ: what these rounds could have flagged
        res["mde"] = max(tau, (hi - lo) / 2)
    if lo is None or hi is None:
        res["verdict"] = "inconclusive"
        return metric(put(res, "reason", message("why.no_bound", units=units, unit=unit_word, level=ci)))
    excludes_zero = lo > 0 or hi < 0
    if excludes_zero and abs(delta) >= tau:
        res["verdict"] = "regressed" if _is_worse(delta, res["better"]) else "improved"
        key = "why.changed"
    elif -tau <= lo and hi <= tau:
        res["verdict"] = "unchanged"
        key = "why.within"
    else:
        res["verdict"] = "inconclusive"
        key = "why.below" if excludes_zero else "why.includes"
    put(res, "reason", message(key, delta=delta, level=ci, lo=lo, hi=hi, tau=tau))
    if res["outliers"] <= UNSTABLE_SHARE * units:
        return metric(res)
    share = {"outliers": res["outliers"], "units": units, "unit": unit_word, "cutoff": OUTLIER_CUTOFF}
    if res["verdict"] == "inconclusive":
        res["verdict"] = "unstable"
        put(res, "reason", message("why.unstable", **share, share=UNSTABLE_SHARE, why=res["reason_msg"]))
    else:
        put(res, "outlier_note", message("why.outliers", **share, level=ci))
    return metric(res)


def metric(res: dict) -> Metric:
    """The judged entry as the comparison holds it: built once, frozen (a Struct is a quarter of the
    dict's memory, and a diff holds three per benchmark), its messages `Message`s
    as a read one's are."""
    return Metric(**typed_messages(res))


@lru_cache(maxsize=1024)
def _too_few(units: int, least: int) -> Message:
    """Shared, frozen: a large diff with few rounds says it once per metric of every benchmark."""
    return Message(**message("why.too_few", units=units, least=least))


def _result(base: np.ndarray, head: np.ndarray, better: str, paired: bool, alpha: float | None) -> dict:
    return result_of(sorted_median(np.sort(base)) if base.size else None,
                     sorted_median(np.sort(head)) if head.size else None,
                     int(base.size), int(head.size), better, paired, alpha)


def result_of(base_median: float | None, head_median: float | None, n_base: int, n_head: int, better: str,
              paired: bool, alpha: float | None) -> dict:
    """A metric entry with its medians and counts, not yet judged."""
    res = _BLANK.copy()  # a copy and eight stores: cheaper than a 16-key literal, 3 per benchmark of a diff
    res["base"], res["head"], res["better"] = base_median, head_median, better
    res["n"], res["n_base"], res["n_head"] = min(n_base, n_head), n_base, n_head
    res["paired"], res["confidence"] = paired, None if alpha is None else 1.0 - alpha
    return res


_BLANK = {
    "base": None,
    "head": None,
    "delta_pct": None,
    "ci_low_pct": None,
    "ci_high_pct": None,
    "p_value": None,
    "verdict": "inconclusive",
    "better": None,
    "n": 0,
    "n_base": 0,
    "n_head": 0,
    "outliers": 0,
    "outlier_note": None,
    "reason": "",
    "paired": None,
    "confidence": None,
}


def paired_change(
    base: Sequence[float],
    head: Sequence[float],
    *,
    threshold_pct: float = 3.0,
    confidence: float = 0.99,
    better: str = "lower",
    alpha: float | None = None,
    ratios: Sequence[float] | None = None,
) -> dict:
    """Compare paired rounds (base[i] and head[i] measured in the same round).

    d_i = ln(head_i / base_i), or ln(ratios[i]) when the caller has a better per-round estimate of
    head/base (lockstep: the median of the round's pair ratios, decide.round_ratios); base/head stay
    the medians of the per-round values. Hodges–Lehmann estimate with the Wilcoxon signed-rank CI
    at 1 - alpha (alpha defaults to 1 - confidence; the sequential procedure passes `spent_alpha`);
    p from scipy.stats.wilcoxon, two-sided. Verdict rules: see the module docstring.
    """
    check_better(better)
    tau = check_threshold(threshold_pct)
    a = level(confidence, alpha)
    b = finite("base", base)
    h = finite("head", head)
    if b.size != h.size:
        raise ValueError(f"paired rounds need as many base as head values ({b.size} vs {h.size})")
    res = _result(b, h, better, True, a)
    n = b.size
    if n == 0:
        return metric(put(res, "reason", message("why.no_rounds")))
    if ratios is not None:
        r = finite("ratios", ratios)
        if r.size != n:
            raise ValueError(f"one ratio per round is needed ({r.size} for {n} rounds)")
        d = np.log(r)
    else:
        d = np.log(h) - np.log(b)
    walsh = walsh_averages(d)
    lo, hi = interval(walsh, signed_rank_cut(n, a))
    res["delta_pct"] = _pct(sorted_median(walsh))
    res["ci_low_pct"], res["ci_high_pct"] = _pct(lo), _pct(hi)
    res["p_value"] = wilcoxon_p(d)
    res["outliers"] = sum(modified_z_outliers(d))
    return _decide(
        res, units=n, unit_word="rounds", enough=n >= MIN_ROUNDS, need=lambda units: _too_few(units, MIN_ROUNDS),
        tau=tau, alpha=a, nominal=1.0 - confidence,
    )


def judge_shift(res: dict, hl: float, lo: float | None, hi: float | None, p: float | None, outliers: int, *,
                tau: float, alpha: float) -> Metric:
    """Fill an unpaired `result_of` entry from its log-scale HL shift, CI bounds, p and outlier count."""
    nb, nh = res["n_base"], res["n_head"]
    res["delta_pct"] = math.expm1(hl) * 100.0  # _pct, inlined: twice per benchmark of a diff
    res["ci_low_pct"] = None if lo is None else math.expm1(lo) * 100.0
    res["ci_high_pct"] = None if hi is None else math.expm1(hi) * 100.0
    res["p_value"] = p
    res["outliers"] = outliers
    return _decide(res, units=nb + nh, unit_word="samples", enough=min(nb, nh) >= MIN_ROUNDS,
                   need=lambda units: _too_few_each(units, nb, nh), tau=tau, alpha=alpha)


@lru_cache(maxsize=1024)
def _too_few_each(units: int, nb: int, nh: int) -> Message:
    return Message(**message("why.too_few_each", units=units, least=MIN_ROUNDS, nb=nb, nh=nh))


def check_tolerances(tolerance_pct: float, abs_tolerance_mb: float) -> None:
    for name, v in (("tolerance_pct", tolerance_pct), ("abs_tolerance_mb", abs_tolerance_mb)):
        if not math.isfinite(float(v)) or float(v) < 0:
            raise ValueError(f"{name} must be a non-negative number, not {v!r}")


def judge_memory(res: dict, outliers: int, *, tolerance_pct: float, abs_tolerance_mb: float) -> Metric:
    """Fill a memory `result_of` entry from its medians (already in it) and the outlier count."""
    res["delta_mb"] = None
    res["tolerance_mb"] = None
    nb, nh = res["n_base"], res["n_head"]
    if nb < MIN_MEMORY_RUNS or nh < MIN_MEMORY_RUNS:
        return metric(put(res, "reason", message("why.memory_few", nb=nb, nh=nh, least=MIN_MEMORY_RUNS)))
    bm, hm = res["base"], res["head"]
    diff = hm - bm
    tol = max(tolerance_pct / 100.0 * bm, float(abs_tolerance_mb))
    res["delta_mb"], res["tolerance_mb"] = float(diff), float(tol)
    if bm > 0:
        res["delta_pct"] = float((hm / bm - 1.0) * 100.0)
        res["mde"] = float(tol / bm * 100.0)  # judged against its tolerance: the least it flags
    elif hm == 0:
        res["delta_pct"] = 0.0
    res["outliers"] = outliers
    if abs(diff) <= tol:
        res["verdict"] = "unchanged"
    else:
        res["verdict"] = "regressed" if _is_worse(diff, res["better"]) else "improved"
    return metric(put(res, "reason", _memory_why(abs(diff) <= tol, bm, hm, diff, tol)))


@lru_cache(maxsize=4096, typed=True)
def _memory_why(within: bool, base: float, head: float, diff: float, tol: float) -> Message:
    """Shared, frozen: peak memory repeats to the MB across many benchmarks of a suite."""
    return Message(**message("why.memory_within" if within else "why.memory_beyond", base=base, head=head, diff=diff,
                             tol=tol))
