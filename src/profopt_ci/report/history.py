"""The report's nightly-history section: comparison["history"] → rows, steps and a mermaid trend.

In: a comparison@1 dict (its `history`, `drift` and benchmarks) and a language. Out: one dict
per benchmark with history for `_history.md.j2`: the trend chart (`Raw` mermaid), rows, step
sentences and the drift line.

One entry per benchmark that has stored nightly values: a `xychart-beta` line of the last values
with the pull request's head appended as the last point and marked by a bar, the change points as
sentences naming the commit range where each step entered, and the drift of a freshly measured
base (--baseline both) when there is one. Formatting only; analyze/changepoints.py and
store/stored_baselines.py did the analysis.
"""
from __future__ import annotations

import math

from profopt_ci.report.format import Raw, chart_label, chart_title, clip, num, pct
from profopt_ci.words.i18n import say

HISTORY_MAX = 12      # benchmarks with a trend in the comment
POINTS_MAX = 40       # nightly values per trend


def history_view(c: dict, lang: str) -> list[dict]:
    hist = c.get("history") or {}
    drift = c.get("drift") or {}
    out = []
    for name, h in list(hist.items())[:HISTORY_MAX]:
        values = [v for v in (h.get("values") or []) if isinstance(v, (int, float))]
        if not values:
            continue
        commits = [str(x)[:7] for x in (h.get("commits") or [])]
        offset = max(len(values) - POINTS_MAX, 0)
        steps = [say(lang, "history.step", delta=pct(cp.get("delta_pct")), start=str(cp.get("from_commit"))[:7],
                   end=str(cp.get("to_commit"))[:7], date=_date(h, cp.get("index")))
                 for cp in h.get("change_points") or []]
        d = drift.get(name) or {}
        drift_text = None
        if d.get("history_median") is not None and d.get("fresh") is not None:
            key = "history.drifted" if d.get("drifted") else "history.no_drift"
            drift_text = say(lang, key, fresh=num(d["fresh"]), median=num(d["history_median"]),
                           delta=pct(d.get("delta_pct")), n=d.get("n"))
        head = h.get("head") if isinstance(h.get("head"), (int, float)) else None
        out.append({
            "name": clip(str(name), 120),
            "caption": say(lang, "history.caption", n=len(values), first=commits[0] if commits else "?",
                         last=commits[-1] if commits else "?", latest=num(values[-1]),
                         head=num(head) if head is not None else "—"),
            "chart": trend_chart(str(name), values[offset:], commits[offset:], head, lang),
            "steps": steps or [say(lang, "history.no_steps")],
            "drift": drift_text,
            "rows": [{"commit": commits[i] if i < len(commits) else "?", "date": _date(h, i), "value": num(v)}
                     for i, v in enumerate(values)][offset:],
            "head": num(head) if head is not None else None,
        })
    return out


def _date(h: dict, index: object) -> str:
    dates = h.get("dates") or []
    return str(dates[index]) if isinstance(index, int) and 0 <= index < len(dates) else ""


def trend_chart(name: str, values: list[float], commits: list[str], head: float | None, lang: str) -> Raw:
    """A mermaid line of the nightly values; the head, when measured, is the last point and a bar."""
    labels = [chart_label(c, 12) for c in commits] + ([say(lang, "history.head_label")] if head is not None else [])
    line = list(values) + ([head] if head is not None else [])
    lo, hi = min(line), max(line)
    pad = (hi - lo) * 0.15 or hi * 0.05 or 1.0
    y_min, y_max = max(lo - pad, 0.0), hi + pad
    title = chart_title(say(lang, "history.title", name=name))
    y_label = chart_title(say(lang, "history.y"), 40)
    body = ["```mermaid", "xychart-beta", f'    title "{title}"',
            "    x-axis [" + ", ".join(f'"{x}"' for x in labels) + "]",
            f'    y-axis "{y_label}" {_g(y_min)} --> {_g(y_max)}']
    if head is not None:
        # only the head's bar stands above the axis floor: the mark of "this pull request"
        body.append("    bar [" + ", ".join([_g(y_min)] * len(values) + [_g(head)]) + "]")
    body.append("    line [" + ", ".join(_g(v) for v in line) + "]")
    body.append("```")
    return Raw("\n".join(body))


def _g(v: float) -> str:
    """Four significant figures without an exponent (mermaid reads plain decimals)."""
    if v == 0:
        return "0"
    digits = max(0, 3 - math.floor(math.log10(abs(v))))
    return f"{round(v, digits):.{digits}f}"
