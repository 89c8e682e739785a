"""Quality constraints compared step by step: a value only ever meets the other side's value at the same step.

In: a `Constraint` and each side's quality trace — `{"steps": n, "values": {name: [v1, …, vn]}}`
from the quality pass (measure/worker.py `profile_job`, measure/quality.py for commands), or
`{"status": "failed", "error": …}` when that pass failed. Out: the constraint entry of a comparison
(docs/data-model.md): `ok`, `base`/`head` (the values at the step with the largest |Δ|, or the last
step), `steps` ({first, last, count} compared), `worst_step`, `max_delta` (relative for rel_tol,
absolute for abs_tol, None for equal), `first_broken_step`, `problem` when it could not be compared
as asked (pass_failed, not_recorded, never_same, not_a_number, one_side with `one_side_step`), and
`detail`, its English, with `detail_msg` beside it: the message the report says in its language.

Why: a model trained on a fixed batch has a lower loss after every step; two workers sampled at
different step counts differ by the training between them, not by the code (an A/A of a training
step was rejected on a 2% loss "change"). The trace runs both sides the same number of steps from
the same seeds, so identical math gives |Δ| = 0 at every step and a divergence shows from the step
it starts.
"""
from __future__ import annotations

import math
from typing import Any

from profopt_ci.documents.statement import put
from profopt_ci.specfile.model import Constraint
from profopt_ci.words.i18n import message


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
        entry.update(problem="pass_failed", failed_side=side)
        return put(entry, "detail", message("con.pass_failed", side=side, error=last[0][:200]))
    bv = (base.get("values") or {}).get(c.metric)
    hv = (head.get("values") or {}).get(c.metric)
    missing = [side for side, vals in (("base", bv), ("head", hv)) if not vals or all(v is None for v in vals)]
    if missing:
        entry["problem"] = "not_recorded"
        return put(entry, "detail", message("con.not_recorded", metric=c.metric, sides=missing))
    steps = [i for i in range(min(len(bv), len(hv))) if bv[i] is not None and hv[i] is not None]
    only = [i for i in range(max(len(bv), len(hv)))
            if (i < len(bv) and bv[i] is not None) != (i < len(hv) and hv[i] is not None)]
    if not steps:
        entry["problem"] = "never_same"
        return put(entry, "detail", message("con.never_same", metric=c.metric))
    entry["steps"] = {"first": steps[0] + 1, "last": steps[-1] + 1, "count": len(steps)}
    if c.rule == "equal":
        return _equal(entry, bv, hv, steps, only)
    if not all(_number(bv[i]) or _nonfinite(bv[i]) for i in steps) or \
            not all(_number(hv[i]) or _nonfinite(hv[i]) for i in steps):
        bad = next(i for i in steps if not (_number(bv[i]) or _nonfinite(bv[i]))
                   or not (_number(hv[i]) or _nonfinite(hv[i])))
        entry.update(base=bv[bad], head=hv[bad], worst_step=bad + 1, problem="not_a_number")
        return put(entry, "detail", message("con.not_a_number_at", metric=c.metric, base=repr(bv[bad]), head=repr(hv[bad]),
                                   step=bad + 1))
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
    shown = (f"{worst * 100:.3g}%" if c.rule == "rel_tol" else f"{worst:.4g}") if math.isfinite(worst) else "∞"
    bound = f"{limit * 100:.3g}%" if c.rule == "rel_tol" else f"{limit:.4g}"
    if only:
        return put(entry, "detail", message("con.one_side", metric=c.metric, step=only[0] + 1, where=where))
    if broken:
        return put(entry, "detail", message("con.beyond", delta=shown, limit=bound, step=at + 1, first=broken[0] + 1,
                                   where=where))
    if worst == 0:
        return put(entry, "detail", message("con.zero", where=where))
    return put(entry, "detail", message("con.within", delta=shown, limit=bound, step=at + 1, where=where))


def _equal(entry: dict, bv: list, hv: list, steps: list[int], only: list[int]) -> dict:
    differ = [i for i in steps if repr(bv[i]) != repr(hv[i])]
    at = differ[0] if differ else steps[-1]
    entry.update(base=bv[at], head=hv[at], worst_step=at + 1, first_broken_step=differ[0] + 1 if differ else None)
    entry["ok"] = not differ and not only
    if only:
        entry.update(problem="one_side", one_side_step=only[0] + 1)
    where = _where(entry["steps"])
    if only:
        return put(entry, "detail", message("con.one_side", metric=entry["metric"], step=only[0] + 1, where=where))
    if differ:
        return put(entry, "detail", message("con.differs_from", step=at + 1, base=str(bv[at])[:40], head=str(hv[at])[:40],
                                   differ=len(differ), count=len(steps), where=where))
    return put(entry, "detail", message("con.identical_steps", where=where))


def _where(steps: dict) -> dict:
    first, last, count = steps["first"], steps["last"], steps["count"]
    key = "con.where_one" if count == 1 else "con.where_span" if count == last - first + 1 else "con.where_some"
    return message(key, first=first, last=last, count=count)

