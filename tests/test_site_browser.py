"""The site and report.html in a real browser: headless Chromium (Debian's `chromium`, driven by
Playwright's Python package with `executable_path`), every page opened from file://.

Each page loads with no console error or warning and no request outside file://; its chart is drawn
(uPlot's canvas has pixels); hovering a point shows its commit; dragging zooms; a click opens the
commit; the table lists every nightly; the zh pages say nothing in English but names and units; the
index sorts and filters; report.html draws its plots with symbols every font has. A screenshot of
each page goes to the test's tmp folder (`screenshots/`) for a person to look at.

(A page's Content-Security-Policy forbids evaluating strings, so the tests read the page with
`evaluate`, never `wait_for_function`: its scripts are deferred, so they have run by "load".)

The first test is issue 30's done-when case with real nightlies: a repository c0…c8 whose step gets
~30% slower at c5, `profopt baseline refresh --store dir:S` at each commit, then `profopt site`.
"""
from __future__ import annotations

import re

import comparison_fixtures as fx
import pytest
from conftest import CPU_STEP, git, make_repo, run_cli
from sitekit import HOSTILE, launched, step_store, watch

from profopt_ci.report.render import write_html
from profopt_ci.report.site_links import page_path
from profopt_ci.site.build import build_site
from profopt_ci.store import stores

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {warmup: 1, min_time_ms: 10, values: 5, rounds: 11, threshold: 5%, profile: "off"}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {us: 2000}
"""
SLOWER = CPU_STEP.replace("int(us * 20)", "int(us * 26)")
REPO_URL = "https://github.com/octo/bench"
ZH_ALLOWED = {"ms", "MB", "items", "Ir", "profopt", "CPU", "cpu_model", "Test", "Other"}


@pytest.fixture(scope="module")
def browser():
    yield from launched()


def _shot(page, tmp_path, name: str) -> None:
    folder = tmp_path / "screenshots"
    folder.mkdir(exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _chart_drawn(page) -> bool:
    """The first chart's canvas has pixels that are not blank."""
    return page.evaluate("""() => {
        const c = document.querySelector('figure.chart canvas');
        if (!c || !c.width || !c.height) return false;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) ink++;
        return ink > 500;
    }""")


def _point(page, chart: int, idx: int) -> tuple[float, float]:
    """Where point `idx` of chart `chart` is on the page (from the chart's own scales)."""
    return tuple(page.evaluate("""([chart, idx]) => {
        const u = window.profoptCharts[chart], r = u.over.getBoundingClientRect();
        const y = u.data[2][idx];
        return [r.left + u.valToPos(idx, 'x'), r.top + u.valToPos(y, 'y')];
    }""", [chart, idx]))


@pytest.mark.slow
def test_done_when_nightlies_of_c0_to_c8_show_the_step_at_c5(tmp_path, browser):
    commits = [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC, ".gitignore": ".profopt/\n"}]
    commits += [{f"docs/{i}.txt": str(i)} for i in range(1, 9)]
    commits[5]["bench/work.py"] = SLOWER
    root = tmp_path / "repo"
    shas = make_repo(root, commits)
    store = tmp_path / "S"
    for sha in shas:
        git(root, "checkout", "-q", sha)
        proc = run_cli(["baseline", "refresh", "--store", f"dir:{store}"], root)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli(["site", "--store", f"dir:{store}", "--out", "site/", "--repo-url", REPO_URL], root)
    assert proc.returncode == 0, proc.stderr
    site = root / "site"

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    seen = watch(page)
    page.goto((site / "index.html").as_uri())
    link = page.get_by_role("link", name="busy", exact=True)
    assert link.count() == 1
    _shot(page, tmp_path, "index")
    link.click()
    page.wait_for_load_state("load")
    charts = page.evaluate("window.profoptData.metrics.map(m => m.key)")
    assert charts[0] == "step_time_ms" and page.evaluate("window.profoptCharts.length") == len(charts)  # deferred: ran before "load"
    assert page.url == (site / page_path("test-cpu", "busy")).as_uri()
    assert seen.problems() == [] and seen.foreign() == []
    rows = page.locator("table.nightlies tbody tr")
    assert rows.count() == 9
    cells = [rows.nth(i).locator("td").first.inner_text() for i in range(9)]
    assert cells == [s[:12] for s in shas]
    values = page.evaluate("window.profoptData.metrics[0].median")
    marks = page.locator("section.marks li.mark-change").all_inner_texts()
    assert len(marks) == 1 and f"at {shas[5][:12]}" in marks[0], (values, marks)
    assert "change point" in rows.nth(5).locator("td").last.inner_text()
    assert _chart_drawn(page)
    _shot(page, tmp_path, "busy")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A store of 12 nightlies of two benchmarks (one with a hostile name), a step at 7 and a CPU
    change at 9; its site in English (with commit links) and in Chinese."""
    root = tmp_path_factory.mktemp("site")
    store = step_store(root / "s", n=12, at=7, names=("busy", HOSTILE), cpu_from=9)
    stores.save(store, __import__("sitekit").night(12, {"busy": 13.0}, failed={HOSTILE: "timeout"}))
    quiet = lambda _m: None  # noqa: E731
    build_site(store, root / "en", repo_url=REPO_URL, warn=quiet)
    build_site(store, root / "zh", lang="zh", warn=quiet)
    return root


def test_a_benchmark_page_hovers_zooms_and_opens_a_commit(built, browser, tmp_path):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened: list[str] = []

    def elsewhere(route):
        opened.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p>commit</p>")

    context.route(re.compile(r"^https?://"), elsewhere)
    page = context.new_page()
    seen = watch(page)
    page.goto((built / "en" / page_path("test-cpu", "busy")).as_uri())
    assert page.evaluate("window.profoptCharts.length") == 1
    assert seen.problems() == [] and seen.foreign() == [] and opened == []
    commits = page.evaluate("window.profoptData.commits")
    assert len(commits) == 13 and page.locator("table.nightlies tbody tr").count() == 13
    assert _chart_drawn(page)

    x, y = _point(page, 0, 7)
    page.mouse.move(x, y)
    tip = page.locator("figure.chart .tip").first
    tip.wait_for(state="visible")
    assert commits[7] in tip.inner_text() and "2026-11-08" in tip.inner_text()
    _shot(page, tmp_path, "hover")

    x1, _ = _point(page, 0, 2)
    x2, _ = _point(page, 0, 6)
    page.mouse.move(x1, y)
    page.mouse.down()
    page.mouse.move(x2, y, steps=8)
    page.mouse.up()
    lo, hi = page.evaluate("[window.profoptCharts[0].scales.x.min, window.profoptCharts[0].scales.x.max]")
    assert 1 < lo < 2.5 and 5.5 < hi < 7, (lo, hi)   # about nightlies 2 to 6 of 0 to 12
    page.mouse.dblclick(x1, y)   # back to every nightly
    lo, hi = page.evaluate("[window.profoptCharts[0].scales.x.min, window.profoptCharts[0].scales.x.max]")
    assert lo < 0 and hi > 12

    x, y = _point(page, 0, 3)
    page.mouse.move(x, y)
    with page.expect_popup() as popup:
        page.mouse.click(x, y)
    popup.value.wait_for_load_state()
    assert opened == [f"{REPO_URL}/commit/{commits[3]}"]
    assert page.locator("table.nightlies tbody tr").first.locator("a").get_attribute("href") == \
        f"{REPO_URL}/commit/{commits[0]}"
    assert "environment: cpu_model Test CPU → Other CPU" in page.locator("section.marks").inner_text()
    context.close()


def test_the_hostile_benchmark_stays_text_and_its_failure_shows(built, browser):
    page = browser.new_page()
    seen = watch(page)
    page.goto((built / "en" / page_path("test-cpu", HOSTILE)).as_uri())
    assert page.evaluate("window.profoptCharts.length") == 1
    assert page.locator("h1").inner_text() == HOSTILE
    assert page.locator("img").count() == 0 and seen.problems() == [] and seen.foreign() == []
    last = page.locator("table.nightlies tbody tr").last
    assert "failed: timed out" in last.inner_text()


def test_the_index_sorts_and_filters(built, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    seen = watch(page)
    page.goto((built / "en" / "index.html").as_uri())
    names = lambda: page.locator("table.index tbody tr:not([hidden]) th a").all_inner_texts()  # noqa: E731
    assert names() == ["busy", HOSTILE]
    newest = page.locator("table.index thead th").nth(1)
    newest.click()
    first = names()
    newest.click()
    assert names() == list(reversed(first)) and newest.get_attribute("aria-sort") == "descending"
    page.locator("input.filter").fill("IMG")
    assert names() == [HOSTILE]
    assert page.locator("table.index tbody tr").first.locator("svg.spark polyline").count() == 1
    assert seen.problems() == [] and seen.foreign() == []
    page.emulate_media(color_scheme="dark")
    assert page.evaluate("getComputedStyle(document.documentElement).backgroundColor") == "rgb(13, 17, 23)"
    _shot(page, tmp_path, "index-dark")


@pytest.mark.parametrize("which", ["index.html", page_path("test-cpu", "busy")])
def test_the_chinese_pages_say_no_english_beyond_names_and_units(built, browser, tmp_path, which):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    seen = watch(page)
    page.goto((built / "zh" / which).as_uri())
    if which != "index.html":
        assert page.evaluate("window.profoptCharts.length") == 1
        x, y = _point(page, 0, 7)
        page.mouse.move(x, y)
        page.locator("figure.chart .tip").first.wait_for(state="visible")
    text = page.evaluate("document.body.innerText")
    for name in (HOSTILE, "busy", "test-cpu", "Test CPU", "Other CPU"):
        text = text.replace(name, " ")
    text = re.sub(r"\b[0-9a-f]{7,40}\b", " ", text)   # commits
    words = set(re.findall(r"[A-Za-z][A-Za-z_]+", text)) - ZH_ALLOWED
    assert words == set(), words
    assert seen.problems() == [] and seen.foreign() == []
    _shot(page, tmp_path, "zh-" + ("index" if which == "index.html" else "busy"))


@pytest.mark.parametrize(("case", "lang"), [("keep", "en"), ("trade_off", "zh"), ("failed", "en")])
def test_report_html_opens_with_its_plots_drawn_and_no_emoji(case, lang, browser, tmp_path):
    path = tmp_path / f"{case}.{lang}.html"
    write_html(fx.ALL[case](), path, lang)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    seen = watch(page)
    page.goto(path.as_uri())
    assert seen.problems() == [] and seen.foreign() == []
    plots = page.locator("svg.plot").filter(visible=True)   # those in a closed <details> are not shown
    if case != "failed":
        assert plots.count() >= 2
    for i in range(plots.count()):
        box = plots.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 30
        assert plots.nth(i).locator("circle, rect, line, path").count() > 0
    headings = page.locator("h1, h2").all_inner_texts()
    assert not [h for h in headings if re.search("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u2139]", h)]
    icon = page.locator("h1 .icon")   # a shape the page's CSS draws: no font needed
    box = icon.bounding_box()
    assert icon.count() == 1 and box and box["width"] > 5 and box["height"] > 5
    assert icon.evaluate("e => getComputedStyle(e).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent")
    _shot(page, tmp_path, f"report-{case}-{lang}")
