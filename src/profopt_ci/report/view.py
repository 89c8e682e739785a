"""comparison@1 → a view: the report's content as plain strings and rows, in one language.

In: a comparison@1 dict, the language, the characters all error tails may take, whether to draw
SVG plots (HTML), and how many benchmarks get a full section (HTML; None: all). Out: the mapping
the templates print as `v` (report/lazy.LazyMap: each entry built when first read; the benchmark
lists build a section's view when it is reached and keep none): headline, meta line, notes,
benchmark sections (report/bench_view.py) in report order, unchanged ones apart, compact rows past
the cap, and the detail sections (report/details.py). No statistics happen here: numbers are
formatted, rows ordered and long values capped. The view is format-neutral; the Markdown
environment escapes every string it prints, the HTML one autoescapes.
"""
from __future__ import annotations

import functools

from profopt_ci.report.bench_view import bench_view, compact_row, compact_rows_html
from profopt_ci.report.details import (
    chart,
    environments,
    hot_ops,
    may_have_hot_ops,
    may_have_phases,
    noise,
    phases,
)
from profopt_ci.report.format import clip, confidence_label, value_text
from profopt_ci.report.headline import headline
from profopt_ci.report.history import history_view
from profopt_ci.report.i18n import EN, note, t
from profopt_ci.report.instructions import instructions_only
from profopt_ci.report.instructions import meta_part as instr_meta
from profopt_ci.report.instructions import notes as instr_notes
from profopt_ci.report.lazy import Filtered, Lazy, LazyMap
from profopt_ci.report.svg import bench_plots, overview_plot

ORDER = {"failed": 0, "reject": 1, "trade-off": 2, "inconclusive": 3, "keep": 4, "no-change": 5}
HTML_FULL_MAX = 500  # benchmarks the HTML page shows as full sections with plots; the rest are rows


def build_view(c: dict, lang: str, *, error_budget: int = 32000, plots: bool = False,
               full_max: int | None = None) -> LazyMap:
    """Everything the templates print, each part built when a template first reads it (report/lazy.py).
    `error_budget` is shared by all error tails. `full_max`: past that many benchmarks, only the
    first `full_max` in report order get a section (and detail rows); the rest are `compact` rows."""
    conf = confidence_label(c.get("confidence"))
    benches = list(c.get("benchmarks") or [])
    by_name = differences_by_benchmark(c.get("differences") or [], lang)
    changed, unchanged = report_order(benches)
    make = _bench_maker(c, lang, conf, by_name, error_cap(benches, error_budget), plots)
    shown, rest = changed, []
    if full_max is not None and len(benches) > full_max:
        shown, rest = (changed + unchanged)[:full_max], (changed + unchanged)[full_max:]
        full = {id(b) for b in shown}
        benches = [b for b in benches if id(b) in full]  # the detail tables cover the full sections
        changed, unchanged = shown[:len(changed)], shown[len(changed):]
    return LazyMap({
        "lang": lambda: lang,
        "headline": lambda: headline(c, lang),
        "decision": lambda: c.get("decision"),
        "meta": lambda: _meta(c, lang, conf),
        "conf": lambda: conf,
        "unpaired": lambda: c.get("mode") == "unpaired",
        "notes": lambda: [note(lang, n) for n in instr_notes(c, lang, [str(n) for n in c.get("notes") or []])],
        "legend": lambda: t(lang, "table.legend", how=t(lang, "how.unpaired" if c.get("mode") == "unpaired"
                                                        else "how.paired")),
        "differences": lambda: by_name.get(None, []),
        "benchmarks": lambda: Lazy(changed, make),
        "unchanged": lambda: Lazy(unchanged, make),
        "n_unchanged": lambda: sum(1 for b in c.get("benchmarks") or [] if _decision(b) == "no-change"),
        "compact": lambda: Lazy(rest, functools.partial(compact_row, lang=lang)),
        "compact_html": lambda: compact_rows_html(rest, lang),
        "capped": lambda: {"shown": len(shown), "total": len(shown) + len(rest)} if rest else None,
        "chart": lambda: chart(c.get("benchmarks") or [], lang, conf),
        "environments": lambda: environments(c, lang),
        "phases": lambda: Filtered(benches, phases, lambda p: p["rows"], maybe=may_have_phases),
        "hot": lambda: Filtered(benches, lambda b: hot_ops(b, lang), lambda h: h["rows"] or h["notes"],
                                maybe=may_have_hot_ops),
        "noise": lambda: Filtered(benches, noise, bool, maybe=lambda b: b.get("metrics")),
        "overview": lambda: overview_plot(c.get("benchmarks") or [], c.get("threshold_pct"))
        if plots and len(c.get("benchmarks") or []) > 1 else None,
        "history": lambda: history_view(c, lang),
    })


def report_order(benches: list[dict]) -> tuple[list[dict], list[dict]]:
    """The benchmarks with a section of their own (failed, reject, trade-off, inconclusive, keep, in
    that order, each group in the comparison's order) and the unchanged ones, known before any view."""
    groups: list[list[dict]] = [[] for _ in range(len(ORDER))]
    for b in benches:  # a stable sort by decision, in one pass
        groups[ORDER.get(_decision(b), ORDER["inconclusive"])].append(b)
    return [b for group in groups[:-1] for b in group], groups[-1]  # no-change is the last group


def _decision(b: dict) -> str:
    return str(b.get("decision") or "inconclusive")


def error_cap(benches: list[dict], error_budget: int) -> int:
    n_errors = sum(1 for b in benches if (b.get("error") or {}).get("message"))
    return max(400, min(4000, error_budget // max(1, n_errors)))


def _bench_maker(c: dict, lang: str, conf: str, by_name: dict, error_cap: int, plots: bool):
    """The function that builds one benchmark's view (with its plots for HTML)."""
    sides = (t(lang, "side.base"), t(lang, "side.head"))

    def make(b: dict) -> dict:
        view = bench_view(b, lang, conf, by_name.get(b.get("name"), []), error_cap)
        if plots:
            view["plots"] = bench_plots(b, c.get("threshold_pct"), sides, t(lang, "plots"))
        return view

    return make


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


def differences_by_benchmark(diffs: list[dict], lang: str) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for d in diffs:
        scope = str(d.get("scope", "?"))
        scope = t(lang, f"scope.{scope}") if f"scope.{scope}" in EN else clip(scope, 30)
        text = f"{scope} {clip(str(d.get('key', '?')), 60)}: {value_text(d.get('base'))} → {value_text(d.get('head'))}"
        out.setdefault(d.get("benchmark"), []).append(text)
    return out


