"""Sequential looks: when to look at the rounds again, and the α each look may spend.

In: the round counts of a benchmark's settings (`rounds`, `max_rounds`), a look number, an overall
α. Out: the list of round counts at which to look (`plan_looks`) and the nominal level for one look
(`spent_alpha`, Lan–DeMets α-spending), passed as `stats.paired_change(..., alpha=...)` so that the
error over all looks together stays ≤ α.
"""
from __future__ import annotations

import math

from profopt_ci.analyze.ranks import normal_isf, normal_sf

# A default plan never looks more often than this: every extra look thins the alpha of all looks.
MAX_DEFAULT_LOOKS = 6
_SPENDING = ("pocock", "obf", "linear")


def _spending(t: float, alpha: float, kind: str) -> float:
    """Cumulative alpha spent by information fraction t (Lan & DeMets 1983)."""
    if t <= 0:
        return 0.0
    if kind == "pocock":
        return alpha * math.log1p((math.e - 1.0) * t)
    if kind == "obf":
        return 2.0 * normal_sf(normal_isf(alpha / 2) / math.sqrt(t))
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
