"""The HTML report's symbols: coloured shapes drawn by the page's own CSS, the same on every machine.

In: a decision, a verdict, a constraint's result or a note's kind. Out: `Markup` of an empty
`<span class="icon i-…">` (a disc, or a triangle for a warning) that report.html.j2's stylesheet
colours; hidden from screen readers, since the word beside it says the same. No character is drawn,
so no font is needed: the emoji the headings had showed as empty boxes on a machine without an emoji
font. The Markdown and the terminal keep their emoji (GitHub and terminals draw them).
"""
from __future__ import annotations

from markupsafe import Markup

CSS = (".icon{display:inline-block;width:.75em;height:.75em;border-radius:50%;vertical-align:-.05em;margin-right:.1em;"
       "background:#8c959f}"
       ".i-keep,.i-improved,.i-held{background:#1a7f37}.i-reject,.i-failed,.i-regressed,.i-broken{background:#cf222e}"
       ".i-trade-off,.i-inconclusive{background:#bf8700}.i-unstable{background:#e16f24}.i-info,.i-new{background:#2f6fde}"
       ".i-new{border-radius:.15em}"
       ".i-warn{background:none;border-radius:0;width:0;height:0;border-left:.42em solid transparent;"
       "border-right:.42em solid transparent;border-bottom:.75em solid #bf8700}")
_KNOWN = {"keep", "reject", "trade-off", "no-change", "inconclusive", "failed",
          "improved", "regressed", "unchanged", "unstable", "held", "broken", "info", "warn", "new"}


def icon(kind: str) -> Markup:
    kind = kind if kind in _KNOWN else "inconclusive"
    return Markup(f'<span class="icon i-{kind}" aria-hidden="true"></span>')


def decision(value: str) -> Markup:
    return icon(value)


def verdict(value: str) -> Markup:
    return icon(value)


def held(ok: bool) -> Markup:
    return icon("held" if ok else "broken")


WARN, INFO, NEW, ERROR, UNCHANGED = icon("warn"), icon("info"), icon("new"), icon("failed"), icon("unchanged")


def without_emoji(headline: str) -> str:
    """The headline's text after its leading decision emoji (report/headline.py puts one first)."""
    from profopt_ci.report.headline import DECISION_EMOJI

    first, _, rest = headline.partition(" ")
    return rest if first in DECISION_EMOJI.values() else headline
