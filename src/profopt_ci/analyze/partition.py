"""Optimal partitioning of many series at once: the breakpoints PELT finds, without its per-series loop.

In: series of one length as the rows of a matrix, a penalty per series, the shortest segment.
Out: per series the segment ends (as `ruptures.Pelt(model="l2", min_size=…, jump=1).predict(pen)`
returns them, without the final `n`). Pure numpy.

The l2 cost of a segment is its sum of squared deviations from its mean, computed from cumulative
sums; F[t] = min over admissible starts s of F[s] + cost(s, t) + pen. PELT finds the same optimum
while pruning starts one series at a time in Python, which is what makes it slow on the site's long
histories (docs/baselines.md has the figures); here each t is one vectorized step over every
series and every start, exact, with no pruning. tests/test_site_changes.py holds the result equal to
ruptures' on random series with and without steps.
"""
from __future__ import annotations

import numpy as np


def optimal_partition(x: np.ndarray, pen: np.ndarray, min_size: int) -> list[list[int]]:
    """Segment ends (exclusive, the last `n` left out) of each row of `x` (m × n)."""
    m, n = x.shape
    c1 = np.zeros((m, n + 1))
    c2 = np.zeros((m, n + 1))
    np.cumsum(x, axis=1, out=c1[:, 1:])
    np.cumsum(x * x, axis=1, out=c2[:, 1:])
    best = np.full((m, n + 1), np.inf)
    best[:, 0] = -pen
    last = np.zeros((m, n + 1), dtype=np.int64)
    rows = np.arange(m)
    for t in range(min_size, n + 1):
        # a segment ending at t starts at 0 or at a t' ≥ min_size with t - t' ≥ min_size
        starts = np.concatenate(([0], np.arange(min_size, t - min_size + 1)))
        length = (t - starts).astype(float)
        s1 = c1[:, t:t + 1] - c1[:, starts]
        cost = (c2[:, t:t + 1] - c2[:, starts]) - s1 * s1 / length
        total = best[:, starts] + cost
        k = np.argmin(total, axis=1)
        best[:, t] = total[rows, k] + pen
        last[:, t] = starts[k]
    out = []
    for i in range(m):
        ends, t = [], n
        while t > 0:
            ends.append(t)
            t = int(last[i, t])
        out.append(sorted(ends)[:-1])
    return out
