"""Plain numbers for the documents: which values count as measurements, and how they are rounded.

In: floats (or anything a JSON file held). Out: a bool, or a float rounded to significant figures.
One definition, so a boolean or a NaN is refused alike by the statistics, the history and the store.
"""
from __future__ import annotations

import math
from typing import Any


def is_measurement(v: Any) -> bool:
    """A positive finite number (True/False are ints in Python, but not measurements)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def sig(x: float | None, digits: int = 4) -> float | None:
    """x to `digits` significant figures; None, NaN and ±inf pass through unchanged."""
    if x is None or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def per_step(total: Any, steps: int) -> float | None:
    """A count a worker reported over its timed steps (its page faults), per step; None where it
    reported none."""
    if not isinstance(total, int) or isinstance(total, bool) or total < 0 or steps <= 0:
        return None
    return sig(total / steps, 4)
