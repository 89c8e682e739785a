"""Number formatting and escaping for the report renderers.

In: figures (floats, None), values from the comparison, untrusted text. Out: display strings —
three significant figures, signed percentages with a typographic minus, CIs, p-values — and
Markdown-safe text (`md_inline`, `md_code_block`) or mermaid-safe labels (`chart_label`, `chart_title`).

Everything a benchmark author controls (benchmark names, params, error tails, op names) is
untrusted PR content. Markdown output escapes it by default: the Markdown jinja2 environment
passes every `{{ … }}` through `md_inline` unless the value is a `Raw` string built here.
"""
from __future__ import annotations

import functools
import math
import re

MINUS = "\u2212"  # typographic minus: "−12.4%" reads better than "-12.4%" and never starts a list
DASH = "—"        # an absent value
NAME_MAX = 120    # a benchmark name in a heading or a row

# Backslash-escapable punctuation that could start formatting, links, tables or HTML.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NEEDS_ESCAPE = re.compile(r"[\\`*_\[\]|~&<>@\x00-\x1f\x7f]")


class Raw(str):
    """A string that is already valid Markdown; the Markdown environment emits it unchanged."""


def md_inline(value: object) -> str:
    """Escape text for one line of Markdown, inside or outside a table cell.

    `|` cannot split a cell, `<` cannot open HTML (so no `<details>` or `<script>` breaking),
    `[`/`]` cannot make links, `@` cannot mention anyone, a newline cannot end a table row.
    """
    if isinstance(value, Raw):
        return value
    return md_escape(value if isinstance(value, str) else str(value))


@functools.lru_cache(maxsize=8192)
def md_escape(text: str) -> str:
    """`md_inline` of a plain str (the Markdown environment calls it for most of what it prints)."""
    if _NEEDS_ESCAPE.search(text):
        text = _CONTROL.sub("", text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        text = _MD_SPECIAL.sub(r"\\\1", text)
        # A zero-width space after @ keeps the text readable but stops GitHub from notifying anyone.
        text = text.replace("@", "@&#8203;")
    body = text.lstrip(" ")
    if body[:1] == "#":  # a value printed where a line starts must not make a heading there
        return text[:len(text) - len(body)] + "\\" + body
    return text


def md_code_block(text: str, info: str = "") -> Raw:
    """A fenced code block that untrusted text cannot close early or smuggle markers out of."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    # A report marker inside a code block must not be seen by `shrink`.
    text = text.replace("<!--", "<!-\u2060-")
    text = text.replace("<details", "<\u2060details")  # nor a `<details>` that shrink would drop
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return Raw(f"{fence}{info}\n{text.rstrip()}\n{fence}")


def chart_title(value: object, limit: int = 80) -> str:
    """A title or axis label inside a quoted mermaid string: quotes, brackets, markup and line
    breaks dropped (one of them would end the string or the block), then capped."""
    return re.sub(r"[\"`<>@\[\]{}\r\n]", "", str(value))[:limit]


def chart_label(value: object, limit: int = 24) -> str:
    """A label safe inside a quoted mermaid string: no quotes, brackets or markup."""
    text = re.sub(r"[^\w .:/+-]", "_", str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(text: str, limit: int) -> str:
    """Cut a one-line value (a name, a param) so one hostile value cannot eat the budget."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def num(value: float | int | None) -> str:
    """Three significant figures without exponents; thousands get separators instead."""
    kind = type(value)
    if kind is not float and kind is not int:  # the usual two first: this runs for every cell
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return DASH if value is None else str(value)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 999.5:
        return f"{value:,.0f}".replace("-", MINUS)
    text = f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"
    return text.replace("-", MINUS) if value < 0 else text


def pct(value: float | None, signed: bool = True) -> str:
    """"+4.1%", "−12.4%", "0.0%"; unsigned gives the magnitude."""
    if value is None:
        return DASH
    if not signed:
        return f"{abs(value):.1f}%"
    text = f"{value:+.1f}"
    if text in ("+0.0", "-0.0"):
        return "0.0%"
    return text.replace("-", MINUS) + "%"


def ci(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return DASH
    return f"{pct(low)} … {pct(high)}"


def pvalue(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.2g}" if value >= 0.001 else f"{value:.1e}"


def confidence_label(confidence: float | None) -> str:
    """0.99 → "99%"."""
    if not confidence:
        return "99%"
    return f"{confidence * 100:.3g}%"


def value_text(value: object, limit: int = 80) -> str:
    """A param / env / fingerprint value as a reviewer reads it."""
    if value is None:
        return DASH
    if isinstance(value, float):
        return num(value)
    return clip(str(value), limit)
