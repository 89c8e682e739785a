"""Quality constraints compared step by step: a value only ever meets the other side's value at the same step.

In: a `Constraint` and each side's quality trace — `{"steps": n, "values": {name: [v1, …, vn]}}`
from the quality pass (measure/worker.py `profile_job`, measure/quality.py for commands), or
`{"status": "failed", "error": …}` when that pass failed. Out: the constraint entry of a comparison
(docs/data-model.md): `ok`, `base`/`head` (the values at the step with the largest |Δ|, or the last
step), `steps` ({first, last, count} compared), `worst_step`, `max_delta` (relative for rel_tol,
absolute for abs_tol, None for equal), `first_broken_step`, `problem` when it could not be compared
as asked (pass_failed, not_recorded, never_same, not_a_number, one_side with `one_side_step`), and
`detail` (English, for machines; the report composes its own words from the fields).

Why: a model trained on a fixed batch has a lower loss after every step; two workers sampled at
different step counts differ by the training between them, not by the code (an A/A of a training
step was rejected on a 2% loss "change"). The trace runs both sides the same number of steps from
the same seeds, so identical math gives |Δ| = 0 at every step and a divergence shows from the step
it starts.
"""
from __future__ import annotations

import math
from typing import Any

from profopt_ci.specfile.model import Constraint


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _nonfinite(v: Any) -> bool:
    return isinstance(v, str) and v in ("nan", "inf", "-inf")


def _delta(rule: str, b: Any, h: Any) -> float:
    """|Δ| of one step under the rule: relative to base for rel_tol, absolute for abs_tol."""
    if _nonfinite(b) or _nonfinite(h):
        return 0.0 if b == h else math.inf
    diff = abs(h - b)
    if rule == "abs_tol":
        return diff
    return diff / abs(b) if b else (0.0 if diff == 0 else math.inf)


def failed_side(base: dict | None, head: dict | None) -> tuple[str, str] | None:
    """(side, error) of a quality pass that failed, else None."""
    for side, tr in (("base", base), ("head", head)):
        if tr is not None and tr.get("status") == "failed":
            return side, str(tr.get("error") or "failed")
    return None


def check_at_steps(c: Constraint, base: dict, head: dict) -> dict:
    """The constraint over both traces, step by step (see the module doc for the keys)."""
    entry: dict = {"metric": c.metric, "rule": c.rule, "limit": c.limit, "base": None, "head": None, "ok": False,
                   "steps": None, "worst_step": None, "max_delta": None, "first_broken_step": None}
    failed = failed_side(base, head)
    if failed:
        side, error = failed
        last = [ln for ln in error.strip().splitlines() if ln.strip()][-1:] or [error]
        entry["detail"] = f"the quality pass failed on {side}: {last[0][:200]}"
        entry.update(problem="pass_failed", failed_side=side)
        return entry
    bv = (base.get("values") or {}).get(c.metric)
    hv = (head.get("values") or {}).get(c.metric)
    missing = [side for side, vals in (("base", bv), ("head", hv)) if not vals or all(v is None for v in vals)]
    if missing:
        entry["detail"] = f"`{c.metric}` was not recorded on {' and '.join(missing)}"
        entry["problem"] = "not_recorded"
        return entry
    steps = [i for i in range(min(len(bv), len(hv))) if bv[i] is not None and hv[i] is not None]
    only = [i for i in range(max(len(bv), len(hv)))
            if (i < len(bv) and bv[i] is not None) != (i < len(hv) and hv[i] is not None)]
    if not steps:
        entry["detail"] = f"`{c.metric}` was never recorded at the same step on both sides"
        entry["problem"] = "never_same"
        return entry
    entry["steps"] = {"first": steps[0] + 1, "last": steps[-1] + 1, "count": len(steps)}
    if c.rule == "equal":
        return _equal(entry, bv, hv, steps, only)
    if not all(_number(bv[i]) or _nonfinite(bv[i]) for i in steps) or \
            not all(_number(hv[i]) or _nonfinite(hv[i]) for i in steps):
        bad = next(i for i in steps if not (_number(bv[i]) or _nonfinite(bv[i]))
                   or not (_number(hv[i]) or _nonfinite(hv[i])))
        entry.update(base=bv[bad], head=hv[bad], worst_step=bad + 1, problem="not_a_number")
        entry["detail"] = (f"`{c.metric}` is not a number ({bv[bad]!r}, {hv[bad]!r} at step {bad + 1}) — "
                           "use `equal: true` for such values")
        return entry
    limit = float(c.limit)
    deltas = [(_delta(c.rule, bv[i], hv[i]), i) for i in steps]
    worst, at = max(deltas, key=lambda d: (d[0], -d[1]))
    broken = [i for d, i in deltas if d > limit]
    entry.update(base=bv[at], head=hv[at], worst_step=at + 1, max_delta=worst if math.isfinite(worst) else None,
                 first_broken_step=broken[0] + 1 if broken else None)
    entry["ok"] = not broken and not only
    if only:
        entry.update(problem="one_side", one_side_step=only[0] + 1)
    where = _where(entry["steps"])
    shown = f"{worst * 100:.3g}%" if c.rule == "rel_tol" else f"{worst:.4g}"
    bound = f"{limit * 100:g}%" if c.rule == "rel_tol" else f"{limit:g}"
    if only:
        entry["detail"] = f"`{c.metric}` recorded at step {only[0] + 1} on one side only ({where})"
    elif broken:
        entry["detail"] = (f"|Δ| {shown} > {bound} at step {at + 1}; first beyond {bound} at step "
                           f"{broken[0] + 1} ({where})")
    elif worst == 0:
        entry["detail"] = f"|Δ| 0 at every step ({where})"
    else:
        entry["detail"] = f"largest |Δ| {shown} ≤ {bound}, at step {at + 1} ({where})"
    return entry


def _equal(entry: dict, bv: list, hv: list, steps: list[int], only: list[int]) -> dict:
    differ = [i for i in steps if repr(bv[i]) != repr(hv[i])]
    at = differ[0] if differ else steps[-1]
    entry.update(base=bv[at], head=hv[at], worst_step=at + 1, first_broken_step=differ[0] + 1 if differ else None)
    entry["ok"] = not differ and not only
    if only:
        entry.update(problem="one_side", one_side_step=only[0] + 1)
    where = _where(entry["steps"])
    if only:
        entry["detail"] = f"`{entry['metric']}` recorded at step {only[0] + 1} on one side only ({where})"
    elif differ:
        entry["detail"] = (f"differs from step {at + 1}: base {str(bv[at])[:40]} vs head {str(hv[at])[:40]} "
                           f"({len(differ)} of {len(steps)} steps differ)")
    else:
        entry["detail"] = f"identical on both sides at every step ({where})"
    return entry


def _where(steps: dict) -> str:
    first, last, count = steps["first"], steps["last"], steps["count"]
    if count == 1:
        return f"compared at step {first}"
    span = f"steps {first}–{last}"
    return f"compared at {span}" if count == last - first + 1 else f"compared at {count} of {span}"
