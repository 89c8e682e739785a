"""comparison@1 → a view: the report's content as plain strings and rows, in one language.

No statistics happen here: numbers are formatted, rows ordered and long values capped. The view is
format-neutral; the Markdown environment escapes every string it prints, the HTML one autoescapes.
"""
from __future__ import annotations

import statistics

from profopt_ci.analyze.bottleneck import NO_CLEAR_ACTION, NO_PROFILE_ACTION
from profopt_ci.report.format import DASH, ci, clip, confidence_label, num, pct, pvalue, value_text
from profopt_ci.report.headline import (
    DECISION_EMOJI,
    VERDICT_SYMBOL,
    headline,
    main_metric,
    metric_label,
    metric_word,
    ordered_metrics,
)
from profopt_ci.report.history import history_view
from profopt_ci.report.i18n import EN, bottleneck_class, evidence, next_action, note, t, word
from profopt_ci.report.instructions import (
    block_note,
    cell_suffix,
    column_header,
    instructions_only,
    is_runs_range,
)
from profopt_ci.report.instructions import meta_part as instr_meta
from profopt_ci.report.instructions import notes as instr_notes
from profopt_ci.report.svg import bench_plots, overview_plot

ORDER = {"failed": 0, "reject": 1, "trade-off": 2, "inconclusive": 3, "keep": 4, "no-change": 5}
FINGERPRINT_ORDER = ("cpu_model", "cpu_count", "memory_gb", "os", "python", "numpy", "torch", "cuda",
                     "gpu_name", "gpu_driver")
CHART_MAX = 20
HOT_OPS_MAX = 10
EVIDENCE_MAX = 5
NAME_MAX = 120


def build_view(c: dict, lang: str, *, error_budget: int = 32000, plots: bool = False) -> dict:
    """Everything the templates print. `error_budget` is shared by all error tails."""
    conf = confidence_label(c.get("confidence"))
    benches = list(c.get("benchmarks") or [])
    by_name = _differences_by_benchmark(c.get("differences") or [], lang)
    n_errors = sum(1 for b in benches if (b.get("error") or {}).get("message"))
    error_cap = max(400, min(4000, error_budget // max(1, n_errors)))
    views = [_bench(b, lang, conf, by_name.get(b.get("name"), []), error_cap) for b in benches]
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
        "chart": _chart(benches, lang, conf),
        "environments": _environments(c, lang),
        "phases": [p for p in (_phases(b) for b in benches) if p["rows"]],
        "hot": [h for h in (_hot(b, lang) for b in benches) if h["rows"] or h["notes"]],
        "noise": [_noise(b) for b in benches if b.get("metrics")],
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


def _bench(b: dict, lang: str, conf: str, diffs: list[str], error_cap: int) -> dict:
    decision = str(b.get("decision") or "inconclusive")
    metrics = b.get("metrics") or {}
    rows = [_metric_row(lang, key, metrics[key], b.get("unit")) for key in ordered_metrics(metrics)]
    return {
        "name": clip(str(b.get("name", "?")), NAME_MAX),
        "decision": decision,
        "emoji": DECISION_EMOJI.get(decision, "❔"),
        "word": word(lang, "decision", decision),
        # compare writes its reasons in English; other languages compose the same from the data.
        "reason": clip(str(b.get("reason") or ""), 400) if lang == "en" else _reason(b, lang),
        "goal": _goal(b, lang, conf),
        "rows": rows,
        "ci_header": column_header(lang, conf, rows),
        "constraints": [_constraint_row(lang, con) for con in b.get("constraints") or []],
        "bottleneck": _bottleneck(b, lang) if decision != "failed" else None,
        "differences": diffs,
        "error": _error(b, lang, error_cap),
    }


def _metric_row(lang: str, key: str, m: dict, unit: str | None) -> dict:
    verdict = str(m.get("verdict") or "inconclusive")
    return {
        "key": key, "label": metric_label(lang, key, unit),
        "base": num(m.get("base")), "head": num(m.get("head")),
        "change": _change_text(m), "ci": _ci_or_tolerance(lang, m) + cell_suffix(lang, key, m),
        "runs_range": is_runs_range(key, m),
        "verdict": verdict, "symbol": VERDICT_SYMBOL.get(verdict, "🟡"),
        "word": word(lang, "verdict", verdict),
    }


def _change_text(m: dict) -> str:
    """The change; memory, judged on medians, also in MB."""
    text = pct(m.get("delta_pct"))
    if isinstance(m.get("delta_mb"), (int, float)):
        text += f" ({num(m['delta_mb']) if m['delta_mb'] < 0 else '+' + num(m['delta_mb'])} MB)"
    return text


def _ci_or_tolerance(lang: str, m: dict) -> str:
    """The CI; a metric judged against a tolerance (memory) shows the tolerance instead."""
    if m.get("ci_low_pct") is None and isinstance(m.get("tolerance_mb"), (int, float)):
        return t(lang, "tolerance", mb=f"{m['tolerance_mb']:.3g}")
    return ci(m.get("ci_low_pct"), m.get("ci_high_pct"))


def _constraint_row(lang: str, con: dict) -> dict:
    limit = con.get("limit")
    shown = None if limit is None or isinstance(limit, bool) else _exact(limit)  # `equal: true` says it all
    rule = con.get("rule")
    rule = word(lang, "rule", rule) if rule else None
    rule = " ".join(str(x) for x in (rule, shown) if x)
    ok = bool(con.get("ok"))
    return {
        "label": clip(f"{con.get('metric', '?')} {rule}".strip(), 80),
        "base": _exact(con.get("base")), "head": _exact(con.get("head")),
        "ok": ok, "symbol": "🟢" if ok else "🔴",
        "word": t(lang, "constraint.ok" if ok else "constraint.broken"),
        "detail": _constraint_detail(lang, con),
    }


def _constraint_detail(lang: str, con: dict) -> str:
    """decide's detail, said from the data in `lang` where it is words rather than figures."""
    metric = clip(str(con.get("metric", "?")), 40)
    missing = [word(lang, "side", s) for s in ("base", "head") if con.get(s) is None]
    if missing and not con.get("ok"):
        return t(lang, "con.not_recorded", metric=metric, sides=t(lang, "and").join(missing))
    if con.get("rule") == "equal":
        if con.get("ok"):
            return t(lang, "con.identical")
        return t(lang, "con.differs", base=_exact(con.get("base")), head=_exact(con.get("head")))
    return clip(str(con.get("detail") or ""), 120)


def _reason(b: dict, lang: str) -> str:
    """The benchmark's reason composed from its data (compare's own `reason` is English)."""
    decision = b.get("decision")
    judged = {k: m for k, m in (b.get("metrics") or {}).items() if k != "throughput"}

    def names(verdict: str) -> str:
        return t(lang, "sep").join(metric_word(lang, k) for k, m in judged.items() if m.get("verdict") == verdict)

    broken = [c for c in b.get("constraints") or [] if not c.get("ok")]
    if decision == "failed":
        return ""
    if broken:
        what = t(lang, "sep2").join(f"{clip(str(c.get('metric', '?')), 40)}（{_constraint_detail(lang, c)}）"
                                    if lang == "zh" else f"{c.get('metric')} ({_constraint_detail(lang, c)})"
                                    for c in broken)
        return t(lang, "reason.broken", what=what)
    if decision in ("keep", "reject", "trade-off") and (names("improved") or names("regressed")):
        key = {"keep": "reason.keep", "reject": "reason.regressed", "trade-off": "reason.trade-off"}[decision]
        return t(lang, key, improved=names("improved"), regressed=names("regressed"))
    speed = (judged.get("step_time_ms") or {}).get("verdict")
    if not judged:
        return t(lang, "reason.no_rounds")
    if speed in ("inconclusive", "unstable"):
        return t(lang, f"reason.{speed}")
    return t(lang, "reason.no-change")


def _exact(value: object) -> str:
    """Constraint values keep their precision: 2.301 vs 2.305 must not both read 2.30."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value_text(value, 40)


def _goal(b: dict, lang: str, conf: str) -> str | None:
    goal = b.get("goal") or {}
    if not goal:
        return None
    key = main_metric(b) or str(goal.get("metric"))
    label = metric_word(lang, key)
    target = goal.get("target_pct")
    if target is None:
        return label
    direction = "increase" if goal.get("direction") == "increase" else "decrease"
    text = t(lang, f"goal.{direction}", metric=label, target=f"{target:g}")
    achieved, met = goal.get("achieved_pct"), goal.get("met")
    m = (b.get("metrics") or {}).get(key) or {}
    if achieved is not None and m.get("verdict") in ("inconclusive", "unstable"):
        # Not "missed": at this noise the CI cannot say either way.
        return text + " — " + t(lang, "goal.unclear", achieved=f"{achieved:.1f}", ci=t(lang, "col.ci", conf=conf),
                                lo=pct(m.get("ci_low_pct")), hi=pct(m.get("ci_high_pct")))
    if met is not None and achieved is not None:
        text += " — " + t(lang, "goal.met" if met else "goal.missed", achieved=f"{achieved:.1f}")
    return text


def _bottleneck(b: dict, lang: str) -> dict:
    """Always a note: the class, or "no single bottleneck" / "not analysed" when there is none."""
    bn = b.get("bottleneck") or {}
    lines = [str(e) for e in bn.get("evidence") or []]
    if not bn.get("class"):
        # analyze's "no clear bottleneck" is what the class line now says.
        lines = [e for e in lines if e != "no clear bottleneck"]
        lines = [t(lang, "no_profile", reason=e[len("no profile: "):]) if e.startswith("no profile: ") else e
                 for e in lines]
    cls = (bottleneck_class(lang, bn["class"]) if bn.get("class")
           else t(lang, "bottleneck.none" if bn else "bottleneck.not_analysed"))
    action = str(bn.get("next_action") or ("" if bn else NO_PROFILE_ACTION))
    return {
        "cls": cls,
        "evidence": [clip(evidence(lang, e), 200) for e in lines[:EVIDENCE_MAX]],
        "next_action": clip(next_action(lang, bn.get("rule"), action, NO_CLEAR_ACTION, NO_PROFILE_ACTION), 400),
    }


def _error(b: dict, lang: str, cap: int) -> dict | None:
    error = b.get("error") or {}
    status = b.get("status") or {}
    side = error.get("side")
    if not side:
        bad = [s for s in ("base", "head") if status.get(s) not in (None, "ok")]
        if not bad and b.get("decision") != "failed":
            return None
        side = bad[0] if bad else "head"
    message = str(error.get("message") or "")
    tail = _tail(message, cap)
    return {
        "side": side,
        "title": _failed_title(lang, side, status.get(side)),
        "tail": tail,
        "capped": t(lang, "error_capped", shown=f"{len(tail):,}", total=f"{len(message):,}")
        if len(tail) < len(message) else None,
    }


def _failed_title(lang: str, side: str, status: str | None) -> str:
    name = word(lang, "side", clip(str(side), 20))
    if status in (None, "ok", "failed"):
        return t(lang, "failed_plain", side=name)
    return t(lang, "failed_side", side=name, status=clip(str(status), 40))


def _tail(message: str, cap: int, max_lines: int = 60) -> str:
    """The end of a stderr tail, where the exception is, cut at a line boundary."""
    # Only the end matters; never split megabytes of stderr into lines.
    lines = message[-max(cap * 2, 16000):].rstrip().splitlines()[-max_lines:]
    text = "\n".join(lines)
    if len(text) > cap:
        text = text[-cap:]
        newline = text.find("\n")
        if 0 <= newline < len(text) - 1:
            text = text[newline + 1:]
    return text


def _chart(benches: list[dict], lang: str, conf: str) -> dict | None:
    """Head relative to base = 100 by the verdict's estimate (100 + change %), with its CI;
    one benchmark charts its metrics, several their step time."""
    usable = [b for b in benches if _point((b.get("metrics") or {}).get("step_time_ms"))]
    if len(usable) == 1 or (not usable and len(benches) == 1):
        b = usable[0] if usable else benches[0]
        metrics = b.get("metrics") or {}
        points = [(metric_word(lang, k), _point(metrics[k])) for k in ordered_metrics(metrics)]
        points = [(label, p) for label, p in points if p]
        what = b.get("name", "?")
        total = len(points)
    else:
        biggest = sorted(usable, key=lambda b: -abs(b["metrics"]["step_time_ms"].get("delta_pct") or 0))
        keep = {id(b) for b in biggest[:CHART_MAX]}
        points = [(b.get("name", "?"), _point(b["metrics"]["step_time_ms"])) for b in usable if id(b) in keep]
        what = metric_word(lang, "step_time_ms")
        total = len(usable)
    if not points:
        return None
    top = max(max(max(v for v in p if v is not None) for _, p in points), 100.0)
    return {"title": t(lang, "chart.title", what=what), "y_label": t(lang, "chart.y"),
            "labels": [p[0] for p in points],
            "head": [p[1][0] for p in points],
            "low": [p[1][1] for p in points], "high": [p[1][2] for p in points],
            "y_max": int(top * 1.1 // 10 + 1) * 10, "conf": conf,
            "shown": len(points), "total": total}


def _point(m: dict | None) -> tuple[float, float | None, float | None] | None:
    """(estimate, CI low, CI high) as % of base: 100 + the change column's figures."""
    if not m or not isinstance(m.get("delta_pct"), (int, float)):
        return None

    def rel(v: object) -> float | None:
        return round(100.0 + v, 1) if isinstance(v, (int, float)) else None

    mid = rel(m["delta_pct"])
    # A metric judged without a CI (memory, against its tolerance) is a point on the CI lines.
    return mid, rel(m.get("ci_low_pct")) or mid, rel(m.get("ci_high_pct")) or mid


def _environments(c: dict, lang: str) -> list[dict]:
    base, head = c.get("base") or {}, c.get("head") or {}
    sides = [(t(lang, "env.ref"), base.get("ref"), head.get("ref")),
             (t(lang, "env.commit"), base.get("commit"), head.get("commit"))]
    rows: list[tuple] = []
    fb, fh = base.get("fingerprint") or {}, head.get("fingerprint") or {}
    keys = [k for k in FINGERPRINT_ORDER if k in fb or k in fh]
    keys += sorted((set(fb) | set(fh)) - set(keys))
    rows += [(k, fb.get(k), fh.get(k)) for k in keys]
    eb, eh = base.get("env") or {}, head.get("env") or {}
    rows += [(t(lang, "env.var", name=k), eb.get(k), eh.get(k)) for k in sorted(set(eb) | set(eh))]
    # ref and commit differ by design; only what should have been equal is marked.
    return [{"key": clip(str(k), 60), "base": value_text(b, 100), "head": value_text(h, 100),
             "differs": b != h and not designed} for designed, (k, b, h) in
            [(True, r) for r in sides] + [(False, r) for r in rows]]


def _phases(b: dict) -> dict:
    prof = b.get("profile") or {}
    base = (prof.get("base") or {}).get("phases") or _sample_phases((b.get("samples") or {}).get("base"))
    head = (prof.get("head") or {}).get("phases") or _sample_phases((b.get("samples") or {}).get("head"))
    names = list(base) + [k for k in head if k not in base]
    rows = []
    for name in names:
        vb, vh = base.get(name), head.get(name)
        change = pct((vh / vb - 1) * 100) if isinstance(vb, (int, float)) and isinstance(vh, (int, float)) and vb else DASH
        rows.append({"phase": clip(str(name), 60), "base": num(vb), "head": num(vh), "change": change})
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rows": rows}


def _sample_phases(samples: list[dict] | None) -> dict:
    """Median ms per phase over the rounds, when no profile summarised them."""
    per: dict[str, list[float]] = {}
    for s in samples or []:
        for k, v in (s.get("phases_ms") or {}).items():
            if isinstance(v, (int, float)):
                per.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in per.items()}


def _hot(b: dict, lang: str) -> dict:
    prof = b.get("profile") or {}
    diff = sorted(prof.get("hot_diff") or [], key=lambda r: -abs(r.get("delta_ms") or 0))[:HOT_OPS_MAX]
    rows = [{"op": clip(str(r.get("name", "?")), 80), "base": num(r.get("base_ms")),
             "head": num(r.get("head_ms")), "delta": num(r.get("delta_ms"))} for r in diff]
    notes = []
    for side in ("base", "head"):
        summary = prof.get(side) or {}
        label = t(lang, f"side.{side}") + t(lang, "colon")
        if summary.get("kind") == "none" and summary.get("reason"):
            notes.append(f"{label} " + t(lang, "no_profile", reason=clip(str(summary["reason"]), 160)))
        elif summary.get("trace_path"):
            notes.append(f"{label} " + t(lang, "trace", path=clip(str(summary["trace_path"]), 160)))
        profiled = (summary.get("counters") or {}).get("profiled_step_ms")
        if rows and isinstance(profiled, (int, float)) and isinstance(summary.get("step_time_ms"), (int, float)):
            notes.append(t(lang, "hot.profiled_step", side=t(lang, f"side.{side}"), profiled=num(profiled),
                           plain=num(summary["step_time_ms"])))
    notes += _instruction_notes(b, lang)
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rows": rows, "notes": notes}


def _instruction_notes(b: dict, lang: str) -> list[str]:
    """instrument: instructions — callgrind's per-function Ir diff, one line per function."""
    from profopt_ci.analyze.instructions import diff_lines

    block = b.get("instructions") or {}
    rows = block.get("function_diff") or []
    if not rows:
        return []
    return [clip(line, 200) for line in diff_lines(rows[:HOT_OPS_MAX])] + [note(lang, block_note(lang, str(n)))
                                                                          for n in block.get("notes") or []]


def _noise(b: dict) -> dict:
    m = (b.get("metrics") or {}).get("step_time_ms") or {}
    samples = b.get("samples") or {}
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rounds": b.get("rounds", DASH),
            "outliers": b.get("outlier_rounds", DASH),
            "base": _spread(samples.get("base")), "head": _spread(samples.get("head")),
            "p": pvalue(m.get("p_value")), "p_adj": pvalue(m.get("p_adjusted"))}


def _spread(samples: list[dict] | None) -> dict:
    values = [s["step_time_ms"] for s in samples or [] if isinstance(s.get("step_time_ms"), (int, float))]
    if not values:
        return {"text": DASH, "cv": DASH}
    mean = sum(values) / len(values)
    # Plain floats: statistics.stdev's exact Fractions cost a third of a 500-benchmark render.
    var = sum((x - mean) ** 2 for x in values) / (len(values) - 1) if len(values) > 1 else 0.0
    cv = var ** 0.5 / mean * 100 if len(values) > 1 and mean else None
    return {"text": f"{num(statistics.median(values))} ({num(min(values))}–{num(max(values))})",
            "cv": pct(cv, signed=False) if cv is not None else DASH}
