"""Make a Markdown report fit a PR comment, least important parts first.

In: the rendered Markdown, a character limit and the hint where the full report is. Out: Markdown
no longer than the limit, with a note naming what was left out.

The templates wrap droppable parts in markers (invisible in GitHub):

    <!-- profopt:section NAME RANK [collapse] -->
    …
    <!-- profopt:end NAME -->

Lower ranks go first. A `collapse` section keeps its first line (a heading) and the names of its
`#### ` headings as one line, instead of vanishing. Without markers (a custom template), whole
`<details>` blocks go, last first. If that is still not enough, the report is cut at a benchmark
heading, open code fences and `<details>` are closed, and a note says what was left out and where
the full report is. Line one always stays.

Length is counted in Python characters (code points): GitHub's limit is 65,536 characters and a
65,000 budget leaves room for the publisher's sticky-comment marker.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from profopt_ci.words.i18n import EN, say

SECTION = re.compile(
    r"<!-- profopt:section (?P<name>[a-z0-9-]+) (?P<rank>\d+)(?P<collapse> collapse)? -->\n"
    r"(?P<body>.*?)<!-- profopt:end (?P=name) -->\n?", re.S)
LANG = re.compile(r"<!-- profopt:lang (\w+) -->")
DETAILS = re.compile(r"<details>.*?</details>\n?", re.S)
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def shrink(md: str, limit: int, *, hint: str | None = None) -> str:
    """`md` cut to at most `limit` characters, with a note of what went and where the rest is.

    `hint` (trusted Markdown, e.g. "the job summary or the `profopt-report` artifact") says where
    the full report is.
    """
    if len(md) <= limit:
        return md
    found = LANG.search(md)
    lang = found.group(1) if found else "en"
    text, dropped = md, []
    for rank in sorted({int(m["rank"]) for m in SECTION.finditer(md)}):
        text = SECTION.sub(lambda m, r=rank: _drop(m, r, lang, dropped), text)
        out = text.rstrip("\n") + _note(lang, dropped, hint)
        if len(out) <= limit:
            return out
    while len(text.rstrip("\n") + _note(lang, dropped, hint)) > limit:
        blocks = list(DETAILS.finditer(text))
        if not blocks:
            break
        last = blocks[-1]
        summary = SUMMARY.search(last.group(0))
        dropped.append(summary.group(1).strip() if summary else "details")
        text = text[:last.start()] + text[last.end():]
    out = text.rstrip("\n") + _note(lang, dropped, hint)
    return out if len(out) <= limit else _cut(text, limit, lang, dropped, hint)


def _drop(m: re.Match, rank: int, lang: str, dropped: list[str]) -> str:
    if int(m["rank"]) != rank:
        return m.group(0)
    title = section_title(lang, m["name"])
    if title not in dropped:
        dropped.append(title)
    if not m["collapse"]:
        return ""
    lines = m["body"].split("\n")
    names = [ln[5:].strip() for ln in outside_fences(lines) if ln.startswith("#### ")]
    head = lines[0] if lines and lines[0].startswith("#") else ""
    return f"{head}\n\n{' · '.join(names)}\n\n"


def section_title(lang: str, name: str) -> str:
    """How the note names a dropped section: its catalog title, else its marker name."""
    key = f"section.{name}"
    return say(lang, key) if key in EN else name


def _note(lang: str, dropped: list[str], hint: str | None, cut: int = 0) -> str:
    parts = list(dropped)
    if cut:
        parts.append(say(lang, "section.tail", n=cut))
    if not parts:
        return "\n"
    note = say(lang, "shrunk", parts=say(lang, "sep").join(parts))
    if hint:
        note += " " + say(lang, "full_report", hint=hint)
    return f"\n\n---\n{note}\n"


def _cut(text: str, limit: int, lang: str, dropped: list[str], hint: str | None) -> str:
    """Keep the head of the report up to a benchmark heading, closing what was left open."""
    cut_at = cut_point(text, limit, lang, dropped, hint)
    return cut_output(text[:cut_at], limit, lang, dropped, hint, heading_lines(text[cut_at:]))


def cut_point(text: str, limit: int, lang: str, dropped: list[str], hint: str | None) -> int:
    """Where `_cut` cuts: the last benchmark heading before the budget. It reads `text` only up to
    `limit` characters, so report/markdown.py can give it the head of a report it never finished."""
    first_line_end = text.find("\n") if "\n" in text else len(text)
    reserve = len(_note(lang, dropped, hint, cut=99999)) + 40
    budget = max(limit - reserve, 0)
    cut_at = text.rfind("\n### ", 0, budget)
    if cut_at <= first_line_end:
        cut_at = text.rfind("\n", 0, budget)
    if cut_at <= first_line_end:
        cut_at = min(budget, len(text))
    return cut_at


def heading_lines(text: str) -> int:
    """The benchmark headings (`### `, `#### ` lines) in `text`: what the cut note counts as left out.
    Lines end at `\n` only and code blocks are skipped, as GitHub reads them: a U+2028 in a name or a
    `### ` line in an error tail is no heading, and so no benchmark section."""
    return sum(1 for ln in outside_fences(text.split("\n")) if ln.startswith(("### ", "#### ")))


def outside_fences(lines: list[str]) -> Iterator[str]:
    """The lines that are not inside a fenced code block (nor its fences)."""
    return _Fences().outside(lines)


class _Fences:
    """Walks lines past fenced code blocks; `open` is the fence still open after the last line."""

    def __init__(self) -> None:
        self.open: str | None = None

    def outside(self, lines: list[str]) -> Iterator[str]:
        for line in lines:
            m = FENCE.match(line)
            if self.open:
                fence = self.open
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                    self.open = None
                continue
            if m:
                self.open = m.group(1)
                continue
            yield line


def cut_output(kept: str, limit: int, lang: str, dropped: list[str], hint: str | None, gone: int) -> str:
    """The kept head, its open blocks closed, and the note that `gone` benchmark sections were left out."""
    out = _close_blocks(kept).rstrip("\n") + _note(lang, dropped, hint, cut=max(gone, 1))
    return out if len(out) <= limit else out[:limit]


def _close_blocks(text: str) -> str:
    """Close a code fence and any `<details>` the cut left open, so the rest renders sanely."""
    fences = _Fences()
    opened = sum(line.count("<details") - line.count("</details>") for line in fences.outside(text.splitlines()))
    if fences.open:
        text = text.rstrip("\n") + f"\n{fences.open}\n"
    return text + "\n</details>\n" * max(opened, 0)
