"""The site's change point search: the batched optimal partition finds what ruptures' PELT finds,
`detect_many` what the nightly's `detect` finds, Welch's p what scipy.stats says, and the windows
of a long history own every index once."""
from __future__ import annotations

import math

import numpy as np
import pytest
import ruptures
from scipy import stats

from profopt_ci.analyze import changepoints
from profopt_ci.analyze.partition import optimal_partition
from profopt_ci.site import marks


def _random_series(rng: np.random.Generator, n: int) -> np.ndarray:
    v = 20 * (1 + 0.02 * rng.standard_normal(n))
    for _ in range(int(rng.integers(0, 3))):
        k = int(rng.integers(1, max(n, 2)))
        v[k:] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.02, 0.4)
    return v


def test_the_batched_partition_is_ruptures_pelt():
    rng = np.random.default_rng(11)
    for n in (6, 7, 12, 30, 61):
        xs = np.log(np.asarray([_random_series(rng, n) for _ in range(40)]))
        pens = np.asarray([changepoints._penalty(x) for x in xs])
        ours = optimal_partition(xs, pens, changepoints.MIN_SIZE)
        for x, pen, got in zip(xs, pens, ours, strict=True):
            want = ruptures.Pelt(model="l2", min_size=changepoints.MIN_SIZE, jump=1).fit(x.reshape(-1, 1)).predict(pen=pen)[:-1]
            assert got == want


def test_detect_many_is_detect_series_by_series():
    rng = np.random.default_rng(5)
    series = [_random_series(rng, int(rng.integers(1, 70))).tolist() for _ in range(150)]
    series.append([20.0, 20.0, 20.0, 26.0, 26.0, 26.0])   # no noise at all
    series.append([20.0, float("nan"), 20.0, 26.0, 26.0, 26.0])  # not a series of figures
    found = changepoints.detect_many(series)
    assert found == [changepoints.detect(s) for s in series]
    assert sum(1 for f in found if f) > 30  # the comparison saw steps, not only empty lists


def test_welch_p_is_scipys():
    rng = np.random.default_rng(3)
    for _ in range(300):
        a = rng.normal(0, rng.uniform(0.01, 1), int(rng.integers(2, 40)))
        b = rng.normal(rng.uniform(-1, 1), rng.uniform(0.01, 1), int(rng.integers(2, 40)))
        assert changepoints._welch_p(a, b) == pytest.approx(float(stats.ttest_ind(a, b, equal_var=False).pvalue),
                                                            rel=1e-9)


@pytest.mark.parametrize("n", [1, 9, marks.WINDOW, marks.WINDOW + 1, 1000, 1001])
def test_windows_own_every_index_once(n):
    owned = [0] * n
    for start, end, own_from, own_to in marks.windows(n):
        assert 0 <= start < end <= n and start <= own_from < own_to <= end
        assert end - start > marks.STRIDE or n <= marks.WINDOW
        for k in range(own_from, own_to):
            owned[k] += 1
    assert owned == [1] * n


def test_a_long_history_finds_each_step_once_and_a_rebuild_searches_only_the_new_window(tmp_path):
    rng = np.random.default_rng(2)
    steps = [150, 400, 401 + 230]
    values = 10 * (1 + 0.01 * rng.standard_normal(1000))
    for k in steps:
        values[k:] *= 1.2
    memo = marks.Memo(tmp_path / "memo")
    [found] = marks._steps_of([values], memo)
    assert [k for k, _, _ in found] == steps
    assert all(math.isclose(d, 20, abs_tol=3) for _, d, _ in found)
    memo.save()
    again = marks.Memo(tmp_path / "memo")
    longer = np.append(values, values[-1])
    [found2] = marks._steps_of([longer], again)
    assert [k for k, _, _ in found2] == steps
    assert again.searched <= 2 < memo.searched  # only the windows that reach the new nightly
