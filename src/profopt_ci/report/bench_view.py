"""One benchmark's section of the report: comparison@1's benchmark entry → strings and rows, in one language.

In: one entry of comparison["benchmarks"], the language, the confidence label, the differences that
name this benchmark and the characters its error tail may take. Out: the dict `_benchmark.md.j2` /
`_benchmark.html.j2` print as `b`: name, decision word and emoji, reason, goal, metric rows,
constraint rows, the bottleneck note and the failed side's error tail. Formatting only.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

from markupsafe import Markup, escape

from profopt_ci.analyze.decide import main_metric, ordered_metrics
from profopt_ci.analyze.rules import action_id
from profopt_ci.report import icons
from profopt_ci.report.format import DASH, NAME_MAX, ci, clip, num, pct, value_text
from profopt_ci.report.headline import DECISION_EMOJI, VERDICT_SYMBOL, metric_label, metric_word
from profopt_ci.report.instruction_words import cell_suffix, column_header, is_runs_range
from profopt_ci.words.i18n import EN, say

EVIDENCE_MAX = 5


def bench_view(b: dict, lang: str, conf: str, diffs: list[str], error_cap: int) -> dict:
    decision = str(b.get("decision") or "inconclusive")
    metrics = b.get("metrics") or {}
    rows = [_metric_row(lang, key, metrics[key], b.get("unit")) for key in ordered_metrics(metrics)]
    return {
        "name": clip(str(b.get("name", "?")), NAME_MAX),
        "decision": decision,
        "emoji": DECISION_EMOJI.get(decision, "❔"),
        "word": say(lang, f"decision.{decision}", default=str(decision)),
        "reason": clip(say(lang, b.get("reason_msg") or b.get("reason")), 400),
        "reach": _reach(b, lang),
        "sensitivity": _sensitivity(b, lang, decision),
        "goal": _goal(b, lang, conf),
        "rows": rows,
        "ci_header": column_header(lang, conf, rows),
        "constraints": [_constraint_row(lang, con) for con in b.get("constraints") or []],
        "bottleneck": _bottleneck(b, lang) if decision != "failed" else None,
        "differences": diffs,
        "error": _error(b, lang, error_cap),
    }


def _sensitivity(b: dict, lang: str, decision: str) -> str | None:
    """What a benchmark that reads no-change or inconclusive could have seen: the smallest change of
    its main timed metric its rounds could have flagged (`mde`)."""
    if decision not in ("no-change", "inconclusive"):
        return None
    for key in ("step_time_ms", "instructions"):
        m = (b.get("metrics") or {}).get(key) or {}
        mde = m.get("mde")
        if isinstance(mde, (int, float)) and not isinstance(mde, bool):
            return say(lang, "mde.line", mde=f"{mde:.1f}", metric=metric_word(lang, key), n=m.get("n") or 0)
    return None


def _reach(b: dict, lang: str) -> str | None:
    """Why a measured benchmark was measured, where the change's reach decided it (measure: changed)."""
    reach = b.get("reach") or {}
    why = reach.get("why") or {}
    if not reach.get("measured") or (why.get("id") if isinstance(why, Mapping) else getattr(why, "id", None)) in (
            "reach.all", "reach.aa"):
        return None
    return clip(say(lang, why), 600)


def compact_rows_html(benches: Sequence[Mapping], lang: str, chunk: int = 1000) -> Iterator[Markup]:
    """The benchmarks past the page's cap of full sections, one row each (name, decision, step time
    change and CI), as a jinja loop over them would print them, `chunk` rows to a piece: for a
    large comparison jinja's per-row overhead would dominate the page's time, and one piece of all
    rows is too large to hold (docs/experiments.md). The decision cell is made once per decision, not per row.
    tests/test_report_cut.py checks it against a template loop."""
    decided: dict[str, str] = {}
    for start in range(0, len(benches), chunk):
        out = []
        for b in benches[start:start + chunk]:
            decision = str(b.get("decision") or "inconclusive")
            cell = decided.get(decision)
            if cell is None:
                cell = decided[decision] = f"{icons.decision(decision)} {escape(say(lang, f'decision.{decision}', default=str(decision)))}"
            change, interval = _compact_cells(lang, (b.get("metrics") or {}).get("step_time_ms"))
            out.append(f'<tr><td>{escape(clip(str(b.get("name", "?")), NAME_MAX))}</td><td>{cell}</td>'
                       f'<td class="n">{escape(change)}</td><td class="n">{escape(interval)}</td></tr>\n')
        yield Markup("".join(out))


def _compact_cells(lang: str, m: Mapping | None) -> tuple[str, str]:
    """A compact row's change and interval cells."""
    if not m:
        return DASH, DASH
    return _change_text(m), _ci_or_tolerance(lang, m) + cell_suffix(lang, "step_time_ms", m)


def _metric_row(lang: str, key: str, m: dict, unit: str | None) -> dict:
    verdict = str(m.get("verdict") or "inconclusive")
    return {
        "key": key, "label": metric_label(lang, key, unit),
        "base": num(m.get("base")), "head": num(m.get("head")),
        "change": _change_text(m), "ci": _ci_or_tolerance(lang, m) + cell_suffix(lang, key, m),
        "runs_range": is_runs_range(key, m),
        "verdict": verdict, "symbol": VERDICT_SYMBOL.get(verdict, "🟡"),
        "word": say(lang, f"verdict.{verdict}", default=str(verdict)),
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
        return say(lang, "tolerance", mb=f"{m['tolerance_mb']:.3g}")
    return ci(m.get("ci_low_pct"), m.get("ci_high_pct"))


def _constraint_row(lang: str, con: dict) -> dict:
    limit = con.get("limit")
    shown = None if limit is None or isinstance(limit, bool) else _exact(limit)  # `equal: true` says it all
    rule = con.get("rule")
    rule = say(lang, f"rule.{rule}", default=str(rule)) if rule else None
    rule = " ".join(str(x) for x in (rule, shown) if x)
    ok = bool(con.get("ok"))
    return {
        "label": clip(f"{con.get('metric', '?')} {rule}".strip(), 80),
        "base": _exact(con.get("base")), "head": _exact(con.get("head")),
        "ok": ok, "symbol": "🟢" if ok else "🔴",
        "word": say(lang, "constraint.ok" if ok else "constraint.broken"),
        "detail": _constraint_detail(lang, con),
    }


def _constraint_detail(lang: str, con: dict) -> str:
    """The constraint's detail in `lang`: its message (a file from before messages: its English)."""
    return clip(say(lang, con.get("detail_msg") or con.get("detail")), 200)


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
    target = _finite(goal.get("target_pct"))  # the goal is free-form in the document: figures only if numbers
    if target is None:
        return label
    direction = "increase" if goal.get("direction") == "increase" else "decrease"
    text = say(lang, f"goal.{direction}", metric=label, target=f"{target:g}")
    achieved, met = _finite(goal.get("achieved_pct")), goal.get("met")
    met = met if isinstance(met, bool) else None
    m = (b.get("metrics") or {}).get(key) or {}
    if achieved is not None and m.get("verdict") in ("inconclusive", "unstable"):
        # Not "missed": at this noise the CI cannot say either way.
        return text + " — " + say(lang, "goal.unclear", achieved=f"{achieved:.1f}", ci=say(lang, "col.ci", conf=conf),
                                lo=pct(m.get("ci_low_pct")), hi=pct(m.get("ci_high_pct")))
    if met is not None and achieved is not None:
        text += " — " + say(lang, "goal.met" if met else "goal.missed", achieved=f"{achieved:.1f}")
    return text


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return value if math.isfinite(value) else None


def _bottleneck(b: dict, lang: str) -> dict:
    """Always a note: the class, or "no single bottleneck" / "not analysed" when there is none. Its
    evidence and next action are messages said in `lang`; a file from before messages has English
    strings, shown as they are (its next action by its rule's id)."""
    bn = b.get("bottleneck") or {}
    msgs = bn.get("evidence_msgs")
    lines = list(msgs) if isinstance(msgs, list) else [str(e) for e in bn.get("evidence") or []]
    if not bn.get("class"):
        # analyze's "no clear bottleneck" is what the class line now says.
        lines = [e for e in lines if e not in (NO_CLEAR, "no clear bottleneck") and _id(e) != "bottleneck.no_clear"]
        lines = [say(lang, "no_profile", reason=e[len("no profile: "):])
                 if isinstance(e, str) and e.startswith("no profile: ") else e for e in lines]
    cls = (_class_said(lang, bn["class"]) if bn.get("class")
           else say(lang, "bottleneck.not_profiled_cls") if bn.get("rule") == "skipped"
           else say(lang, "bottleneck.none" if bn else "bottleneck.not_analysed"))
    if bn.get("class") and bn.get("side") == "base":  # what the change removed (analyze/bottleneck.py)
        cls = say(lang, "bottleneck_side.base", cls=cls)
    return {
        "cls": cls,
        "evidence": [clip(say(lang, e), 200) for e in lines[:EVIDENCE_MAX]],
        "next_action": clip(say(lang, _action(bn)), 400),
        "cost": [clip(say(lang, c), 200) for c in _cost(bn)[:EVIDENCE_MAX]],
    }


def _cost(bn: Mapping) -> list:
    """The memory the change costs: messages, or a file's English strings."""
    msgs, plain = bn.get("cost_msgs"), bn.get("cost")  # free-form in a file: lists, or nothing
    if isinstance(msgs, list):
        return list(msgs)
    return [str(c) for c in plain if c] if isinstance(plain, list) else []


NO_CLEAR = "no clear bottleneck"


def _id(m: object) -> str | None:
    return str(m.get("id")) if isinstance(m, Mapping) else None


def _action(bn: Mapping) -> object:
    """The next action's message; in a file from before messages, the one its rule names."""
    if isinstance(bn.get("next_action_msg"), Mapping):
        return bn["next_action_msg"]
    text = str(bn.get("next_action") or "")
    if not bn:
        return {"id": "next_action.no_profile", "args": {}}
    rule = bn.get("rule")
    key = "compute" if rule == "fallback: GEMM largest" else rule
    old = {say("en", "next_action.no_clear"): "next_action.no_clear",
           say("en", "next_action.no_profile"): "next_action.no_profile"}
    found = action_id(str(key)) if key else old.get(text)
    if found and found in EN and say("en", found) == text:
        return {"id": found, "args": {}, "text": text}
    return text


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
    tail = error_tail(message, cap)
    return {
        "side": side,
        "title": _failed_title(lang, side, status.get(side)),
        "tail": tail,
        "capped": say(lang, "error_capped", shown=f"{len(tail):,}", total=f"{len(message):,}")
        if len(tail) < len(message) else None,
    }


def _failed_title(lang: str, side: str, status: str | None) -> str:
    name = say(lang, f"side.{clip(str(side), 20)}", default=clip(str(side), 20))
    if status in (None, "ok", "failed"):
        return say(lang, "failed_plain", side=name)
    return say(lang, "failed_side", side=name, status=clip(str(status), 40))


def error_tail(message: str, cap: int, max_lines: int = 60) -> str:
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


def _class_said(lang: str, cls: object) -> str:
    """The analyzer's bottleneck class id said in `lang`; an id the catalog does not know (a file's
    from another version) is shown as it is."""
    text = cls if isinstance(cls, str) else ("unknown" if cls is None else str(cls))
    key = (text or "unknown").strip().lower().replace("-", "_").replace(" ", "_").replace("/", "_")
    return say(lang, f"class.{key}", default=text or "unknown")
