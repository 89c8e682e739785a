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
