"""A bisect@1 document as Markdown, in English or Chinese (`profopt bisect --report`, the nightly summary).

In: the bisect@1 dict and a language. Out: the text: the culprit (or that the ends did not differ),
each step with its effect and CI, the ends, every probe, and the notes (messages, said through the
catalogs; a plain string from an older file as it is). Commit subjects are the repository's
text: escaped like any cell (no mentions, no raw HTML, no markers).
"""
from __future__ import annotations

from profopt_ci.report.format import DASH, NAME_MAX, clip, md_inline
from profopt_ci.words.i18n import say


class _Words:
    """The `bisect.*` entries of the catalogs in one language."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def __call__(self, key: str, **fields: object) -> str:
        return say(self.lang, f"bisect.{key}", **fields)


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
    w = _Words(lang)
    tau = f"{doc['threshold_pct']:g}"
    lines = [f"## {w('title')}", "",
             w("range", n=doc["commits"], good=doc["good"]["commit"][:12], bad=doc["bad"]["commit"][:12],
               metric=doc["metric"], tau=tau, probes=len(doc["probes"]), secs=doc["seconds"]), ""]
    first = doc["first_bad"]
    if first is None:
        lines += [w("none", tau=tau), ""]
    else:
        pr = f" (#{first['pr']})" if first.get("pr") and f"#{first['pr']}" not in first["subject"] else ""
        lines += [f"**{w('first')}: `{first['commit'][:12]}`** {cell(first['subject'])}{pr} — {first['author_date']}", "",
                  w("effect", bench=cell(first["benchmark"]), delta=_pct(first["effect"]["delta_pct"]),
                    ci=_ci(first["effect"]), good=first["good_end"][:12]), ""]
    lines += _steps(doc, w) + _ends(doc, w) + _probes(doc, w)
    if doc["notes"]:
        lines += [f"### {w('notes')}", "", *[f"- {md_inline(say(lang, n))}" for n in doc["notes"]], ""]
    return "\n".join(lines)


def _steps(doc: dict, w: _Words) -> list[str]:
    if not doc["steps"]:
        return []
    out = [f"### {w('steps')}", "", w('col_step'), "|---|---|---|---|---|---|---|"]
    for s in doc["steps"]:
        e = s["effect"]
        pr = f"#{s['pr']}" if s.get("pr") else "—"
        out.append(f"| {cell(s['benchmark'])} | `{s['commit'][:12]}` | {cell(s['subject'])} | {pr} | "
                   f"{_pct(e['delta_pct'])} {say(w.lang, 'bisect.verdict.' + str(e['verdict']), default=str(e['verdict']))} | {_ci(e)} | `{s['good_end'][:12]}` |")
        if len(s["candidates"]) > 1:
            others = ", ".join(f"`{c['commit'][:12]}`" for c in s["candidates"][:-1])
            out.append(f"| | | {w('maybe', list=others)} | | | | |")
    return [*out, ""]


def _ends(doc: dict, w: _Words) -> list[str]:
    out = [f"### {w('ends')}", "", w('col_end'), "|---|---|---|---|---|"]
    for e in doc["ends"]:
        est = e["estimate"]
        out.append(f"| {cell(e['benchmark'])} | {_pct(est['delta_pct'])} | {_ci(est)} | "
                   f"{say(w.lang, 'bisect.verdict.' + str(est['verdict']), default=str(est['verdict']))} | {est.get('rounds') or '—'} |")
    return [*out, ""]


def _probes(doc: dict, w: _Words) -> list[str]:
    if not doc["probes"]:
        return []
    out = [f"### {w('probes')}", "", w('col_probe'), "|---|---|---|---|---|---|---|---|---|"]
    for i, p in enumerate(doc["probes"], 1):
        est = p["estimate"]
        rounds = " + ".join(str(a.get("rounds") or "—") for a in p["attempts"])
        out.append(f"| {i} | {cell(p['benchmark'])} | `{p['commit'][:12]}` | {cell(p['subject'])} | "
                   f"{_pct(est['delta_pct'])} | {_ci(est)} | {say(w.lang, 'bisect.verdict.' + str(est['verdict']), default=str(est['verdict']))} | "
                   f"{say(w.lang, 'bisect.class.' + str(p['class']), default=str(p['class']))} | {rounds} |")
    return [*out, ""]
