"""Line one of the report: the decision and one sentence a reviewer reads in ten seconds.

In: a comparison@1 dict and a language. Out: one plain-text line (emoji, decision word, the
biggest changes and broken constraints), plus the metric labels the view shares (their order and
the main metric are analyze.decide's, which the summary sentence shares).

Composed from the comparison's data in the report's language (the comparison's own `summary`, a
message, is used only when there is nothing to compose from). Plain text: the
Markdown renderer escapes it; step outputs and check titles can use it as it is.
"""
from __future__ import annotations

from profopt_ci.analyze.decide import gain, main_metric, ordered_metrics
from profopt_ci.errors import cause_lines
from profopt_ci.report.format import clip, confidence_label, num, pct
from profopt_ci.report.instruction_words import floor_text, is_runs_range, threshold_shown
from profopt_ci.words.i18n import EN, say

DECISION_EMOJI = {"keep": "✅", "reject": "❌", "trade-off": "⚖️", "no-change": "➖",
                  "inconclusive": "❔", "failed": "💥"}
VERDICT_SYMBOL = {"regressed": "🔴", "improved": "🟢", "unchanged": "⚪", "inconclusive": "🟡",
                  "unstable": "🟠"}


def metric_label(lang: str, key: str, unit: str | None = None) -> str:
    """"step time (ms)", "throughput (samples/s)"; an unknown metric keeps its key."""
    if f"metric.{key}" in EN:
        return say(lang, f"metric.{key}", unit=unit or "items")
    return key


def metric_word(lang: str, key: str) -> str:
    """The label without its unit, for running text."""
    return metric_label(lang, key).split(" (")[0]


def headline(comparison: dict, lang: str = "en") -> str:
    """"✅ keep — train-step 12.4% faster (99% CI 10.1–14.6%), memory unchanged, loss within 1%"."""
    decision = str(comparison.get("decision") or "inconclusive")
    emoji = DECISION_EMOJI.get(decision, "❔")
    new = _new(comparison, lang)
    if new and not comparison.get("benchmarks"):  # nothing compared: the PR's first benchmarks are the news
        return f"{emoji} {say(lang, f'decision.{decision}', default=str(decision))} — {new}"
    return f"{emoji} {say(lang, f'decision.{decision}', default=str(decision))} — {_accepted(comparison, lang)}" \
           f"{_sentence(comparison, decision, lang)}" + (say(lang, "sep2") + new if new else "")


def _accepted(c: dict, lang: str) -> str:
    """"regression accepted (label profopt-accept); " where the accept label turned a failing policy
    into a pass, first: the figures after it are as measured."""
    policy = c.get("policy") or {}
    if policy.get("accepted") is not True:
        return ""
    failing = set(policy.get("failing") or [])
    broken = any(not con.get("ok") for b in c.get("benchmarks") or [] if b.get("name") in failing
                 for con in b.get("constraints") or [])
    return say(lang, "hl.accepted_constraint" if broken else "hl.accepted", label=policy.get("label")) + say(lang, "sep2")


def _new(c: dict, lang: str) -> str:
    """The PR's new benchmarks (measured on head only): the first with its head step time."""
    new = [n for n in c.get("new_in_pr") or [] if isinstance(n, dict)]
    if not new:
        return ""
    first = new[0]
    ms = (first.get("head") or {}).get("step_time_ms")
    phrase = (say(lang, "hl.new", name=first["name"], ms=num(ms)) if first.get("status") == "ok" and ms is not None
              else say(lang, "hl.new_failed", name=first["name"]))
    more = len(new) - 1
    if more:
        phrase += say(lang, "sep2") + (say(lang, "hl.more1") if more == 1 else say(lang, "hl.more", n=more))
    return phrase


def measured(benches: list[dict]) -> list[dict]:
    """The benchmarks that were measured: not those the change does not reach (measure: changed)."""
    return [b for b in benches if (b.get("reach") or {}).get("measured", True)]


def _sentence(c: dict, decision: str, lang: str) -> str:
    everyone = c.get("benchmarks") or []
    benches = measured(everyone)
    skipped = len(everyone) - len(benches)
    if everyone and not benches:
        return say(lang, "hl.unreached", n=skipped)
    phrase = _measured_sentence(c, benches, decision, lang)
    return phrase + (say(lang, "sep2") + say(lang, "hl.not_measured", n=skipped) if skipped else "")


def _measured_sentence(c: dict, benches: list[dict], decision: str, lang: str) -> str:
    if not benches:
        return say(lang, c.get("summary_msg") or c.get("summary")) or say(lang, "hl.none")
    if decision == "no-change":
        return say(lang, "hl.no_change", t=threshold_shown(c), n=len(benches))
    conf = say(lang, "col.ci", conf=confidence_label(c.get("confidence")))
    if decision == "failed":
        pick = [b for b in benches if _failed_side(b)]
    else:
        pick = [b for b in benches if b.get("decision") == decision]
    if not pick:
        return clip(say(lang, c.get("summary_msg") or c.get("summary")) or say(lang, "hl.none"), 200)
    if decision == "keep":
        pick.sort(key=gain, reverse=True)
    phrase = {"failed": _failed, "reject": _reject, "keep": _keep, "trade-off": _tradeoff,
              "inconclusive": _inconclusive}.get(decision, _inconclusive)(pick[0], lang, conf)
    if len(pick) > 1:
        more = len(pick) - 1
        phrase += say(lang, "sep2") + (say(lang, "hl.more1") if more == 1 else say(lang, "hl.more", n=more))
    return phrase


def _name(bench: dict) -> str:
    return clip(str(bench.get("name", "?")), 60)


def _change(lang: str, conf: str, key: str, m: dict, name: str) -> str:
    """One metric's change as words: "x 12.4% faster (99% CI 10.1–14.6%)" or "x peak memory +3.0%"."""
    delta, low, high = m.get("delta_pct"), m.get("ci_low_pct"), m.get("ci_high_pct")
    if delta is None:
        return f"{name} {metric_word(lang, key)} {num(m.get('base'))} → {num(m.get('head'))}".strip()
    if low is not None and high is not None and is_runs_range(key, m):  # not a CI: say what it is
        return say(lang, "hl.metric_runs", name=name, metric=metric_word(lang, key), pct=pct(delta), lo=pct(low),
                 hi=pct(high), floor=floor_text(m)).strip()
    same_sign = low is not None and high is not None and (low < 0) == (high < 0) == (delta < 0)
    if key == "step_time_ms" and same_sign:
        lo, hi = sorted((abs(low), abs(high)))
        phrase = "hl.faster" if delta < 0 else "hl.slower"
        return say(lang, phrase, name=name, pct=pct(delta, False), ci=conf, lo=f"{lo:.1f}", hi=f"{hi:.1f}").strip()
    if low is not None and high is not None:
        return say(lang, "hl.metric", name=name, metric=metric_word(lang, key), pct=pct(delta), ci=conf,
                 lo=pct(low), hi=pct(high)).strip()
    return f"{name} {metric_word(lang, key)} {pct(delta)}".strip()


def _constraint_phrase(lang: str, con: dict) -> str:
    metric, rule, limit = con.get("metric", "?"), con.get("rule"), con.get("limit")
    if rule == "rel_tol" and isinstance(limit, (int, float)):
        return say(lang, "hl.rel_tol", metric=metric, limit=f"{limit * 100:g}")
    if rule == "abs_tol" and limit is not None:
        return say(lang, "hl.abs_tol", metric=metric, limit=f"{limit:g}")
    if rule == "equal":
        return say(lang, "hl.equal", metric=metric)
    return say(lang, con.get("detail_msg") or con.get("detail")) or str(metric)


def _keep(bench: dict, lang: str, conf: str) -> str:
    metrics = bench.get("metrics") or {}
    key = main_metric(bench)
    parts = [_change(lang, conf, key, metrics[key], _name(bench))] if key else [_name(bench)]
    mem = metrics.get("peak_memory_mb")
    if mem and key != "peak_memory_mb":
        unchanged = mem.get("verdict") == "unchanged"
        parts.append(say(lang, "hl.memory_unchanged") if unchanged else say(lang, "hl.memory", pct=pct(mem.get("delta_pct"))))
    held = [c for c in bench.get("constraints") or [] if c.get("ok")]
    parts += [_constraint_phrase(lang, c) for c in held[:2]]
    return say(lang, "sep").join(parts)


def _reject(bench: dict, lang: str, conf: str) -> str:
    broken = [c for c in bench.get("constraints") or [] if not c.get("ok")]
    if broken:
        con = broken[0]
        return say(lang, "hl.broken", name=_name(bench), metric=con.get("metric", "?"),
                 detail=clip(say(lang, con.get("detail_msg") or con.get("detail")), 80))
    return _by_verdict(bench, lang, conf, "regressed") or _name(bench)


def _by_verdict(bench: dict, lang: str, conf: str, verdict: str, name: str | None = None) -> str | None:
    metrics = bench.get("metrics") or {}
    for key in ordered_metrics(metrics):
        if metrics[key].get("verdict") == verdict:
            return _change(lang, conf, key, metrics[key], _name(bench) if name is None else name)
    return None


def _tradeoff(bench: dict, lang: str, conf: str) -> str:
    gain = _by_verdict(bench, lang, conf, "improved")
    loss = _by_verdict(bench, lang, conf, "regressed", name="")
    if gain and loss:
        return say(lang, "hl.tradeoff", gain=gain, loss=loss)
    return gain or loss or _name(bench)


def _inconclusive(bench: dict, lang: str, conf: str) -> str:
    metrics = bench.get("metrics") or {}
    for verdict in ("unstable", "inconclusive"):
        for key in ordered_metrics(metrics):
            m = metrics[key]
            if m.get("verdict") != verdict:
                continue
            if verdict == "unstable":
                return say(lang, "hl.unstable", name=_name(bench), metric=metric_word(lang, key),
                         outliers=bench.get("outlier_rounds", "?"), rounds=bench.get("rounds", "?"))
            if is_runs_range(key, m):
                return say(lang, "hl.inconclusive_runs", name=_name(bench), metric=metric_word(lang, key),
                         runs=min(m.get("n_base") or 0, m.get("n_head") or 0), lo=pct(m.get("ci_low_pct")),
                         hi=pct(m.get("ci_high_pct")), floor=floor_text(m))
            return say(lang, "hl.inconclusive", name=_name(bench), metric=metric_word(lang, key),
                     rounds=bench.get("rounds", "?"), ci=conf, lo=pct(m.get("ci_low_pct")),
                     hi=pct(m.get("ci_high_pct")))
    return f"{_name(bench)}: {clip(say(lang, bench.get('reason_msg') or bench.get('reason')), 120)}"


def _failed_side(bench: dict) -> str | None:
    """Which side failed: the error's side, else the first side whose status is not ok."""
    error = bench.get("error") or {}
    if error.get("side"):
        return str(error["side"])
    status = bench.get("status") or {}
    for side in ("base", "head"):
        if status.get(side) not in (None, "ok"):
            return side
    return "head" if bench.get("decision") == "failed" else None


def _failed(bench: dict, lang: str, conf: str) -> str:
    side = _failed_side(bench) or "head"
    message = str((bench.get("error") or {}).get("message") or "")
    last = cause_lines(message, 1)
    cause = last[0].strip() if last else str((bench.get("status") or {}).get(side) or "failed")
    return say(lang, "hl.failed", side=say(lang, f"side.{clip(side, 20)}", default=clip(side, 20)), name=_name(bench), cause=clip(cause, 120))
