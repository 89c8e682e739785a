"""Many benchmarks at once: p-values in, adjusted p-values or reject flags out.

In: one two-sided p-value per benchmark (None where a benchmark has none). Out: Benjamini–Hochberg
(`bh_adjusted`, `benjamini_hochberg`: flagged in the report) and Holm (`holm_adjusted`, `holm`: before
failing the build) results in the same order, None / False where the input was None. Definitions
are statsmodels' `fdr_bh` / `holm`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def _present(p_values: Sequence[float | None]) -> tuple[list[int], np.ndarray]:
    idx = [i for i, p in enumerate(p_values) if p is not None]
    try:  # one conversion for all: a large diff passes a p-value per benchmark, twice
        ps = np.asarray([p_values[i] for i in idx], dtype=float)
        ok = bool(np.all((ps >= 0.0) & (ps <= 1.0)))  # NaN fails this too
    except (TypeError, ValueError):
        ok = False
    if ok:
        return idx, ps
    for i in idx:  # the first bad value, with the error the loop always gave
        f = float(p_values[i])
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"p_values[{i}] = {p_values[i]!r} is not a probability in [0, 1]")
    return idx, np.asarray([float(p_values[i]) for i in idx], dtype=float)


def _adjusted(p_values: Sequence[float | None], adjust: Callable[[np.ndarray], np.ndarray]) -> list[float | None]:
    """`adjust(sorted present p-values)` → adjusted values, put back in the input's order (None stays)."""
    idx, ps = _present(p_values)
    out: list[float | None] = [None] * len(p_values)
    if ps.size == 0:
        return out
    order = np.argsort(ps, kind="stable")
    adj = np.empty(ps.size)
    adj[order] = np.minimum(adjust(ps[order]), 1.0)
    for i, v in zip(idx, adj.tolist(), strict=True):
        out[i] = v
    return out


def bh_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values (statsmodels `fdr_bh`); None stays None.

    m counts only the present p-values. p_adj(i) = min over j >= i of m * p_(j) / j, capped at 1.
    """
    def step_up(ps: np.ndarray) -> np.ndarray:
        raw = ps * ps.size / np.arange(1, ps.size + 1)
        return np.minimum.accumulate(raw[::-1])[::-1]

    return _adjusted(p_values, step_up)


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
    return _adjusted(p_values, lambda ps: np.maximum.accumulate(ps * np.arange(ps.size, 0, -1)))


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
