"""The PR comment of a big comparison, built only as far as it can be seen.

In: the packaged `report.md.j2` template, the context render.py gives it (with a lazy view,
report/lazy.py), the language, the character limit and the full-report hint. Out: exactly the text
that rendering the whole report and cutting it with `shrink()` gives, or None where this module
cannot be sure of it without the whole report (render.py then renders it all, as before).

Why: at 10⁵ benchmarks the whole report is 100 MB, and the comment shows the first ~100 sections.

How: the template is streamed (jinja2 `generate()`); the view builds a benchmark's section when the
template reaches it, and tells (`Lazy.watch`) where each section starts. shrink() keeps the head
of a report whose benchmark part alone is over the limit, up to its last benchmark heading before
the budget (report/shrink.cut_point), and names what it left out: every droppable section (known
from the view without rendering them) and how many `### `/`#### ` lines follow the cut. So the
stream stops
- inside the benchmark sections, once the text so far is over the limit: the count is one heading
  per benchmark section not streamed, one for the unchanged group and one if the line of unchanged
  names reads like a heading;
- at the unchanged group's marker, where shrink() would collapse the group to its heading and one
  line of names: the names are made from the benchmark entries until that line is long enough.
A benchmark's section holds a heading-like line beyond its own heading only if its data has a `#`
(the catalogs and the template have none there), so only those sections are rendered to count
them. A `<details>` in an error tail (fenced, not escaped) would be dropped by shrink() before it
cuts: then, and for any report that might fit once shrunk, the answer is None.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import jinja2

from profopt_ci.documents.records import Metric
from profopt_ci.report.bench_view import error_tail
from profopt_ci.report.details import has_chart
from profopt_ci.report.format import NAME_MAX, clip, md_code_block, md_inline
from profopt_ci.report.shrink import cut_output, cut_point, heading_lines, section_title

# The droppable sections of report.md.j2 and its partials: marker name, rank, the view entry
# that decides whether the template writes it (None: always written).
SECTIONS = (("history", 0, "history"), ("noise", 1, None), ("hot-ops", 2, "hot"), ("phases", 3, "phases"),
            ("environments", 4, None), ("unchanged", 5, "unchanged"), ("chart", 6, "chart"))
MARKER = re.compile(r"<!-- profopt:section ([a-z0-9-]+) \d+(?: collapse)? -->\n")
HEADINGS = ("### ", "#### ")


class _Stream:
    """The report streamed so far, and where its benchmark sections start in it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.starts: list[int] = []      # starts[i]: where changed benchmark i's section starts
        self.unchanged: list[int] = []   # the same for the unchanged group's sections

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.size += len(chunk)

    def text(self) -> str:
        joined = "".join(self.parts)
        self.parts = [joined]
        return joined


MORE = object()  # "not over the limit yet: stream on"


class LazyMarkdown:
    """One report: the template, its context, the limit and the hint; `text()` is the answer."""

    def __init__(self, template: jinja2.Template, partial: jinja2.Template, context: dict, limit: int,
                 hint: str | None, error_cap: int, differences: dict) -> None:
        self.template, self.partial, self.context = template, partial, context
        self.limit, self.hint, self.lang, self.v = limit, hint, context["lang"], context["v"]
        self.error_cap, self.differences = error_cap, differences

    def text(self) -> str | None:
        """What `shrink(full report, limit, hint=hint)` returns, without the full report; None when unsure."""
        changed, unchanged = self.v["benchmarks"], self.v["unchanged"]
        stream, seen = _Stream(), 0
        changed.watch = lambda i: stream.starts.append(stream.size)
        unchanged.watch = lambda i: stream.unchanged.append(stream.size)
        gen = self.template.generate(**self.context)
        try:
            for chunk in gen:
                stream.add(chunk)
                if stream.unchanged:
                    return self._at_unchanged(stream)
                if len(stream.starts) > seen and stream.starts[-1] > self.limit + 5:
                    seen = len(stream.starts)
                    done = self._in_benchmarks(stream)
                    if done is not MORE:
                        return done
                if "<!-- profopt:section " in chunk and "<!-- profopt:section unchanged " not in chunk:
                    return None  # past the benchmarks, no unchanged group, under the limit: small
        finally:
            gen.close()
            changed.watch = unchanged.watch = None
        return None

    def _in_benchmarks(self, stream: _Stream) -> str | None | object:
        """The cut inside the changed benchmarks' sections, once the sections streamed pass the limit."""
        k = len(stream.starts) - 1  # sections 0 … k-1 are complete
        head = _clean(stream.text()[:stream.starts[k]]).rstrip("\n")
        if len(head) <= self.limit + 5:
            return MORE
        rest = self.v["benchmarks"].items[k:]
        if "<details>" in head or any(self._details_block(b) for b in rest):
            return None
        gone = sum(self._section_headings(b) for b in rest)
        if self.v["unchanged"]:
            gone += 1 + self._names_line(5).startswith(HEADINGS)  # the group's heading, its names
        return self._cut(head, gone)

    def _at_unchanged(self, stream: _Stream) -> str | None:
        """The cut where the unchanged group, collapsed to its heading and a line of names, passes the limit."""
        text = stream.text()[:stream.unchanged[0]]
        marker = text.rfind("<!-- profopt:section unchanged ")
        found = MARKER.match(text, marker) if marker >= 0 else None
        if found is None:
            return None
        before = _clean(text[:marker])
        if "<details>" in before:
            return None
        body = text[found.end():].splitlines()
        group = body[0] if body and body[0].startswith("#") else ""
        names = [ln[5:].strip() for ln in body if ln.startswith("#### ")]
        line = self._names_line(max(self.limit + 6 - len(before) - len(group) - 2, 5), names)
        head = f"{before}{group}\n\n{line}"
        if len(head) <= self.limit + 5:
            return None  # the collapsed group may fit: render it all
        return self._cut(head, 0)

    def _cut(self, head: str, gone_after: int) -> str:
        """shrink()'s cut of a report that starts with `head` and has `gone_after` headings after it."""
        dropped = [section_title(self.lang, name) for name, _, entry in SECTIONS if self._written(entry)]
        at = cut_point(head, self.limit, self.lang, dropped, self.hint)
        gone = heading_lines(head[at:]) + gone_after
        return cut_output(head[:at], self.limit, self.lang, dropped, self.hint, gone)

    def _written(self, entry: str | None) -> bool:
        """Whether the template writes the section that this view entry decides."""
        if entry == "chart":  # the chart itself looks at every benchmark
            c = self.context["c"]
            return has_chart(c.get("benchmarks") or [], self.lang, self.v["conf"])
        return entry is None or bool(self.v[entry])

    def _names_line(self, length: int, names: list[str] | None = None) -> str:
        """The collapsed unchanged group's line of names, at least `length` characters of it (or all)."""
        names = list(names or [])
        size = sum(map(len, names)) + 3 * max(len(names) - 1, 0)
        for b in self.v["unchanged"].items:
            if size >= length:
                break
            for name in self._section_names(b):
                size += len(name) + 3 * bool(names)
                names.append(name)
        return " · ".join(names)

    def _section_names(self, b: Mapping) -> list[str]:
        """The `#### ` lines of an unchanged benchmark's section, as shrink() collects them."""
        if self._plain(b):
            line = "#### " + md_inline(clip(str(b.get("name", "?")), NAME_MAX))
            return [line.splitlines()[0][5:].strip()]
        section = self._section(b, heading=4)
        return [ln[5:].strip() for ln in section.splitlines() if ln.startswith("#### ")]

    def _section_headings(self, b: Mapping) -> int:
        """The `### `/`#### ` lines of a changed benchmark's section: its heading, and any its data makes."""
        return 1 if self._plain(b) else heading_lines(self._section(b, heading=3))

    def _section(self, b: Mapping, heading: int) -> str:
        """One benchmark's section, rendered as the report's loop renders it."""
        return self.partial.render(**self.context, b=self.v["benchmarks"].make(b), heading=heading)

    def _plain(self, b: Mapping) -> bool:
        return _plain(b, self.differences.get(b.get("name"), []))

    def _details_block(self, b: Mapping) -> bool:
        """The error tail's code block holds a `<details>` that shrink() would match and drop."""
        message = (b.get("error") or {}).get("message")
        return bool(message) and "<details>" in md_code_block(error_tail(str(message), self.error_cap))


def _plain(b: Mapping, diffs: list[str]) -> bool:
    """No `#` in what the benchmark's section prints as text (bench_view.py and the helpers it calls):
    then its heading is its only heading-like line. tests/test_report_lazy.py puts a heading-like
    line into every field in turn, so a field printed later and missing here fails there."""
    get = b.get
    if _hash(get("name")) or _hash(get("decision")) or _hash(get("reason")) or _hash(get("unit")):
        return False
    for text in diffs:
        if "#" in text:
            return False
    for key, m in (get("metrics") or {}).items():
        if _hash(key):
            return False
        if type(m) is Metric:
            continue  # its verdict is one of five words and its figures numbers (typed): no `#`
        if _hash(m.get("verdict")) or _hash(m.get("base")) or _hash(m.get("head")):
            return False
    for key in ("goal", "constraints", "bottleneck", "error", "status"):
        if _anywhere(get(key)):
            return False
    return True


def _hash(x: object) -> bool:
    """A `#` in a value printed as text: a number never has one, anything else prints as str()."""
    kind = type(x)
    if kind is str:
        return "#" in x
    return not (x is None or kind is float or kind is int or kind is bool) and "#" in str(x)


def _anywhere(x: object) -> bool:
    """A `#` in any key or string of a small nested value."""
    kind = type(x)
    if x is None or kind is str or kind is float or kind is int or kind is bool:
        return kind is str and "#" in x
    if kind is dict or isinstance(x, Mapping):
        for k, v in x.items():
            if _hash(k) or _anywhere(v):
                return True
        return False
    if kind is list or kind is tuple:
        for v in x:
            if _anywhere(v):
                return True
        return False
    return "#" in str(x)


def _clean(text: str) -> str:
    """render.py's clean-up of the streamed text (blank line runs), for a head of it."""
    return re.sub(r"\n{3,}", "\n\n", text).lstrip("\n")
