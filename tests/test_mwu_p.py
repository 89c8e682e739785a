"""The Mann–Whitney p-value computed in `ranks` equals scipy's, and its exact null counts are right."""
from __future__ import annotations

import itertools
import math
import random
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from profopt_ci.analyze.ranks import _mwu_cumulative, mann_whitney_cut, mannwhitney_p


def _scipy_p(x: np.ndarray, y: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sps.mannwhitneyu(y, x, alternative="two-sided").pvalue)


def _sample(rng: random.Random, n: int, ties: bool) -> np.ndarray:
    if ties:  # few distinct values: ties within and across sides
        return np.log(np.asarray([rng.choice([1.0, 1.5, 2.0, 2.5]) for _ in range(n)]))
    return np.log(np.asarray([rng.lognormvariate(0, 0.3) for _ in range(n)]))


@pytest.mark.parametrize("ties", [False, True])
def test_p_equals_scipy_on_random_small_samples(ties: bool) -> None:
    rng = random.Random(14 + ties)
    checked = 0
    for _ in range(600):
        x, y = _sample(rng, rng.randint(1, 14), ties), _sample(rng, rng.randint(1, 14), ties)
        if ties and np.unique(np.concatenate((x, y))).size == 1:
            assert mannwhitney_p(x, y) == 1.0  # scipy gives nan or 1 here, depending on rounding
            continue
        assert mannwhitney_p(x, y) == pytest.approx(_scipy_p(x, y), rel=1e-9, abs=1e-15)
        checked += 1
    assert checked > 500


def test_shifted_samples_get_small_exact_p_like_scipy() -> None:
    x = np.log(np.arange(1.0, 9.0))
    y = x + 5.0
    assert mannwhitney_p(x, y) == pytest.approx(_scipy_p(x, y), rel=1e-12)
    assert mannwhitney_p(x, y) < 0.001


@pytest.mark.parametrize("m,n", [(1, 1), (2, 3), (3, 3), (4, 5), (5, 5)])
def test_exact_counts_match_enumeration(m: int, n: int) -> None:
    counts = [0] * (m * n + 1)
    for chosen in itertools.combinations(range(m + n), m):  # ranks of the first sample
        counts[sum(chosen) - m * (m - 1) // 2] += 1
    cum = list(itertools.accumulate(counts))
    assert list(_mwu_cumulative(m, n)) == cum[: m * n // 2 + 1]
    assert cum[-1] == math.comb(m + n, m)


def test_cut_is_the_largest_tail_within_alpha() -> None:
    cum, total = _mwu_cumulative(5, 5), math.comb(10, 5)
    cut = mann_whitney_cut(5, 5, 0.01)
    assert cum[cut - 1] / total <= 0.005 < cum[cut] / total


# ---- the Wilcoxon signed-rank p, each of scipy's "auto" branches -------------------------------------

def _signed(rng: random.Random, n: int, kind: str) -> np.ndarray:
    if kind == "ties":  # |d| repeats; now and then a zero
        return np.asarray([rng.choice([-2, -1, 0, 1, 1, 2, 3]) * 0.01 for _ in range(n)])
    if kind == "zeros":
        return np.asarray([0.0 if rng.random() < 0.2 else rng.gauss(0.01, 0.02) for _ in range(n)])
    return np.asarray([rng.gauss(rng.choice([0.0, 0.005, 0.02]), 0.02) for _ in range(n)])


@pytest.mark.parametrize("kind", ["continuous", "ties", "zeros"])
def test_wilcoxon_p_equals_scipy_on_every_branch(kind: str) -> None:
    """n ≤ 50 without ties or zeros: exact; ≤ 13 with them: every sign flip; else the normal
    approximation with tie correction; sizes 1 to 80."""
    from profopt_ci.analyze.ranks import wilcoxon_p

    rng = random.Random({"continuous": 1, "ties": 2, "zeros": 3}[kind])
    checked, tries = 0, 400 if kind == "continuous" else 45  # scipy's own permutation test: ~0.1 s a case
    for _ in range(tries):
        d = _signed(rng, rng.choice([rng.randint(1, 13), rng.randint(14, 50), rng.randint(51, 80)]), kind)
        if not np.any(d != 0):
            assert wilcoxon_p(d) == 1.0
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = float(sps.wilcoxon(d, alternative="two-sided").pvalue)
        assert wilcoxon_p(d) == pytest.approx(want, rel=1e-9, abs=1e-15), d.tolist()
        checked += 1
    assert checked > 0.85 * tries


def test_the_look_schedule_and_the_normal_cut_need_no_scipy():
    """A compare imports no scipy.stats: its normal quantiles come from the standard library."""
    import subprocess
    import sys

    code = ("import sys, profopt_ci.pipeline.compare_refs, profopt_ci.analyze.ranks as r\n"
            "from profopt_ci.analyze.look_schedule import spent_alpha\n"
            "spent_alpha(1, 5, spending='obf'); r.signed_rank_cut(120, 0.01); r.mann_whitney_cut(200, 200, 0.01)\n"
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("p", [0.5, 0.05, 1e-3, 1e-9, 1e-15])
def test_normal_quantiles_equal_scipys(p: float) -> None:
    from profopt_ci.analyze.ranks import normal_isf, normal_sf

    assert normal_isf(p) == pytest.approx(float(sps.norm.isf(p)), rel=1e-12)
    z = float(sps.norm.isf(p))
    assert normal_sf(z) == pytest.approx(float(sps.norm.sf(z)), rel=1e-12)
