"""The PR comment built only as far as it is seen (report/markdown.py) is the text of the whole
report cut by shrink() (render.full_markdown), for comparisons and limits on both sides of the cut;
and the HTML page past its cap of full sections."""
from __future__ import annotations

import copy
import re

import comparison_fixtures as fx
import pytest
from test_report import parse

from profopt_ci.report import render as render_mod
from profopt_ci.report.render import TEMPLATES, full_markdown, render, write_html
from profopt_ci.report.view import build_view, report_order

HINT = "the job summary and the `profopt-report` artifact"
HEADING_LIKE = "x\u2028### y\n#### z"  # a value that makes heading-like lines wherever it is printed


@pytest.fixture(scope="module")
def many() -> dict:
    return fx.many()


def lazy(c: dict, lang: str, limit: int, hint: str | None = None) -> str | None:
    return render_mod._lazy_markdown(c, lang, limit, hint)


def mixed(n_changed: int, n_unchanged: int, *, seed: int = 0, profiles: bool = False, long_names: bool = False) -> dict:
    """Every kind of benchmark section: failed (traceback), reject (broken constraint), trade-off,
    inconclusive, keep, unchanged; hostile and long names among them."""
    benches = []
    broken = [{"metric": "loss", "rule": "rel_tol", "limit": 0.01, "base": 2.301, "head": 2.412, "ok": False,
               "detail": "|Δ| 4.82% > 1%"}]
    for i in range(n_changed):
        name = ("a|b<script>@team-" if i % 7 == 3 else "suite/" + "long-" * (i % 5 * 6)) + str(i)
        kind = (i + seed) % 5
        if kind == 0:
            benches.append(fx.failed_benchmark(name, "head" if i % 2 else "base", "stderr:\n" + fx.TRACEBACK))
        elif kind == 1:
            benches.append(fx.benchmark(name, "reject", 8.0, 8.9, "regressed", ci=(7.9, 14.4), seed=i,
                                        constraints=broken, bottleneck=fx.COMPUTE, with_profile=profiles))
        elif kind == 2:
            benches.append(fx.benchmark(name, "trade-off", 8.0, 6.9, "improved", memory=(210.0, 280.0),
                                        memory_verdict="regressed", seed=i, with_profile=profiles))
        elif kind == 3:
            benches.append(fx.benchmark(name, "inconclusive", 8.0, 7.9, "inconclusive", ci=(-4.4, 1.9), seed=i,
                                        with_profile=profiles))
        else:
            benches.append(fx.benchmark(name, "keep", 8.0, 6.9, "improved", ci=(-16.3, -11.2), seed=i,
                                        with_profile=profiles))
    benches += [fx.benchmark(f"suite-{i:05d}/an-unchanged-benchmark" if long_names else f"u{i}", "no-change",
                             8.0, 8.02, "unchanged", ci=(-1.2, 1.4), seed=i, rounds=5,
                             with_profile=profiles and i % 3 == 0) for i in range(n_unchanged)]
    diffs = [{"scope": "params", "benchmark": "suite/1", "key": "batch", "base": 1, "head": 2},
             {"scope": "env", "benchmark": None, "key": "OMP_NUM_THREADS", "base": "1", "head": "2"}]
    return fx.comparison(benches, "failed" if n_changed else "no-change", differences=diffs)


def same(c: dict, lang: str, limit: int, hint: str | None = HINT) -> str | None:
    """The lazy text where it answers, asserted equal to the full one; None where it declines."""
    text = lazy(c, lang, limit, hint)
    if text is not None:
        assert text == full_markdown(c, lang, max_chars=limit, full_report_hint=hint)
    return text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_changed_benchmarks_cut_where_the_full_report_is_cut(lang):
    answered = 0
    for n in (1, 3, 6, 9, 12, 16, 25, 40):
        c = mixed(n, n // 3, seed=n)
        for limit in (2500, 4000, 6000, 9000, 14000):
            answered += same(c, lang, limit) is not None
            answered += same(c, lang, limit, hint=None) is not None
    assert answered >= 30  # the cut is inside the benchmark sections for most of these


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_unchanged_group_cut_where_the_full_report_is_cut(lang):
    answered = 0
    for n_unchanged in (5, 40, 120, 400, 1500):
        c = mixed(2, n_unchanged)
        for limit in (1500, 3000, 6000, 12000):
            answered += same(c, lang, limit) is not None
    assert answered >= 8


def test_real_limit_over_and_under(many):
    assert len(full_markdown(fx.no_change(), "en")) < 65000
    assert lazy(fx.no_change(), "en", 65000) is None  # fits: rendered whole, as before
    for c in (mixed(300, 0, profiles=True), mixed(40, 2500, long_names=True)):
        for lang in ("en", "zh"):
            assert same(c, lang, 65000) is not None
    assert same(fx.huge_error_tail(), "en", 10000) is not None
    assert lazy(many, "en", 65000) is None  # 470 unchanged names fit on their collapsed line
    assert render(many, full_report_hint=HINT) == full_markdown(many, full_report_hint=HINT)


def test_every_fixture_and_limit_gives_the_full_reports_text():
    for name, make in fx.ALL.items():
        c = make() if name != "many" else make(120)
        for lang in ("en", "zh"):
            for limit in (0, 300, 1200, 5000, 65000):
                assert render(c, "md", lang, max_chars=limit, full_report_hint=HINT) == \
                    full_markdown(c, lang, max_chars=limit, full_report_hint=HINT), (name, lang, limit)


def test_a_copy_of_the_packaged_template_renders_whole_to_the_same_text(tmp_path):
    """--template takes the full path; a copy of report.md.j2 from another folder gives the text
    the packaged template gives when cut early."""
    copy_ = tmp_path / "report.md.j2"
    copy_.write_text((TEMPLATES / "report.md.j2").read_text(encoding="utf-8"), encoding="utf-8")
    for c in (mixed(30, 10), mixed(2, 1500)):
        for lang in ("en", "zh"):
            expected = same(c, lang, 6000)
            assert expected is not None
            assert render(c, "md", lang, template=copy_, max_chars=6000, full_report_hint=HINT) == expected


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


def mutated(b: dict, path: tuple, is_key: bool) -> dict:
    out = copy.deepcopy(b)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if is_key:
        parent[HEADING_LIKE + str(path[-1])] = parent.pop(path[-1])
    else:
        parent[path[-1]] = HEADING_LIKE
    return out


TARGETS = {"keep": lambda: fx.keep()["benchmarks"][0], "reject": lambda: fx.reject_constraint()["benchmarks"][1],
           "failed": lambda: fx.failed()["benchmarks"][1], "trade-off": lambda: fx.trade_off()["benchmarks"][0],
           "aa": lambda: fx.aa()["benchmarks"][0], "instructions": lambda: fx.instructions()["benchmarks"][0]}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_heading_like_lines_in_any_field_are_counted_as_the_full_report_counts_them(target):
    """Every field of a benchmark past the cut (and of the first unchanged one, whose name starts the
    collapsed line) in turn holds line breaks and `###`: the count of left-out sections and the
    names line stay those of the full report, whatever bench_view prints."""
    base = TARGETS[target]()
    paths = [(p, k) for p, k in leaves(base) if p and p[0] not in ("samples", "profile")]
    failed = [fx.failed_benchmark(f"f{i}", "head", fx.TRACEBACK) for i in range(6)]
    past_cut = fx.comparison(failed + mixed(4, 2)["benchmarks"], "failed")  # the entry goes after the six
    around = {"changed": (past_cut, 2000, 6), "unchanged": (mixed(1, 60), 900, 1)}
    checked = 0
    for path, is_key in paths:
        b = mutated(base, path, is_key)
        for where, (c, limit, at) in around.items():
            entry = dict(b, decision="no-change") if where == "unchanged" else b
            benches = list(c["benchmarks"])
            benches.insert(at, entry)
            c = dict(c, benchmarks=benches)
            try:
                expected = full_markdown(c, "en", max_chars=limit, full_report_hint=HINT)
            except (TypeError, ValueError, AttributeError, KeyError):
                continue  # a value the report cannot print at all
            text = lazy(c, "en", limit, HINT)
            assert text is None or text == expected, (where, path, is_key)
            checked += text is not None
    assert checked >= len(paths) // 2


def test_a_details_block_in_an_error_tail_is_left_to_the_full_path():
    """shrink() drops `<details>…</details>` blocks before it cuts; one in a fenced error tail,
    streamed or not, sends the report down the full path."""
    late = fx.failed_benchmark("late", "head", "<details>\nstderr\n</details>\nboom")
    failed = [fx.failed_benchmark(f"f{i}", "head", fx.TRACEBACK) for i in range(10)]
    for benches in (failed[:1] + [late] + failed[1:], failed + [late]):  # in the streamed part, past it
        c = fx.comparison(benches + mixed(5, 2)["benchmarks"], "failed")
        assert lazy(c, "en", 3000) is None
        assert render(c, max_chars=3000) == full_markdown(c, max_chars=3000)
        c["benchmarks"][benches.index(late)] = fx.failed_benchmark("late", "head", "no block here")
        assert same(c, "en", 3000) is not None


# ---- HTML past its cap ------------------------------------------------------------------------------

def capped_page(c: dict, monkeypatch, cap: int, lang: str = "en") -> str:
    monkeypatch.setattr(render_mod, "HTML_FULL_MAX", cap)
    return render(c, "html", lang)


def test_html_over_the_cap_shows_full_sections_then_one_row_each(monkeypatch, tmp_path):
    c = mixed(7, 9)
    page = capped_page(c, monkeypatch, 5)
    doc = parse(page)
    assert not doc.errors and doc.stack == []
    assert page.count('<section class="benchmark">') == 5 and doc.tags["svg"] > 5  # plots, overview
    rows = re.findall(r"<tr><td>([^<]*)</td><td>[^<]*</td><td class=\"n\">[^<]*</td><td class=\"n\">", page)
    view = build_view(c, "en")
    order = [b["name"] for b in view["benchmarks"]] + [b["name"] for b in view["unchanged"]]
    assert [r.replace("&lt;", "<").replace("&gt;", ">") for r in rows] == order[5:]
    assert "5 of 16 benchmarks are shown in full" in page and "other 11 are one row each" in page
    assert "comparison.json" in page
    changed, unchanged = report_order(c["benchmarks"])
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
    monkeypatch.setattr(render_mod, "HTML_FULL_MAX", 500)
    assert render(c, "html") == page


def test_html_cap_inside_the_unchanged_group(monkeypatch):
    page = capped_page(mixed(2, 6), monkeypatch, 4)
    group = page[page.index("<details>\n<summary>⚪"):page.index("</details>")]
    assert "Unchanged (6)" in group and group.count('<section class="benchmark">') == 2
    assert page.count('<section class="benchmark">') == 4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compact_rows_are_what_the_templates_loop_printed(lang):
    """bench_view.compact_rows_html replaced the template's loop over `compact`: same bytes, escaping
    included (names with markup, a failed benchmark without metrics, every decision)."""
    import jinja2

    from profopt_ci.report.bench_view import compact_rows_html

    c = mixed(7, 9)
    c["benchmarks"][0]["name"] = "<b>x</b> & \"y\""
    c["benchmarks"][1]["metrics"] = {}
    loop = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True).from_string(
        "{% for r in v.compact %}\n<tr><td>{{ r['name'] }}</td><td>{{ r['emoji'] }} {{ r['word'] }}</td>"
        "<td class=\"n\">{{ r['change'] }}</td><td class=\"n\">{{ r['ci'] }}</td></tr>\n{% endfor %}\n")
    view = build_view(c, lang, full_max=2)
    assert len(view["compact"]) == len(c["benchmarks"]) - 2
    assert loop.render(v=view) == "".join(compact_rows_html(view["compact"].items, lang, chunk=3))
    assert "&lt;b&gt;x&lt;/b&gt; &amp; &#34;y&#34;" in "".join(compact_rows_html(c["benchmarks"], lang))
