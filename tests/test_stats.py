"""Tests for profopt_ci.analyze (stats, ranks, multiplicity, looks): literal hand-computed cases, published tables, and seeded simulations.

Hand computations are written out next to each literal expectation so a reader can re-check them.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from profopt_ci.analyze import ranks
from profopt_ci.analyze.look_schedule import MAX_DEFAULT_LOOKS, plan_looks, spent_alpha
from profopt_ci.analyze.multiplicity import benjamini_hochberg, bh_adjusted, holm, holm_adjusted
from profopt_ci.analyze.ranks import (
    mann_whitney_cut,
    modified_z_outliers,
    signed_rank_cut,
)
from profopt_ci.analyze.stats import paired_change
from profopt_ci.analyze.unpaired import memory_change, unpaired_change

KEYS = {"base", "head", "delta_pct", "ci_low_pct", "ci_high_pct", "p_value", "verdict", "better", "n",
        "outliers", "reason", "paired"}


def _sigma(cv_: float) -> float:
    """Log-space sd of a lognormal with coefficient of variation cv_."""
    return math.sqrt(math.log1p(cv_**2))


def _rounds(rng, n, *, ratio=1.0, noise_cv=0.05, level=10.0, drift_cv=0.10):
    """n paired rounds: a per-round machine speed shared by both sides, independent noise per side."""
    speed = rng.lognormal(0.0, _sigma(drift_cv), n)
    base = level * speed * rng.lognormal(0.0, _sigma(noise_cv), n)
    head = level * ratio * speed * rng.lognormal(0.0, _sigma(noise_cv), n)
    return list(base), list(head)


# --------------------------------------------------------------------------------- estimates


def test_hodges_lehmann_literals():
    # Walsh averages of [0, 1, 3, 10]: 0, 1, 3, 10, .5, 1.5, 5, 2, 5.5, 6.5 -> sorted
    # 0 .5 1 1.5 2 | 3 5 5.5 6.5 10 -> median (2 + 3) / 2 = 2.5 (mean 3.5, median 2)
    assert ranks.sorted_median(ranks.walsh_averages([0, 1, 3, 10])) == 2.5
    # [1, 2, 4]: 1, 2, 4, 1.5, 2.5, 3 -> 1 1.5 2 | 2.5 3 4 -> 2.25
    assert ranks.sorted_median(ranks.walsh_averages([1, 2, 4])) == 2.25
    # unpaired, on logs: y - x for x = [1, 2], y = [3, 5, 10]: 2, 4, 9, 1, 3, 8 -> 1 2 3 | 4 8 9 -> 3.5
    res = unpaired_change([math.exp(1), math.exp(2)], [math.exp(3), math.exp(5), math.exp(10)])
    assert res["delta_pct"] == pytest.approx(math.expm1(3.5) * 100, rel=1e-12)


def test_paired_estimate_is_hl_of_log_ratios_in_percent():
    # d = [0, .01, .03, .10] -> HL 0.025 (as above, scaled by 1/100) -> (e^0.025 - 1) * 100
    d = [0.0, 0.01, 0.03, 0.10]
    res = paired_change([50.0] * 4, [50.0 * math.exp(x) for x in d])
    assert res["delta_pct"] == pytest.approx(math.expm1(0.025) * 100, abs=1e-9)
    assert res["base"] == 50.0
    assert res["head"] == pytest.approx(50.0 * (math.exp(0.01) + math.exp(0.03)) / 2)
    assert res["verdict"] == "inconclusive" and "only 4 rounds" in res["reason"]
    assert set(res) >= KEYS and res["paired"] is True and res["n"] == 4


def test_paired_ci_literal_n10_95():
    # d_i = i/100, i = 1..10. Signed-rank table, n = 10, two-sided 5%: reject when T <= 8, so the CI
    # is [W_(9), W_(47)] of the 55 Walsh averages. Smallest ones: 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3
    # (/100) -> W_(9) = .03; by symmetry about 5.5, W_(47) = .11 - .03 = .08.
    d = [i / 100 for i in range(1, 11)]
    res = paired_change([1.0] * 10, [math.exp(x) for x in d], confidence=0.95, threshold_pct=1.0)
    assert res["ci_low_pct"] == pytest.approx(math.expm1(0.03) * 100, abs=1e-9)
    assert res["ci_high_pct"] == pytest.approx(math.expm1(0.08) * 100, abs=1e-9)
    assert res["delta_pct"] == pytest.approx(math.expm1(0.055) * 100, abs=1e-9)
    assert res["verdict"] == "regressed"  # CI excludes 0, 5.65% >= 1%, lower is better


def test_unpaired_estimate_literal():
    # ratios head_j / base_i for base [1, 2], head [3, 5, 10]: 3, 5, 10, 1.5, 2.5, 5
    # -> 1.5 2.5 3 | 5 5 10 -> HL of the logs = ln sqrt(3 * 5) -> delta (sqrt(15) - 1) * 100
    res = unpaired_change([1.0, 2.0], [3.0, 5.0, 10.0])
    assert res["delta_pct"] == pytest.approx((math.sqrt(15) - 1) * 100)
    assert res["paired"] is False and res["n_base"] == 2 and res["n_head"] == 3
    assert res["verdict"] == "inconclusive" and "at least 6 on each side" in res["reason"]
    assert set(res) >= KEYS


# ------------------------------------------------------------------------ critical values


def test_critical_values_match_published_tables():
    # Wilcoxon signed-rank, two-sided: n=10 T<=8 (5%), T<=3 (1%); n=20 T<=52 (5%), T<=37 (1%).
    assert signed_rank_cut(10, 0.05) == 9
    assert signed_rank_cut(10, 0.01) == 4
    assert signed_rank_cut(20, 0.05) == 53
    assert signed_rank_cut(20, 0.01) == 38
    # smallest two-sided p with n rounds is 2 / 2^n: 6 rounds cannot reach 1%, 8 can.
    assert signed_rank_cut(6, 0.01) == 0
    assert signed_rank_cut(8, 0.01) == 1
    # Mann-Whitney U, n1 = n2 = 10, two-sided: U <= 23 (5%), U <= 16 (1%).
    assert mann_whitney_cut(10, 10, 0.05) == 24
    assert mann_whitney_cut(10, 10, 0.01) == 17
    # 5 vs 5: P(U = 0) = 1/252 < 0.005, P(U <= 1) = 2/252 > 0.005
    assert mann_whitney_cut(5, 5, 0.01) == 1


def test_normal_approximation_is_close_and_conservative(monkeypatch):
    exact = {n: signed_rank_cut(n, 0.01) for n in (40, 80)}
    exact_u = mann_whitney_cut(40, 50, 0.01)
    monkeypatch.setattr(ranks, "EXACT_SIGNED_RANK_MAX_N", 0)
    monkeypatch.setattr(ranks, "EXACT_MWU_MAX_CELLS", 0)
    signed_rank_cut.cache_clear()
    mann_whitney_cut.cache_clear()
    try:
        for n, e in exact.items():
            approx = signed_rank_cut(n, 0.01)
            assert e - 5 <= approx <= e
        assert exact_u - 5 <= mann_whitney_cut(40, 50, 0.01) <= exact_u
    finally:
        signed_rank_cut.cache_clear()
        mann_whitney_cut.cache_clear()


@pytest.mark.parametrize("n", [8, 12, 25])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_paired_ci_agrees_with_scipy_exact_test(n, alpha):
    # Without ties, "the CI excludes 0" is the signed-rank test at alpha: check it against scipy.
    rng = np.random.default_rng(n * 1000 + int(alpha * 1000))
    seen = set()
    for _ in range(60):
        d = rng.normal(rng.uniform(-0.05, 0.05), 0.03, n)
        res = paired_change([1.0] * n, list(np.exp(d)), alpha=alpha, threshold_pct=0.0)
        p = sps.wilcoxon(d, method="exact").pvalue
        excludes = res["ci_low_pct"] > 0 or res["ci_high_pct"] < 0
        assert excludes == (p <= alpha), (d, p, res)
        seen.add(excludes)
    assert seen == {True, False}


@pytest.mark.parametrize(("m", "n"), [(6, 6), (8, 11), (15, 15)])
def test_unpaired_ci_agrees_with_scipy_exact_test(m, n):
    rng = np.random.default_rng(m * 100 + n)
    seen = set()
    for _ in range(60):
        x = rng.normal(0.0, 0.03, m)
        y = rng.normal(rng.uniform(-0.06, 0.06), 0.03, n)
        res = unpaired_change(list(np.exp(x)), list(np.exp(y)), confidence=0.95, threshold_pct=0.0)
        p = sps.mannwhitneyu(y, x, method="exact").pvalue
        excludes = res["ci_low_pct"] > 0 or res["ci_high_pct"] < 0
        assert excludes == (p <= 0.05), (x, y, p, res)
        seen.add(excludes)
    assert seen == {True, False}


# ------------------------------------------------------------------------ simulations


def test_ci_covers_true_shift_at_99_percent():
    rng = np.random.default_rng(20240601)
    true_pct = 4.0
    covered, widths = 0, []
    for _ in range(300):
        base, head = _rounds(rng, 20, ratio=1 + true_pct / 100, noise_cv=0.05)
        res = paired_change(base, head)
        covered += res["ci_low_pct"] <= true_pct <= res["ci_high_pct"]
        widths.append(res["ci_high_pct"] - res["ci_low_pct"])
    assert covered / 300 >= 0.97
    assert np.median(widths) < 12  # an honest interval, not an arbitrarily wide one


def test_ci_at_80_percent_is_not_overly_wide():
    # coverage should sit near the nominal level, not far above it
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(300):
        base, head = _rounds(rng, 20, ratio=0.97, noise_cv=0.05)
        res = paired_change(base, head, confidence=0.80)
        covered += res["ci_low_pct"] <= -3.0 <= res["ci_high_pct"]
    assert 0.72 <= covered / 300 <= 0.90


def test_unpaired_ci_coverage():
    rng = np.random.default_rng(99)
    covered = 0
    for _ in range(200):
        base = rng.lognormal(math.log(10), _sigma(0.05), 20)
        head = rng.lognormal(math.log(10 * 1.05), _sigma(0.05), 20)
        res = unpaired_change(list(base), list(head))
        covered += res["ci_low_pct"] <= 5.0 <= res["ci_high_pct"]
    assert covered / 200 >= 0.97


def test_a_a_rarely_regressed():
    rng = np.random.default_rng(1234)
    verdicts = [paired_change(*_rounds(rng, 20, noise_cv=0.05))["verdict"] for _ in range(300)]
    assert verdicts.count("regressed") <= 6
    assert verdicts.count("improved") <= 6


def test_a_a_with_tight_noise_is_unchanged():
    rng = np.random.default_rng(5)
    verdicts = [paired_change(*_rounds(rng, 20, noise_cv=0.01))["verdict"] for _ in range(100)]
    assert verdicts.count("unchanged") >= 95


def test_unpaired_a_a_rarely_regressed():
    rng = np.random.default_rng(4321)
    regressed = 0
    for _ in range(200):
        base = rng.lognormal(math.log(10), _sigma(0.05), 20)
        head = rng.lognormal(math.log(10), _sigma(0.05), 20)
        regressed += unpaired_change(list(base), list(head))["verdict"] == "regressed"
    assert regressed <= 4


def test_sequential_looks_keep_false_verdicts_rare():
    # A/A, threshold 0 so that only significance decides: rounds 20 -> 60 in 5 looks, stopping at
    # the first verdict that is not inconclusive. Spending keeps false verdicts near <= 1%.
    rng = np.random.default_rng(31)
    looks = plan_looks(20, 60)
    false = 0
    for _ in range(300):
        base, head = _rounds(rng, looks[-1], noise_cv=0.05)
        for k, n in enumerate(looks, start=1):
            res = paired_change(base[:n], head[:n], threshold_pct=0.0,
                                alpha=spent_alpha(k, len(looks), 0.01))
            if res["verdict"] != "inconclusive":
                false += res["verdict"] in ("regressed", "improved")
                break
    assert false <= 9


# ------------------------------------------------------------------------ verdicts


def test_clear_regression_is_regressed():
    rng = np.random.default_rng(11)
    base, head = _rounds(rng, 20, ratio=1.30, noise_cv=0.03)
    res = paired_change(base, head)
    assert res["verdict"] == "regressed"
    assert res["p_value"] < 0.01
    assert 25 < res["delta_pct"] < 35
    assert res["ci_low_pct"] <= 30 <= res["ci_high_pct"]
    assert res["outliers"] == 0 and res["n"] == 20 and res["better"] == "lower"
    assert "threshold" in res["reason"]


def test_clear_improvement_is_improved():
    rng = np.random.default_rng(12)
    res = paired_change(*_rounds(rng, 20, ratio=0.80, noise_cv=0.03))
    assert res["verdict"] == "improved" and res["delta_pct"] < -15


def test_small_change_with_tight_noise_is_unchanged():
    rng = np.random.default_rng(13)
    res = paired_change(*_rounds(rng, 20, ratio=1.01, noise_cv=0.002))
    # significant, but the whole CI lies inside +-3%: not worth a verdict of change
    assert res["ci_low_pct"] > 0
    assert res["verdict"] == "unchanged"
    assert "within ±3%" in res["reason"]


def test_significant_but_straddling_threshold_is_inconclusive():
    # ~2.5% with a CI reaching past 3%: neither a change worth reporting nor provably unchanged
    rng = np.random.default_rng(17)
    res = paired_change(*_rounds(rng, 40, ratio=1.02, noise_cv=0.015))
    assert res["ci_low_pct"] > 0 and res["ci_high_pct"] > 3 and abs(res["delta_pct"]) < 3
    assert res["verdict"] == "inconclusive"


def test_noisy_moderate_change_is_inconclusive():
    rng = np.random.default_rng(14)
    res = paired_change(*_rounds(rng, 10, ratio=1.03, noise_cv=0.10))
    assert res["verdict"] == "inconclusive"
    assert res["ci_low_pct"] < 0 < res["ci_high_pct"]


def test_throughput_drop_is_regressed_when_higher_is_better():
    rng = np.random.default_rng(15)
    base, head = _rounds(rng, 20, ratio=0.80, noise_cv=0.03, level=5000.0)
    high = paired_change(base, head, better="higher")
    assert high["verdict"] == "regressed" and high["better"] == "higher"
    assert paired_change(base, head, better="lower")["verdict"] == "improved"
    assert paired_change(head, base, better="higher")["verdict"] == "improved"
    assert unpaired_change(base, head, better="higher")["verdict"] == "regressed"


def test_outlier_rounds_make_it_unstable():
    rng = np.random.default_rng(16)
    base, head = _rounds(rng, 20, ratio=1.0, noise_cv=0.01)
    for i in (2, 9, 15):  # 3 of 20 rounds hit by a 1.5x slowdown on one side only
        head[i] *= 1.5
    res = paired_change(base, head)
    assert res["outliers"] == 3
    assert res["verdict"] == "unstable" and "3 of 20 rounds" in res["reason"]
    # 2 of 20 is exactly 10%, not more: judged on the CI instead. The estimate shrugs the spikes
    # off, but the 99% CI honestly widens (Walsh averages with a spike reach its upper end).
    head[15] /= 1.5
    res2 = paired_change(base, head)
    assert res2["outliers"] == 2 and res2["verdict"] == "inconclusive"
    assert abs(res2["delta_pct"]) < 1.5 and res2["ci_high_pct"] > 3


def test_unpaired_outliers_make_it_unstable():
    rng = np.random.default_rng(18)
    base = list(rng.lognormal(math.log(10), _sigma(0.01), 20))
    head = list(rng.lognormal(math.log(10), _sigma(0.01), 20))
    base[0] *= 2
    head[0] *= 2
    head[1] *= 2
    head[2] *= 2
    res = unpaired_change(base, head)
    assert res["outliers"] == 4 and 4 <= 0.10 * 40  # 10% of 40: not yet unstable
    assert res["outlier_note"] is None
    head[3] *= 2
    res = unpaired_change(base, head)
    # more than 10%, but the CI lies within ±3%: it decides, the share becomes a note
    assert res["verdict"] == "unchanged" and "5 of 40 samples are outliers" in res["outlier_note"]
    head[4] *= 2
    head[5] *= 2
    res = unpaired_change(base, head, threshold_pct=1.0)
    assert res["verdict"] == "unstable" and "too noisy" in res["reason"]


def test_outliers_never_overturn_a_ci_beyond_the_threshold():
    rng = np.random.default_rng(21)
    base, head = _rounds(rng, 16, ratio=0.70, noise_cv=0.02)
    for i in (1, 5, 11):  # 3 of 16 rounds spiked on one side
        head[i] *= 1.6
    res = paired_change(base, head)
    assert res["outliers"] == 3 and res["ci_high_pct"] < -3
    assert res["verdict"] == "improved" and "3 of 16 rounds are outliers" in res["outlier_note"]
    b = list(rng.lognormal(math.log(1.0), _sigma(0.05), 10)) + [9.0, 12.0]
    h = list(rng.lognormal(math.log(10.0), _sigma(0.05), 10)) + [0.9, 100.0]
    res = unpaired_change(b, h)
    assert res["p_value"] < 0.01 and res["verdict"] == "regressed" and res["outlier_note"]


def test_few_rounds_are_inconclusive():
    res = paired_change([10.0] * 5, [13.0, 13.1, 12.9, 13.2, 13.0])
    assert res["verdict"] == "inconclusive" and "only 5 rounds" in res["reason"]
    # 6 rounds of a clear +30%: the 99% CI cannot be bounded (smallest p is 2/64)
    base6, head6 = [10.0, 10.1, 9.9, 10.2, 10.0, 9.8], [13.0, 13.1, 12.9, 13.2, 13.0, 12.8]
    res6 = paired_change(base6, head6)
    assert res6["verdict"] == "inconclusive" and res6["ci_low_pct"] is None
    assert "cannot bound a 99% CI" in res6["reason"]
    # ... while at 90% it can, and it is decisive
    assert paired_change(base6, head6, confidence=0.90)["verdict"] == "regressed"
    empty = paired_change([], [])
    assert empty["verdict"] == "inconclusive" and empty["n"] == 0 and empty["base"] is None


def test_spent_alpha_widens_the_ci():
    rng = np.random.default_rng(19)
    base, head = _rounds(rng, 20, ratio=1.05)
    wide = paired_change(base, head, alpha=0.002)
    narrow = paired_change(base, head)
    assert wide["confidence"] == pytest.approx(0.998) and narrow["confidence"] == pytest.approx(0.99)
    assert wide["ci_low_pct"] < narrow["ci_low_pct"] and wide["ci_high_pct"] > narrow["ci_high_pct"]
    assert wide["delta_pct"] == narrow["delta_pct"]
    # the reason names the nominal level the report's headings say; the look's own is `confidence`
    assert "(99% CI " in wide["reason"] and "99.8" not in wide["reason"]


def test_identical_sides():
    res = paired_change([10.0] * 12, [10.0] * 12)
    assert res["delta_pct"] == 0.0 and res["p_value"] == 1.0 and res["outliers"] == 0
    assert res["verdict"] == "unchanged"


@pytest.mark.parametrize(
    ("base", "head", "kwargs", "match"),
    [
        ([1.0, 0.0], [1.0, 1.0], {}, r"base\[1\] = 0.0 must be positive"),
        ([1.0, 2.0], [1.0, -1.0], {}, r"head\[1\] = -1.0 must be positive"),
        ([1.0, float("nan")], [1.0, 1.0], {}, "not finite"),
        ([1.0, float("inf")], [1.0, 1.0], {}, "not finite"),
        ([1.0, "x"], [1.0, 1.0], {}, "not a number"),
        ([1.0, 2.0], [1.0], {}, "as many base as head"),
        ([1.0], [1.0], {"better": "faster"}, "better must be"),
        ([1.0], [1.0], {"confidence": 1.5}, "confidence"),
        ([1.0], [1.0], {"alpha": 0.0}, "alpha"),
        ([1.0], [1.0], {"threshold_pct": -1}, "threshold_pct"),
    ],
)
def test_bad_input_raises(base, head, kwargs, match):
    with pytest.raises(ValueError, match=match):
        paired_change(base, head, **kwargs)


def test_unpaired_bad_input_raises():
    with pytest.raises(ValueError, match="positive"):
        unpaired_change([1.0, 2.0], [0.0, 1.0])


# ------------------------------------------------------------------------ memory


def test_memory_within_tolerance_is_unchanged():
    res = memory_change([200.0, 201.0, 200.5], [206.0, 205.5, 207.0])  # +5.5 MB <= 5% of 200.5
    assert res["verdict"] == "unchanged"
    assert res["base"] == 200.5 and res["head"] == 206.0 and res["delta_mb"] == pytest.approx(5.5)
    assert res["tolerance_mb"] == pytest.approx(10.025)
    assert res["ci_low_pct"] is None and res["ci_high_pct"] is None and res["p_value"] is None
    assert set(res) >= KEYS


def test_memory_regression_and_improvement():
    up = memory_change([200.0] * 5, [230.0] * 5)
    assert up["verdict"] == "regressed" and up["delta_pct"] == pytest.approx(15.0)
    down = memory_change([200.0] * 5, [170.0] * 5)
    assert down["verdict"] == "improved" and "exceeds" in down["reason"]
    # small process: the absolute floor (4 MB) dominates 5% of 20 MB
    assert memory_change([20.0] * 3, [23.5] * 3)["verdict"] == "unchanged"
    assert memory_change([20.0] * 3, [24.5] * 3)["verdict"] == "regressed"
    assert memory_change([20.0] * 3, [24.5] * 3, better="higher")["verdict"] == "improved"


def test_memory_edge_cases():
    assert memory_change([0.0] * 3, [0.0] * 3)["verdict"] == "unchanged"
    assert memory_change([0.0] * 3, [0.0] * 3)["delta_pct"] == 0.0
    assert memory_change([0.0] * 3, [50.0] * 3)["delta_pct"] is None
    few = memory_change([200.0, 200.0], [300.0, 300.0])
    assert few["verdict"] == "inconclusive" and "at least 3" in few["reason"]
    with pytest.raises(ValueError, match="non-negative"):
        memory_change([200.0, -1.0, 200.0], [200.0] * 3)
    with pytest.raises(ValueError, match="tolerance_pct"):
        memory_change([1.0] * 3, [1.0] * 3, tolerance_pct=-5)


# ------------------------------------------------------------------------ multiple comparisons


def test_bh_hand_example():
    # sorted .005 .01 .03 .04 (m = 4): m p / rank = .02 .02 .04 .04, running min from the top
    # keeps them -> back in input order [.01, .04, .03, .005] -> [.02, .04, .04, .02]
    ps = [0.01, 0.04, 0.03, 0.005]
    assert bh_adjusted(ps) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # q = .03: largest k with p_(k) <= k q / 4: k=2 (.01 <= .015), k=3 fails (.03 > .0225)
    assert benjamini_hochberg(ps, q=0.03) == [True, False, False, True]
    assert benjamini_hochberg(ps, q=0.05) == [True, True, True, True]  # .04 <= 4 * .05 / 4
    assert benjamini_hochberg(ps, q=0.01) == [False, False, False, False]  # .005 > .0025


def test_bh_step_up_and_none():
    # step-up: p_(3) = .022 <= 3 * .025 / 3 rescues the smaller ones, though .02 > .025 / 3
    ps = [0.02, 0.021, 0.022]
    assert bh_adjusted(ps) == pytest.approx([0.022, 0.022, 0.022])  # raw .06 .0315 .022
    assert benjamini_hochberg(ps, q=0.025) == [True, True, True]
    # None is skipped and m counts only the present p-values
    with_none = [None, 0.01, None, 0.04, 0.03, 0.005]
    assert bh_adjusted(with_none) == pytest.approx([None, 0.02, None, 0.04, 0.04, 0.02])
    assert benjamini_hochberg(with_none, q=0.03) == [False, True, False, False, False, True]
    assert bh_adjusted([0.5, 0.9]) == pytest.approx([0.9, 0.9])  # .5 * 2 = 1.0, min with .9
    assert bh_adjusted([]) == [] and benjamini_hochberg([None]) == [False]


def test_holm_hand_example():
    # sorted .005 .01 .03 .04: (m - i + 1) p = .02 .03 .06 .04, running max -> .02 .03 .06 .06
    ps = [0.01, 0.04, 0.03, 0.005]
    assert holm_adjusted(ps) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # alpha .05: .005 <= .0125, .01 <= .0167, .03 > .025 -> stop
    assert holm(ps, alpha=0.05) == [True, False, False, True]
    # step-down stops at the first failure even if a later p would pass its own bound
    assert holm([0.001, 0.03, 0.035], alpha=0.05) == [True, False, False]
    assert holm_adjusted([0.001, 0.03, 0.035]) == pytest.approx([0.003, 0.06, 0.06])
    assert holm_adjusted([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm_adjusted([None, 0.02]) == [None, pytest.approx(0.02)]
    assert holm([None, 0.02], alpha=0.05) == [False, True]


def test_decisions_agree_with_adjusted_p_values():
    rng = np.random.default_rng(3)
    for _ in range(200):
        ps = list(rng.uniform(0, 0.05, rng.integers(1, 12)) ** rng.uniform(0.5, 2))
        ps = [None if rng.random() < 0.1 else float(p) for p in ps]
        bh, hm = bh_adjusted(ps), holm_adjusted(ps)
        assert benjamini_hochberg(ps, 0.01) == [a is not None and a <= 0.01 for a in bh]
        assert holm(ps, 0.01) == [a is not None and a <= 0.01 for a in hm]
        # Holm is never less strict than BH
        assert all(h is None or h >= b - 1e-15 for h, b in zip(hm, bh, strict=True))


def test_multiple_comparison_bad_input():
    with pytest.raises(ValueError, match="probability"):
        bh_adjusted([0.5, 1.5])
    with pytest.raises(ValueError, match="probability"):
        holm([float("nan")])
    with pytest.raises(ValueError, match="q must"):
        benjamini_hochberg([0.1], q=0)


# ------------------------------------------------------------------------ sequential looks


@pytest.mark.parametrize("spending", ["pocock", "obf", "linear"])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_spent_alpha_sums_to_at_most_alpha(spending, alpha):
    for k_max in range(1, 11):
        parts = [spent_alpha(k, k_max, alpha, spending=spending) for k in range(1, k_max + 1)]
        assert all(p > 0 for p in parts)
        assert math.fsum(parts) <= alpha * (1 + 1e-12)
        assert math.fsum(parts) == pytest.approx(alpha, rel=1e-9)  # and the whole budget is used


def test_spent_alpha_shapes():
    assert spent_alpha(1, 1, 0.01) == 0.01
    pocock = [spent_alpha(k, 5) for k in range(1, 6)]
    # alpha ln(1 + (e - 1) k / 5): first look ln(1.34366) * .01 = .0029539
    assert pocock[0] == pytest.approx(0.01 * math.log(1 + (math.e - 1) * 0.2))
    assert pocock == sorted(pocock, reverse=True)  # front-loaded
    assert spent_alpha(1, 5, spending="linear") == pytest.approx(0.002)
    obf = [spent_alpha(k, 5, spending="obf") for k in range(1, 6)]
    assert obf == sorted(obf) and obf[0] < 1e-7  # back-loaded
    for bad in [(0, 5), (6, 5), (1, 0)]:
        with pytest.raises(ValueError):
            spent_alpha(*bad)
    with pytest.raises(ValueError, match="spending"):
        spent_alpha(1, 2, spending="pocok")


def test_plan_looks():
    assert plan_looks(20, 60) == [20, 30, 40, 50, 60]
    assert plan_looks(20, 20) == [20]
    assert plan_looks(20, 10) == [20]
    assert plan_looks(20, 61) == [20, 30, 40, 50, 61]  # a 1-round tail is merged into the last look
    assert plan_looks(20, 65) == [20, 30, 40, 50, 60, 65]
    assert plan_looks(20, 60, step=20) == [20, 40, 60]
    assert plan_looks(20, 23, step=10) == [20, 23]
    long = plan_looks(10, 400)
    assert long[0] == 10 and long[-1] == 400 and len(long) <= MAX_DEFAULT_LOOKS
    assert long == sorted(set(long))
    for bad in [(0, 10), (10, 20, 0), (10.0, 20)]:
        with pytest.raises(ValueError):
            plan_looks(*bad)


# ------------------------------------------------------------------------ descriptive


def test_modified_z_outliers():
    # median 10.025, |dev| .025 .075 .125 .025 .075 19.975 -> MAD .075; 30 scores 179.6, 9.9 scores 1.12
    assert modified_z_outliers([10, 10.1, 9.9, 10.05, 9.95, 30]) == [False] * 5 + [True]
    # MAD = 0: scale by mean |dev| = 4/6 -> z = 4 / (1.253314 * 0.667) = 4.79
    assert modified_z_outliers([5, 5, 5, 5, 5, 9]) == [False] * 5 + [True]
    assert modified_z_outliers([5, 5, 5, 5, 5, 5.5]) == [False] * 5 + [True]
    assert modified_z_outliers([5.0] * 6) == [False] * 6
    assert modified_z_outliers([5, 5, 5, 5, 5, 9], cutoff=5.0) == [False] * 6
    assert modified_z_outliers([]) == []
    # log ratios equal up to float rounding are not outliers of each other
    d = [math.log(1.01 * x) - math.log(x) for x in (1.0, 3.0, 7.0, 11.0, 13.0, 0.1, 1e6)]
    assert modified_z_outliers(d) == [False] * len(d)
