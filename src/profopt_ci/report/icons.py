"""The HTML report's symbols as small inline SVGs, drawn the same on every machine.

In: a decision, a verdict, a constraint's result or a note's kind. Out: `Markup` of a 14×14 SVG
(a coloured shape, an ASCII mark on it where one helps), hidden from screen readers: the word beside
it says the same. The Markdown and the terminal keep their emoji (GitHub and terminals draw them);
a browser on a machine without an emoji font showed them as empty boxes in the page's headings.
"""
from __future__ import annotations

from markupsafe import Markup

GREEN, RED, AMBER, ORANGE, GREY, BLUE = "#1a7f37", "#cf222e", "#bf8700", "#e16f24", "#8c959f", "#2f6fde"
_PATHS = {
    "check": '<path d="M3.8 7.2l2.2 2.2 4.2-4.6" fill="none" stroke="#fff" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round"/>',
    "cross": '<path d="M4.6 4.6l4.8 4.8M9.4 4.6l-4.8 4.8" fill="none" stroke="#fff" stroke-width="1.8" stroke-linecap="round"/>',
    "dash": '<path d="M4 7h6" stroke="#fff" stroke-width="1.8" stroke-linecap="round"/>',
    "scale": '<path d="M3.5 5.5h7M3.5 8.5h7" stroke="#fff" stroke-width="1.5" stroke-linecap="round"/>',
    "plus": '<path d="M7 4v6M4 7h6" stroke="#fff" stroke-width="1.8" stroke-linecap="round"/>',
}


def _svg(body: str) -> Markup:
    return Markup(f'<svg class="icon" width="14" height="14" viewBox="0 0 14 14" aria-hidden="true">{body}</svg>')


def _disc(color: str, mark: str | None = None, text: str | None = None) -> Markup:
    inner = _PATHS.get(mark or "", "")
    if text:
        inner += (f'<text x="7" y="10.6" text-anchor="middle" font-size="10" font-weight="700" '
                  f'font-family="sans-serif" fill="#fff">{text}</text>')
    return _svg(f'<circle cx="7" cy="7" r="6.5" fill="{color}"/>{inner}')


DECISION = {
    "keep": _disc(GREEN, "check"), "reject": _disc(RED, "cross"), "trade-off": _disc(AMBER, "scale"),
    "no-change": _disc(GREY, "dash"), "inconclusive": _disc(AMBER, text="?"), "failed": _disc(RED, text="!"),
}
VERDICT = {
    "improved": _disc(GREEN), "regressed": _disc(RED), "unchanged": _disc(GREY), "inconclusive": _disc(AMBER),
    "unstable": _disc(ORANGE),
}
WARN = _svg(f'<path d="M7 1L13.5 12.8H.5Z" fill="{AMBER}"/><text x="7" y="11.6" text-anchor="middle" font-size="9" '
            'font-weight="700" font-family="sans-serif" fill="#fff">!</text>')
INFO = _disc(BLUE, text="i")
NEW = _svg(f'<rect x=".5" y=".5" width="13" height="13" rx="3" fill="{BLUE}"/>{_PATHS["plus"]}')
ERROR = _disc(RED, text="!")
UNCHANGED = _disc(GREY)


def decision(value: str) -> Markup:
    return DECISION.get(value, DECISION["inconclusive"])


def verdict(value: str) -> Markup:
    return VERDICT.get(value, VERDICT["inconclusive"])


def held(ok: bool) -> Markup:
    return VERDICT["improved"] if ok else VERDICT["regressed"]


def without_emoji(headline: str) -> str:
    """The headline's text after its leading decision emoji (report/headline.py puts one first)."""
    from profopt_ci.report.headline import DECISION_EMOJI

    first, _, rest = headline.partition(" ")
    return rest if first in DECISION_EMOJI.values() else headline
