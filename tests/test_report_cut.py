"""The Markdown report has one path at every size (report/markdown.py): a report cut to a limit is
the whole report (rendered without a limit) cut by shrink(), whether the stream stopped early or
not; a value cannot fake a heading or a `<details>` block; one view serves every format; and the
HTML page past its cap of full sections."""
from __future__ import annotations

import copy
import functools
import re

import comparison_fixtures as fx
import jinja2
import pytest
from test_report import parse

from profopt_ci.report import render as render_mod
from profopt_ci.report import view as view_mod
from profopt_ci.report.bench_view import compact_rows_html
from profopt_ci.report.format import NAME_MAX, clip
from profopt_ci.report.markdown import markdown
from profopt_ci.report.render import MAX_CHARS, TEMPLATES, build_view, render, write_html
from profopt_ci.report.shrink import heading_lines, shrink
from profopt_ci.report.view import report_order

HINT = "the job summary and the `profopt-report` artifact"
HEADING_LIKE = "x\u2028### y\n#### z"  # line breaks of every kind, then heading markers


def measured(n_changed: int, n_unchanged: int, *, seed: int = 0, profiles: bool = False,
             long_names: bool = False) -> list[fx.Measured]:
    """Every kind of benchmark section: failed (traceback), reject (broken constraint), trade-off,
    inconclusive, keep, unchanged; hostile and long names among them; one benchmark's params differ."""
    benches = []
    for i in range(n_changed):
        name = ("a|b<script>@team-" if i % 7 == 3 else "suite/" + "long-" * (i % 5 * 6)) + str(i)
        kind = (i + seed) % 5
        if kind == 0:
            benches.append(fx.failed_benchmark(name, "head" if i % 2 else "base", "stderr:\n" + fx.TRACEBACK))
            continue
        step, memory, loss, cv = {1: (8.9, 210.0, 2.412, 0.02), 2: (6.9, 280.0, 2.305, 0.02),
                                  3: (7.9, 210.0, 2.305, 0.06), 4: (6.9, 210.0, 2.305, 0.02)}[kind]
        benches.append(fx.benchmark(name, 8.0, step, cv=cv, memory=(210.0, memory), loss=(2.301, loss), seed=i,
                                    with_profile=profiles, params=({"batch": 1}, {"batch": 2}) if i == 1 else None))
    return benches + [fx.benchmark(f"suite-{i:05d}/an-unchanged-benchmark" if long_names else f"u{i}", 8.0, 8.02,
                                   cv=0.005, seed=i, rounds=12, with_profile=profiles and i % 3 == 0)
                      for i in range(n_unchanged)]


@functools.cache
def mixed(n_changed: int, n_unchanged: int, **kw) -> dict:
    """Built once per arguments (thousands of benchmarks go through the statistics): copy to edit."""
    return fx.comparison(measured(n_changed, n_unchanged, **kw), head_env={"OMP_NUM_THREADS": "2"})


def whole_then_shrunk(c: dict, lang: str, limit: int, hint: str | None = HINT, *, limit_whole: int | None = 0) -> str:
    """The oracle: every section rendered (error tails sharing half the limit, as render() shares
    it), then shrink() (`limit_whole=None`: the whole report, not shrunk)."""
    page = build_view(c, lang).page(error_budget=(limit or MAX_CHARS) // 2)
    whole = markdown(render_mod._template("md", None), render_mod._context(page, c, lang, hint), None, hint,
                     packaged=False)
    return whole if limit_whole is None else shrink(whole, limit, hint=hint)


def cut(c: dict, lang: str, limit: int, hint: str | None = HINT) -> str:
    text = render(c, "md", lang, max_chars=limit, full_report_hint=hint)
    assert text == whole_then_shrunk(c, lang, limit, hint)
    assert len(text) <= limit
    return text


def stopped_early(text: str) -> bool:
    return "benchmark sections" in text or "个基准" in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cut_inside_the_changed_benchmarks_is_the_whole_reports_cut(lang):
    cuts = 0
    for n in (1, 3, 6, 9, 12, 16, 25, 40):
        c = mixed(n, n // 3, seed=n)
        for limit in (2500, 4000, 6000, 9000, 14000):
            cuts += "✂️" in cut(c, lang, limit)
            cut(c, lang, limit, hint=None)
    assert cuts >= 30  # most of these are cut, so the early stop is what the equality tested


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cut_at_the_unchanged_group_is_the_whole_reports_cut(lang):
    for n_unchanged in (5, 40, 120, 400, 1500):
        c = mixed(2, n_unchanged)
        for limit in (1500, 3000, 6000, 12000):
            cut(c, lang, limit)


def test_real_limit_over_and_under():
    assert len(render(fx.no_change(), "md", max_chars=None)) < 65000
    for c in (mixed(300, 0, profiles=True), mixed(40, 2500, long_names=True)):
        for lang in ("en", "zh"):
            assert stopped_early(cut(c, lang, 65000))
    cut(fx.huge_error_tail(), "en", 10000)
    cut(fx.many(), "en", 65000)  # 470 unchanged names fit on their collapsed line


def test_every_fixture_and_limit():
    for name, make in fx.ALL.items():
        c = make() if name != "many" else make(120)
        for lang in ("en", "zh"):
            for limit in (0, 300, 1200, 5000, 65000):
                cut(c, lang, limit)


def test_a_custom_template_is_streamed_whole_then_cut(tmp_path):
    """A copy of report.md.j2 from another folder (never stopped early) gives the packaged text."""
    copy_ = tmp_path / "report.md.j2"
    copy_.write_text((TEMPLATES / "report.md.j2").read_text(encoding="utf-8"), encoding="utf-8")
    for c in (mixed(30, 10), mixed(2, 1500)):
        for lang in ("en", "zh"):
            expected = cut(c, lang, 6000)
            assert stopped_early(expected) or "✂️" in expected
            assert render(c, "md", lang, template=copy_, max_chars=6000, full_report_hint=HINT) == expected


# ---- a value cannot fake a heading or a block -----------------------------------------------------

def leaves(x: object, path: tuple = ()):
    """Every (path, is_key) of a nested benchmark entry: its values and its dict keys."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield path + (k,), True
            yield from leaves(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from leaves(v, path + (i,))
    else:
        yield path, False


def mutated(b: dict, path: tuple, is_key: bool, value: str) -> dict:
    out = copy.deepcopy(b)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if is_key:
        parent[value + str(path[-1])] = parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return out


TARGETS = {"keep": lambda: fx.keep()["benchmarks"][0], "reject": lambda: fx.reject_constraint()["benchmarks"][1],
           "failed": lambda: fx.failed()["benchmarks"][1], "trade-off": lambda: fx.trade_off()["benchmarks"][0],
           "aa": lambda: fx.aa()["benchmarks"][0], "instructions": lambda: fx.instructions()["benchmarks"][0]}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_heading_like_values_in_any_field_make_no_heading(target):
    """Every field of a benchmark in turn starts with `### ` and holds line breaks of every kind and
    more `###`: its section still has one heading line, and the cut (which counts sections) is the
    whole report's."""
    base = TARGETS[target]()
    paths = [(p, k) for p, k in leaves(base) if p and p[0] not in ("samples", "profile")]
    failed = [fx.failed_benchmark(f"f{i}", "head", fx.TRACEBACK) for i in range(6)]
    doc = fx.comparison(failed + measured(4, 2), "failed")
    rest = doc["benchmarks"]
    checked = 0
    for path, is_key in paths:
        b = mutated(base, path, is_key, "### " + HEADING_LIKE)
        try:  # the mutated entry put into a built comparison: a file no producer writes
            c = {**doc, "benchmarks": rest[:6] + [b] + rest[6:]}
            whole = whole_then_shrunk(c, "en", 2000, hint=None, limit_whole=None)
        except (TypeError, ValueError, AttributeError, KeyError):
            continue  # a value the report cannot print at all
        changed, unchanged = report_order(c["benchmarks"])
        assert heading_lines(whole) == len(changed) + len(unchanged) + 1, (path, is_key)
        text = render(c, "md", "en", max_chars=2000)
        assert text == shrink(whole, 2000), (path, is_key)
        assert re.search(r"the last \d+ benchmark sections", text), (path, is_key)
        checked += 1
    assert checked >= len(paths) // 2


def test_a_details_block_in_an_error_tail_is_only_text():
    """A `<details>` in a fenced error tail is shown, not taken for one of the report's blocks."""
    late = fx.failed_benchmark("late", "head", "<details>\nstderr\n</details>\nboom")
    failed = [fx.failed_benchmark(f"f{i}", "head", fx.TRACEBACK) for i in range(10)]
    for benches in (failed[:1] + [late] + failed[1:], failed + [late]):  # in the streamed part, past it
        c = fx.comparison(benches + measured(5, 2), "failed")
        cut(c, "en", 3000)
        whole = render(c, "md", max_chars=None)
        assert "<\u2060details>\nstderr" in whole and whole.count("<details>") == 3  # the report's own


# ---- one view, every format -----------------------------------------------------------------------

def test_one_view_serves_every_format_with_the_same_text(tmp_path, monkeypatch):
    """Built once (cli/output_files.py does), the view gives each format the text it gives on its own;
    the headline, meta and chart are built once however many formats read them."""
    c = mixed(6, 4, profiles=True)
    alone = {fmt: render(c, fmt, "zh") for fmt in ("md", "html", "text")}
    calls = []
    real = view_mod.headline
    monkeypatch.setattr(view_mod, "headline", lambda *a: calls.append(1) or real(*a))
    view = build_view(c, "zh")
    for fmt in ("md", "html", "text"):
        assert render(c, fmt, "zh", view=view) == alone[fmt]
    write_html(c, tmp_path / "r.html", "zh", view=view)
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == alone["html"]
    assert calls == [1]
    with pytest.raises(ValueError):
        render(c, "md", "en", view=view)


# ---- HTML past its cap ------------------------------------------------------------------------------

def capped_page(c: dict, monkeypatch, cap: int, lang: str = "en") -> str:
    monkeypatch.setattr(view_mod, "HTML_FULL_MAX", cap)
    return render(c, "html", lang)


def test_html_over_the_cap_shows_full_sections_then_one_row_each(monkeypatch, tmp_path):
    c = mixed(7, 9)
    page = capped_page(c, monkeypatch, 5)
    doc = parse(page)
    assert not doc.errors and doc.stack == []
    assert page.count('<section class="benchmark">') == 5 and doc.tags["svg"] > 5  # plots, overview
    rows = re.findall(r"<tr><td>([^<]*)</td><td>(?:<span class=\"icon [^\"]+\" aria-hidden=\"true\"></span>)?[^<]*</td>"
                      r"<td class=\"n\">[^<]*</td><td class=\"n\">", page)
    changed, unchanged = report_order(c["benchmarks"])
    order = [clip(b["name"], NAME_MAX) for b in changed + unchanged]
    assert [r.replace("&lt;", "<").replace("&gt;", ">") for r in rows] == order[5:]
    assert "5 of 16 benchmarks are shown in full" in page and "other 11 are one row each" in page
    assert "comparison.json" in page
    noise = page[page.index("<summary>Rounds and noise"):]
    assert noise.count("<tr><td>") == sum(1 for b in (changed + unchanged)[:5] if b["metrics"])  # only the five
    path = tmp_path / "r.html"
    write_html(c, path)
    assert path.read_text(encoding="utf-8") == page
    zh = capped_page(c, monkeypatch, 5, "zh")
    assert "16 个基准中的 5 个完整显示" in zh


def test_html_under_or_at_the_cap_has_no_rows_and_no_cap_line(monkeypatch):
    c = mixed(3, 2)
    page = capped_page(c, monkeypatch, 5)
    assert page.count('<section class="benchmark">') == 5
    assert "shown in full" not in page and 'class="compact"' not in page
    monkeypatch.setattr(view_mod, "HTML_FULL_MAX", 500)
    assert render(c, "html") == page


def test_html_cap_inside_the_unchanged_group(monkeypatch):
    page = capped_page(mixed(2, 6), monkeypatch, 4)
    group = page[page.index('<details>\n<summary><span class="icon i-unchanged"'):page.index("</details>")]
    assert "Unchanged (6)" in group and group.count('<section class="benchmark">') == 2
    assert page.count('<section class="benchmark">') == 4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compact_rows_are_what_a_template_loop_prints(lang):
    """bench_view.compact_rows_html prints the rows a jinja loop over each benchmark's cells would:
    the same bytes, escaping included (names with markup, a failed benchmark without metrics)."""
    from profopt_ci.report import icons
    from profopt_ci.report.bench_view import _change_text, _ci_or_tolerance
    from profopt_ci.report.format import DASH, NAME_MAX, clip
    from profopt_ci.report.instruction_words import cell_suffix
    from profopt_ci.words.i18n import say

    def compact_row(b: dict, lang: str) -> dict:  # what the page's template loop printed per row
        decision = str(b.get("decision") or "inconclusive")
        m = (b.get("metrics") or {}).get("step_time_ms")
        return {"name": clip(str(b.get("name", "?")), NAME_MAX), "icon": icons.decision(decision),
                "word": say(lang, f"decision.{decision}", default=str(decision)), "change": _change_text(m) if m else DASH,
                "ci": _ci_or_tolerance(lang, m) + cell_suffix(lang, "step_time_ms", m) if m else DASH}

    c = copy.deepcopy(mixed(7, 9))
    c["benchmarks"][0]["name"] = "<b>x</b> & \"y\""
    c["benchmarks"][1]["metrics"] = {}
    loop = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True).from_string(
        "{% for r in rows %}\n<tr><td>{{ r['name'] }}</td><td>{{ r['icon'] }} {{ r['word'] }}</td>"
        "<td class=\"n\">{{ r['change'] }}</td><td class=\"n\">{{ r['ci'] }}</td></tr>\n{% endfor %}\n")
    page = build_view(c, lang).page(error_budget=1000, full_max=2)
    assert len(page.compact) == len(c["benchmarks"]) - 2
    rows = [compact_row(b, lang) for b in page.compact]
    assert loop.render(rows=rows) == "".join(compact_rows_html(page.compact, lang, chunk=3))
    assert "&lt;b&gt;x&lt;/b&gt; &amp; &#34;y&#34;" in "".join(compact_rows_html(c["benchmarks"], lang))
