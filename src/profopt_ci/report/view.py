"""comparison@1 → a view: the report's content as plain strings and rows, in one language.

In: a comparison@1 dict, the language, the characters all error tails may take, whether to draw
SVG plots (HTML). Out: the dict the templates print as `v`: headline, meta line, notes, benchmark
sections (report/bench_view.py), unchanged ones apart, and the detail sections (report/details.py).
No statistics happen here: numbers are formatted, rows ordered and long values capped. The view is
format-neutral; the Markdown environment escapes every string it prints, the HTML one autoescapes.
"""
from __future__ import annotations

from profopt_ci.report.bench_view import bench_view
from profopt_ci.report.details import chart, environments, hot_ops, noise, phases
from profopt_ci.report.format import clip, confidence_label, value_text
from profopt_ci.report.headline import headline
from profopt_ci.report.history import history_view
from profopt_ci.report.i18n import EN, note, t
from profopt_ci.report.instructions import instructions_only
from profopt_ci.report.instructions import meta_part as instr_meta
from profopt_ci.report.instructions import notes as instr_notes
from profopt_ci.report.svg import bench_plots, overview_plot

ORDER = {"failed": 0, "reject": 1, "trade-off": 2, "inconclusive": 3, "keep": 4, "no-change": 5}


def build_view(c: dict, lang: str, *, error_budget: int = 32000, plots: bool = False) -> dict:
    """Everything the templates print. `error_budget` is shared by all error tails."""
    conf = confidence_label(c.get("confidence"))
    benches = list(c.get("benchmarks") or [])
    by_name = _differences_by_benchmark(c.get("differences") or [], lang)
    n_errors = sum(1 for b in benches if (b.get("error") or {}).get("message"))
    error_cap = max(400, min(4000, error_budget // max(1, n_errors)))
    views = [bench_view(b, lang, conf, by_name.get(b.get("name"), []), error_cap) for b in benches]
    if plots:
        sides = (t(lang, "side.base"), t(lang, "side.head"))
        for view, b in zip(views, benches, strict=True):
            view["plots"] = bench_plots(b, c.get("threshold_pct"), sides, t(lang, "plots"))
    views.sort(key=lambda v: ORDER.get(v["decision"], 3))
    return {
        "lang": lang,
        "headline": headline(c, lang),
        "decision": c.get("decision"),
        "meta": _meta(c, lang, conf),
        "conf": conf,
        "unpaired": c.get("mode") == "unpaired",
        "notes": [note(lang, n) for n in instr_notes(c, lang, [str(n) for n in c.get("notes") or []])],
        "legend": t(lang, "table.legend", how=t(lang, "how.unpaired" if c.get("mode") == "unpaired" else "how.paired")),
        "differences": by_name.get(None, []),
        "benchmarks": [v for v in views if v["decision"] != "no-change"],
        "unchanged": [v for v in views if v["decision"] == "no-change"],
        "chart": chart(benches, lang, conf),
        "environments": environments(c, lang),
        "phases": [p for p in (phases(b) for b in benches) if p["rows"]],
        "hot": [h for h in (hot_ops(b, lang) for b in benches) if h["rows"] or h["notes"]],
        "noise": [noise(b) for b in benches if b.get("metrics")],
        "overview": overview_plot(benches, c.get("threshold_pct")) if plots and len(benches) > 1 else None,
        "history": history_view(c, lang),
    }


def _meta(c: dict, lang: str, conf: str) -> str:
    counts = c.get("counts") or {}
    n = counts.get("benchmarks", len(c.get("benchmarks") or []))
    parts = [t(lang, "meta.benchmark") if n == 1 else t(lang, "meta.benchmarks", n=n)]
    for key in ("improved", "regressed", "constraint_failures", "inconclusive", "failed"):
        if counts.get(key):
            parts.append(t(lang, f"count.{key}", n=counts[key]))
    timed = not instructions_only(c)  # nothing timed: no rounds, no time threshold to show
    if c.get("mode") == "unpaired":
        parts.append(t(lang, "meta.unpaired"))
    elif timed:
        parts.append(t(lang, "meta.paired", rounds=c.get("rounds", "?")))
    if timed:
        parts.append(t(lang, "meta.threshold", t=f"{c.get('threshold_pct') or 0:g}"))
    parts += [p for p in (instr_meta(c, lang),) if p]
    parts.append(t(lang, "meta.confidence", conf=conf))
    if c.get("hardware_label"):
        parts.append(str(c["hardware_label"]))
    parts.append(t(lang, "meta.sides", base=_side(c.get("base")), head=_side(c.get("head"))))
    return " · ".join(parts)


def _side(side: dict | None) -> str:
    side = side or {}
    ref = clip(str(side.get("ref") or "?"), 60)
    commit = side.get("commit")
    return f"{ref} ({str(commit)[:7]})" if commit else ref


def _differences_by_benchmark(diffs: list[dict], lang: str) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for d in diffs:
        scope = str(d.get("scope", "?"))
        scope = t(lang, f"scope.{scope}") if f"scope.{scope}" in EN else clip(scope, 30)
        text = f"{scope} {clip(str(d.get('key', '?')), 60)}: {value_text(d.get('base'))} → {value_text(d.get('head'))}"
        out.setdefault(d.get("benchmark"), []).append(text)
    return out


