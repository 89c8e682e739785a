"""comparison@1 → a view: the report's content as plain strings and rows, in one language, built once.

In: a comparison@1 dict and the language (`View`). Out: what every format prints, computed once
per comparison whichever formats read it (Markdown, HTML, terminal text, the PR comment): headline,
meta line, notes, legend, differences, the benchmarks in report order (changed ones, unchanged ones
apart), the chart, environments and history. A format reads the view through a `Page` (`View.page`):
its share of characters for error tails, whether it draws SVG plots (HTML), and how many benchmarks
get a full section (HTML; None: all). A page's benchmark sections (report/bench_view.py) are built
when a template reaches them and not kept, so a report of many benchmarks builds only the few hundred
sections a PR comment shows; its detail tables (report/details.py) are built when first read.
No statistics happen here: numbers are formatted, rows ordered and long values capped. The view is
format-neutral; the Markdown environment escapes every string it prints, the HTML one autoescapes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence

from profopt_ci.analyze.decide import SEVERITY
from profopt_ci.report.bench_view import bench_view, compact_rows_html
from profopt_ci.report.details import (
    chart,
    environments,
    has_chart,
    hot_ops,
    may_have_hot_ops,
    may_have_phases,
    noise,
    phases,
)
from profopt_ci.report.format import clip, confidence_label, num, value_text
from profopt_ci.report.headline import headline, measured
from profopt_ci.report.history import history_view
from profopt_ci.report.instruction_words import instructions_only
from profopt_ci.report.instruction_words import meta_part as instr_meta
from profopt_ci.report.instruction_words import notes as instr_notes
from profopt_ci.report.site_links import page_url
from profopt_ci.report.svg import bench_plots, overview_plot
from profopt_ci.words.i18n import EN, say

HTML_FULL_MAX = 500  # benchmarks the HTML page shows as full sections with plots; the rest are rows


class View:
    """The report's content for one comparison in one language; each part built when first read, once."""

    def __init__(self, c: dict, lang: str, site_url: str | None = None) -> None:
        self.c, self.lang, self.site_url = c, lang, site_url
        self.conf = confidence_label(c.get("confidence"))
        self.decision = c.get("decision")
        self.unpaired = c.get("mode") == "unpaired"
        everyone = list(c.get("benchmarks") or [])
        self.entries: list[dict] = measured(everyone)  # what was measured; the rest are `not_measured` rows
        self.skipped = [b for b in everyone if (b.get("reach") or {}).get("measured", True) is False]
        self.by_name = differences_by_benchmark(c.get("differences") or [], lang)
        self.differences = self.by_name.get(None, [])
        self.changed, self.unchanged = report_order(self.entries)
        self.n_unchanged = len(self.unchanged)

    @functools.cached_property
    def headline(self) -> str:
        return headline(self.c, self.lang)

    @functools.cached_property
    def meta(self) -> str:
        return _meta(self.c, self.lang, self.conf)

    @functools.cached_property
    def notes(self) -> list[str]:
        return [say(self.lang, n) for n in instr_notes(self.c, self.lang, list(self.c.get("notes") or []))]

    @functools.cached_property
    def new_in_pr(self) -> list[dict]:
        """The PR's new benchmarks as table rows: head figures, rounds, why the base did not run it."""
        rows = []
        for n in self.c.get("new_in_pr") or []:
            ms = (n.get("head") or {}).get("step_time_ms")
            head = f"{num(ms)} ms" if n.get("status") == "ok" and ms is not None else say(self.lang, "new.failed")
            rows.append({"name": n.get("name"), "head": head, "rounds": n.get("rounds", 0),
                         "why": say(self.lang, n.get("cause_msg") or n.get("cause")) or say(self.lang, "new.why.none")})
        return rows

    @functools.cached_property
    def not_measured(self) -> list[dict]:
        """The benchmarks the change does not reach (measure: changed): name and why, one row each."""
        rows = []
        for b in self.skipped:
            reach = b.get("reach") or {}
            ms = reach.get("nightly_ms")
            nightly = (say(self.lang, "reach.nightly", value=f"{num(ms)} ms", commit=str(reach.get("nightly_commit"))[:7])
                       if isinstance(ms, (int, float)) else "")
            rows.append({"name": clip(str(b.get("name")), 100), "nightly": nightly,
                         "why": say(self.lang, b.get("reason_msg") or b.get("reason"))})
        return rows

    @functools.cached_property
    def any_nightly(self) -> bool:
        return any(r["nightly"] for r in self.not_measured)

    @functools.cached_property
    def legend(self) -> str:
        return say(self.lang, "table.legend", how=say(self.lang, "how.unpaired" if self.unpaired else "how.paired"))

    @functools.cached_property
    def chart(self) -> dict | None:
        return chart(self.entries, self.lang, self.conf)

    def has_chart(self) -> bool:
        """Whether `chart` draws anything, without building it (the cut of a long comment asks)."""
        return self.chart is not None if "chart" in self.__dict__ else has_chart(self.entries, self.lang, self.conf)

    @functools.cached_property
    def environments(self) -> list[dict]:
        return environments(self.c, self.lang)

    @functools.cached_property
    def history(self) -> list[dict]:
        return history_view(self.c, self.lang)

    def page(self, *, error_budget: int, plots: bool = False, full_max: int | None = None) -> Page:
        """How one format reads this view: `error_budget` characters shared by all error tails, SVG
        plots or not, and past `full_max` benchmarks only the first `full_max` in report order get a
        section (and detail rows); the rest are `compact` rows."""
        return Page(self, error_budget, plots, full_max)


class Page:
    """A view as one format reads it: the view's parts, plus its own benchmark sections and details.

    Templates see it as `v`: `v.headline`, `v.benchmarks` (the changed ones' sections), `v.unchanged`,
    `v.compact`, `v.noise`, … The view's parts come through unchanged (`__getattr__`)."""

    def __init__(self, view: View, error_budget: int, plots: bool, full_max: int | None) -> None:
        self.view, self.plots = view, plots
        changed, unchanged, rest = view.changed, view.unchanged, []
        if full_max is not None and len(view.entries) > full_max:
            shown = (changed + unchanged)[:full_max]
            rest = (changed + unchanged)[full_max:]
            changed, unchanged = shown[:len(changed)], shown[len(changed):]
            full = {id(b) for b in shown}
            self.full = [b for b in view.entries if id(b) in full]  # the detail tables cover the sections
        else:
            self.full = view.entries
        self.error_cap = error_cap(view.entries, error_budget)
        self.benchmarks = Sections(changed, self._section)
        self.unchanged = Sections(unchanged, self._section)
        self.compact: list[dict] = rest
        self.capped = {"shown": len(changed) + len(unchanged), "total": len(view.entries)} if rest else None
        self._has: dict[str, bool] = {}

    def __getattr__(self, name: str):
        return getattr(self.view, name)

    def _section(self, b: dict) -> dict:
        v = self.view
        section = bench_view(b, v.lang, v.conf, v.by_name.get(b.get("name"), []), self.error_cap)
        label = v.c.get("hardware_label")
        section["site"] = page_url(v.site_url, str(label), str(b.get("name"))) if v.site_url and label else None
        if self.plots:
            sides = (say(v.lang, "side.base"), say(v.lang, "side.head"))
            section["plots"] = bench_plots(b, v.c.get("threshold_pct"), sides, say(v.lang, "plots"))
        return section

    @property
    def compact_html(self) -> Iterator:
        return compact_rows_html(self.compact, self.view.lang)

    @functools.cached_property
    def overview(self) -> str | None:
        entries = self.view.entries
        return overview_plot(entries, self.view.c.get("threshold_pct")) if self.plots and len(entries) > 1 else None

    @functools.cached_property
    def phases(self) -> list[dict]:
        return list(self._phases())

    @functools.cached_property
    def hot(self) -> list[dict]:
        return list(self._hot())

    @functools.cached_property
    def noise(self) -> list[dict]:
        return [noise(b) for b in self.full if b.get("metrics")]

    def has(self, part: str) -> bool:
        """Whether the template prints the detail `part` (phases, hot), looking only as far as the first."""
        if part in self.__dict__:
            return bool(self.__dict__[part])
        if part not in self._has:  # a template asks more than once; a scan of every entry may find none
            self._has[part] = next(iter(self._phases() if part == "phases" else self._hot()), None) is not None
        return self._has[part]

    def _phases(self) -> Iterator[dict]:
        for b in self.full:
            if may_have_phases(b):
                p = phases(b)
                if p["rows"]:
                    yield p

    def _hot(self) -> Iterator[dict]:
        for b in self.full:
            if may_have_hot_ops(b):
                h = hot_ops(b, self.view.lang)
                if h["rows"] or h["notes"]:
                    yield h


class Sections(Sequence):
    """A page's benchmark sections in report order, each built when it is read and not kept.

    `reached` counts the steps of the latest iteration (one per section begun, one more at its end):
    report/markdown.py reads it to learn where a section begins in the text a template streams."""

    def __init__(self, entries: list[dict], make: Callable[[dict], dict]) -> None:
        self.entries, self.make, self.reached = entries, make, 0

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.make(b) for b in self.entries[index]]
        return self.make(self.entries[index])

    def __iter__(self) -> Iterator[dict]:
        self.reached = 0
        for b in self.entries:
            self.reached += 1
            yield self.make(b)
        self.reached += 1


def build_view(c: dict, lang: str, site_url: str | None = None) -> View:
    """The view of `c` in `lang`: build it once and hand it to every format that renders `c`.
    `site_url`: where `profopt site` publishes the nightly history; each benchmark links to its page."""
    return View(c, lang, site_url)


def report_order(benches: list[dict]) -> tuple[list[dict], list[dict]]:
    """The benchmarks with a section of their own (by their decision's severity, analyze/decide's
    DECISIONS, each group in the comparison's order) and the unchanged ones, known before any view."""
    groups: list[list[dict]] = [[] for _ in range(len(SEVERITY))]
    for b in benches:  # a stable sort by decision's severity, in one pass
        groups[SEVERITY.get(str(b.get("decision") or "inconclusive"), SEVERITY["inconclusive"])].append(b)
    return [b for group in groups[:-1] for b in group], groups[-1]  # no-change is the last group


def error_cap(benches: list[dict], error_budget: int) -> int:
    n_errors = sum(1 for b in benches if (b.get("error") or {}).get("message"))
    return max(400, min(4000, error_budget // max(1, n_errors)))


def _meta(c: dict, lang: str, conf: str) -> str:
    counts = c.get("counts") or {}
    n = counts.get("benchmarks", len(c.get("benchmarks") or []))
    parts = [say(lang, "meta.benchmark") if n == 1 else say(lang, "meta.benchmarks", n=n)]
    for key in ("improved", "regressed", "constraint_failures", "inconclusive", "failed", "not_measured"):
        if counts.get(key):
            parts.append(say(lang, f"count.{key}", n=counts[key]))
    # nothing timed (instructions only; or nothing measured: the change reaches no benchmark): no
    # rounds, no time threshold to show
    timed = not instructions_only(c) and not (n and counts.get("not_measured") == n)
    if c.get("mode") == "unpaired":
        parts.append(say(lang, "meta.unpaired"))
    elif timed:
        parts.append(_paired_rounds(c, lang))
    if timed:
        parts.append(say(lang, "meta.threshold", t=f"{c.get('threshold_pct') or 0:g}"))
    parts += [p for p in (instr_meta(c, lang),) if p]
    parts.append(say(lang, "meta.confidence", conf=conf))
    if c.get("hardware_label"):
        parts.append(str(c["hardware_label"]))
    parts.append(say(lang, "meta.sides", base=_side(c.get("base")), head=_side(c.get("head"))))
    return " · ".join(parts)


def _paired_rounds(c: dict, lang: str) -> str:
    """"paired, 12 rounds", or the range when the benchmarks ran different numbers of rounds (the
    sequential looks stop each at its own): the document's `rounds` is only the largest."""
    ran = [r for r in (b.get("rounds") for b in c.get("benchmarks") or [])
           if isinstance(r, int) and not isinstance(r, bool) and r > 0]
    if not ran or min(ran) == max(ran):
        return say(lang, "meta.paired", rounds=ran[0] if ran else c.get("rounds", "?"))
    return say(lang, "meta.paired_range", lo=min(ran), hi=max(ran))


def _side(side: dict | None) -> str:
    side = side or {}
    ref = clip(str(side.get("ref") or "?"), 60)
    commit = side.get("commit")
    return f"{ref} ({str(commit)[:7]})" if commit else ref


def differences_by_benchmark(diffs: list[dict], lang: str) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for d in diffs:
        scope = str(d.get("scope", "?"))
        scope = say(lang, f"scope.{scope}") if f"scope.{scope}" in EN else clip(scope, 30)
        text = f"{scope} {clip(str(d.get('key', '?')), 60)}: {value_text(d.get('base'))} → {value_text(d.get('head'))}"
        out.setdefault(d.get("benchmark"), []).append(text)
    return out
