"""A bisect@1 document as Markdown, in English or Chinese (`profopt bisect --report`, the nightly summary).

In: the bisect@1 dict and a language. Out: the text: the culprit (or that the ends did not differ),
each step with its effect and CI, the ends, every probe, and the notes (messages, said through the
catalogs; a plain string from an older file as it is). Commit subjects are the repository's
text: escaped like any cell (no mentions, no raw HTML, no markers).
"""
from __future__ import annotations

from profopt_ci.report.format import DASH, NAME_MAX, clip, md_inline
from profopt_ci.words.i18n import say

WORDS = {
    "en": {
        "title": "profopt bisect", "first": "First bad commit", "none": "The ends did not differ beyond τ = {tau}%: nothing to search.",
        "range": "{n} first-parent commit(s) from `{good}` to `{bad}`, metric `{metric}`, τ = {tau}%, {probes} probe(s), {secs:.0f} s.",
        "steps": "Steps larger than τ", "ends": "The ends", "probes": "Probes", "notes": "Notes",
        "col_step": "| benchmark | commit | subject | PR | effect | CI | against |",
        "col_end": "| benchmark | change | CI | verdict | rounds |",
        "col_probe": "| # | benchmark | commit | subject | estimate | CI | verdict | class | rounds |",
        "maybe": "could also be any of: {list} (not testable)",
        "effect": "{bench}: {delta} (CI {ci}) against `{good}`",
        "verdict": {"regressed": "regressed", "improved": "improved", "unchanged": "unchanged",
                    "inconclusive": "inconclusive", "unstable": "unstable", "failed": "failed"},
        "class": {"bad": "bad", "good": "good", "skip": "skipped", "inconclusive": "inconclusive",
                  "step-check": "step check"},
    },
    "zh": {
        "title": "profopt 二分定位", "first": "第一个变坏的提交", "none": "两端的差异未超过 τ = {tau}%：无需查找。",
        "range": "从 `{good}` 到 `{bad}` 共 {n} 个第一父提交，指标 `{metric}`，τ = {tau}%，探测 {probes} 次，用时 {secs:.0f} 秒。",
        "steps": "超过 τ 的台阶", "ends": "两端", "probes": "探测", "notes": "说明",
        "col_step": "| 基准 | 提交 | 标题 | PR | 影响 | 置信区间 | 对照 |",
        "col_end": "| 基准 | 变化 | 置信区间 | 判断 | 轮数 |",
        "col_probe": "| # | 基准 | 提交 | 标题 | 估计 | 置信区间 | 判断 | 分类 | 轮数 |",
        "maybe": "也可能是：{list}（无法测试）",
        "effect": "{bench}：{delta}（置信区间 {ci}），对照 `{good}`",
        "verdict": {"regressed": "变慢", "improved": "改善", "unchanged": "无变化", "inconclusive": "无定论",
                    "unstable": "不稳定", "failed": "失败"},
        "class": {"bad": "坏", "good": "好", "skip": "跳过", "inconclusive": "无定论", "step-check": "台阶检查"},
    },
}


def cell(text: object) -> str:
    """A line or table cell from the repository's text (format.md_inline: no pipes, mentions, HTML)."""
    return md_inline(clip(str(text if text is not None else DASH), NAME_MAX))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.1f}%"


def _ci(est: dict) -> str:
    lo, hi = est.get("ci_low_pct"), est.get("ci_high_pct")
    return "—" if lo is None or hi is None else f"{lo:+.1f}…{hi:+.1f}%"


def render_bisect(doc: dict, lang: str = "en") -> str:
    """The Markdown report of a bisection."""
    w = WORDS.get(lang, WORDS["en"])
    tau = f"{doc['threshold_pct']:g}"
    lines = [f"## {w['title']}", "",
             w["range"].format(n=doc["commits"], good=doc["good"]["commit"][:12], bad=doc["bad"]["commit"][:12],
                               metric=doc["metric"], tau=tau, probes=len(doc["probes"]), secs=doc["seconds"]), ""]
    first = doc["first_bad"]
    if first is None:
        lines += [w["none"].format(tau=tau), ""]
    else:
        pr = f" (#{first['pr']})" if first.get("pr") and f"#{first['pr']}" not in first["subject"] else ""
        lines += [f"**{w['first']}: `{first['commit'][:12]}`** {cell(first['subject'])}{pr} — {first['author_date']}", "",
                  w["effect"].format(bench=cell(first["benchmark"]), delta=_pct(first["effect"]["delta_pct"]),
                                     ci=_ci(first["effect"]), good=first["good_end"][:12]), ""]
    lines += _steps(doc, w) + _ends(doc, w) + _probes(doc, w)
    if doc["notes"]:
        lines += [f"### {w['notes']}", "", *[f"- {md_inline(say(lang, n))}" for n in doc["notes"]], ""]
    return "\n".join(lines)


def _steps(doc: dict, w: dict) -> list[str]:
    if not doc["steps"]:
        return []
    out = [f"### {w['steps']}", "", w["col_step"], "|---|---|---|---|---|---|---|"]
    for s in doc["steps"]:
        e = s["effect"]
        pr = f"#{s['pr']}" if s.get("pr") else "—"
        out.append(f"| {cell(s['benchmark'])} | `{s['commit'][:12]}` | {cell(s['subject'])} | {pr} | "
                   f"{_pct(e['delta_pct'])} {w['verdict'].get(e['verdict'], e['verdict'])} | {_ci(e)} | `{s['good_end'][:12]}` |")
        if len(s["candidates"]) > 1:
            others = ", ".join(f"`{c['commit'][:12]}`" for c in s["candidates"][:-1])
            out.append(f"| | | {w['maybe'].format(list=others)} | | | | |")
    return [*out, ""]


def _ends(doc: dict, w: dict) -> list[str]:
    out = [f"### {w['ends']}", "", w["col_end"], "|---|---|---|---|---|"]
    for e in doc["ends"]:
        est = e["estimate"]
        out.append(f"| {cell(e['benchmark'])} | {_pct(est['delta_pct'])} | {_ci(est)} | "
                   f"{w['verdict'].get(est['verdict'], est['verdict'])} | {est.get('rounds') or '—'} |")
    return [*out, ""]


def _probes(doc: dict, w: dict) -> list[str]:
    if not doc["probes"]:
        return []
    out = [f"### {w['probes']}", "", w["col_probe"], "|---|---|---|---|---|---|---|---|---|"]
    for i, p in enumerate(doc["probes"], 1):
        est = p["estimate"]
        rounds = " + ".join(str(a.get("rounds") or "—") for a in p["attempts"])
        out.append(f"| {i} | {cell(p['benchmark'])} | `{p['commit'][:12]}` | {cell(p['subject'])} | "
                   f"{_pct(est['delta_pct'])} | {_ci(est)} | {w['verdict'].get(est['verdict'], est['verdict'])} | "
                   f"{w['class'][p['class']]} | {rounds} |")
    return [*out, ""]
