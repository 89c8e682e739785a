"""The Markdown report: a template streamed over a page of the view, and cut to fit a PR comment.

In: a compiled `report.md.j2` (the packaged one or a `--template`), the context render.py gives it
(`v`, a Page of report/view.py), the character limit (None: none), the full-report hint and whether
the template is the packaged one. Out: the report, cleaned of blank-line runs and cut by shrink().

One path at every size: the template is streamed (jinja2 `generate()`), and a benchmark's section
is built when the stream reaches it (view.Sections). A packaged report whose text is already past
the limit stops streaming there, since for a large comparison the whole report is far past it and a comment
shows the first ~100 sections; what follows is known from the view without rendering it, because
shrink() reads the rest of a report only for
- the droppable sections it has (each named in the note): the view says which the template writes;
- how many benchmark headings follow the cut: one per benchmark section (report/format.py escapes a
  leading `#` of every value, and shrink.heading_lines skips code blocks), and one for the
  unchanged group;
- the line of unchanged names a collapsed group keeps: made from the benchmark entries, as far as
  it can be seen.
A report still under the limit at its unchanged group, or past its benchmark sections, is streamed
to its end and given to shrink() whole. Any other template is always streamed whole.
"""
from __future__ import annotations

import re

import jinja2

from profopt_ci.report.format import NAME_MAX, clip, md_inline
from profopt_ci.report.shrink import cut_output, cut_point, heading_lines, section_title, shrink

# The droppable sections of report.md.j2 and its partials, in rank order, with the part of the page
# that decides whether the template writes it (None: always written).
SECTIONS = (("history", "history"), ("noise", None), ("hot-ops", "hot"), ("phases", "phases"),
            ("environments", None), ("unchanged", "unchanged"), ("chart", "chart"))
MARKER = re.compile(r"<!-- profopt:section ([a-z0-9-]+) \d+(?: collapse)? -->\n")


def markdown(template: jinja2.Template, context: dict, limit: int | None, hint: str | None,
             packaged: bool) -> str:
    """The report `template` renders from `context`, cut to `limit` characters as shrink() cuts it."""
    page = context["v"]
    changed, unchanged = page.benchmarks, page.unchanged
    parts: list[str] = []
    size, starts, seen = 0, [], 0
    gen = template.generate(**context)
    try:
        for chunk in gen:
            if packaged and limit is not None:
                if unchanged.reached:
                    cut = _at_unchanged(page, _joined(parts), limit, hint)
                    if cut is not None:
                        return cut
                    packaged = False  # the collapsed group may fit: stream it all
                starts += [size] * (changed.reached - len(starts))
                if len(starts) > seen and starts[-1] > limit + 5:
                    seen = len(starts)
                    cut = _in_benchmarks(page, _joined(parts), starts, limit, hint)
                    if cut is not None:
                        return cut
                if "<!-- profopt:section " in chunk and "<!-- profopt:section unchanged " not in chunk:
                    packaged = False  # past the benchmark sections and under the limit: stream it all
            parts.append(chunk)
            size += len(chunk)
    finally:
        gen.close()
    text = clean("".join(parts)).strip("\n") + "\n"
    return shrink(text, limit, hint=hint) if limit is not None else text


def _joined(parts: list[str]) -> str:
    """The text streamed so far, kept as one part so the next look joins only what came since."""
    parts[:] = ["".join(parts)]
    return parts[0]


def clean(text: str) -> str:
    """Runs of blank lines made by the template's conditionals, down to one."""
    return re.sub(r"\n{3,}", "\n\n", text)


def _in_benchmarks(page, text: str, starts: list[int], limit: int, hint: str | None) -> str | None:
    """The cut inside the changed benchmarks' sections, once the sections streamed pass the limit."""
    k = len(starts) - 1  # sections 0 … k-1 are complete
    head = clean(text[:starts[k]]).lstrip("\n").rstrip("\n")
    if len(head) <= limit + 5:
        return None
    gone = len(page.benchmarks) - k + bool(page.unchanged)  # their headings, the unchanged group's
    return _cut(page, head, limit, hint, gone)


def _at_unchanged(page, text: str, limit: int, hint: str | None) -> str | None:
    """The cut where the unchanged group, collapsed to its heading and a line of names, passes the limit."""
    marker = text.rfind("<!-- profopt:section unchanged ")
    found = MARKER.match(text, marker) if marker >= 0 else None
    if found is None:
        return None
    before = clean(text[:marker]).lstrip("\n")
    body = text[found.end():].split("\n")
    group = body[0] if body and body[0].startswith("#") else ""
    line = _names_line(page, max(limit + 6 - len(before) - len(group) - 2, 5))
    head = f"{before}{group}\n\n{line}"
    if len(head) <= limit + 5:
        return None
    return _cut(page, head, limit, hint, 0)


def _cut(page, head: str, limit: int, hint: str | None, gone_after: int) -> str:
    """shrink()'s cut of a report that starts with `head` and has `gone_after` headings after it."""
    lang = page.lang
    dropped = [section_title(lang, name) for name, part in SECTIONS if _written(page, part)]
    at = cut_point(head, limit, lang, dropped, hint)
    return cut_output(head[:at], limit, lang, dropped, hint, heading_lines(head[at:]) + gone_after)


def _written(page, part: str | None) -> bool:
    """Whether the packaged template writes the droppable section that this part of the page decides."""
    if part is None:
        return True
    if part == "chart":
        return page.has_chart()
    if part in ("phases", "hot"):
        return page.has(part)
    return bool(getattr(page, part))


def _names_line(page, length: int) -> str:
    """The collapsed unchanged group's line of names (its `#### ` headings), at least `length`
    characters of it, or all."""
    names: list[str] = []
    size = -3
    for b in page.unchanged.entries:
        if size >= length:
            break
        name = md_inline(clip(str(b.get("name", "?")), NAME_MAX)).strip()
        names.append(name)
        size += len(name) + 3
    return " · ".join(names)
