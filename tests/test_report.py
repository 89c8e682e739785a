"""The report stage on real rendered output: line one, tables, escaping, zh, mermaid, details,
the PR-comment limit, HTML well-formedness and offline-ness, template override, errors."""
from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser

import comparison_fixtures as fx
import msgspec
import pytest

from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.errors import UsageError
from profopt_ci.report import icons
from profopt_ci.report.format import md_inline, num, pct
from profopt_ci.report.render import headline, load_comparison, render, shrink
from profopt_ci.words import i18n

LIMIT = 65000
HINT = "the job summary and the `profopt-report` artifact"
LIGHT = [name for name in fx.ALL if name != "many"]


@pytest.fixture(scope="module")
def many() -> dict:
    return fx.many()


def md(c: dict, lang: str = "en", **kw) -> str:
    return render(c, "md", lang, **kw)


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The cells of the table whose header line starts with `header_start` (pipes split unless escaped)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header_start))
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", ln)[1:-1]])
    return rows


def fences_balanced(text: str) -> bool:
    fence = None
    for ln in text.splitlines():
        m = re.match(r"^(`{3,})", ln)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and ln.strip() == fence:
            fence = None
    return fence is None


def outside_code(text: str) -> str:
    return re.sub(r"^(`{3,}).*?^\1$", "", text, flags=re.S | re.M)


# ---- each fixture, snapshot-style ----------------------------------------------------------------

def test_keep_line_one_table_constraints_bottleneck():
    text = md(fx.keep())
    lines = text.splitlines()
    assert lines[0] == ("✅ keep — train-step 13.0% faster (99% CI 11.2–14.8%), memory unchanged, "
                        "loss within 1%, output\\_digest identical")
    rows = table_rows(text, "| metric |")
    assert rows[0] == ["metric", "base median", "head median", "change (estimate)", "99% CI", "verdict"]
    assert rows[2] == ["step time (ms)", "14.3", "12.5", "−13.0%", "−14.8% … −11.2%", "🟢 improved"]
    assert rows[3][0] == "throughput (samples/s)" and rows[3][5] == "🟢 improved"
    # memory is judged on medians against its tolerance: the row shows it where a CI would be
    assert rows[4] == ["peak memory (MB)", "210", "211", "+0.4% (+0.900 MB)", "tolerance ±10.5 MB", "⚪ unchanged"]
    cons = table_rows(text, "| constraint |")
    where = "(compared at steps 1–5)"
    assert cons[2] == ["loss rel\\_tol 0.01", "2.301", "2.305", f"🟢 holds — largest \\|Δ\\| 0.174% ≤ 1%, at step 1 {where}"]
    assert cons[3] == ["output\\_digest equal", "9f1c2e", "9f1c2e", f"🟢 holds — identical at every step {where}"]
    assert "- **Bottleneck:** data loading / IO" in lines
    assert "- **Evidence:** data loading 9% of the step (1.12 ms of 12.4 ms) &gt; 5%" in lines
    assert lines[lines.index("- **Bottleneck:** data loading / IO") + 2].startswith("- **Next action:** DataLoader(")
    assert "Changed besides code" not in text


def test_reject_with_broken_constraint_first_and_unchanged_grouped():
    text = md(fx.reject_constraint())
    broken = "\\|Δ\\| 4.82% &gt; 1% at step 1, first beyond at step 1 (compared at steps 1–5)"
    assert text.splitlines()[0] == f"❌ reject — train-step: loss constraint broken ({broken})"
    assert text.index("### ❌ train-step — reject") < text.index("### ⚪ Unchanged (1)") < text.index("#### eval-step")
    cons = table_rows(text, "| constraint |")
    assert cons[2] == ["loss rel\\_tol 0.01", "2.301", "2.412", f"🔴 broken — {broken}"]


def test_trade_off_names_gain_loss_and_what_changed_besides_code():
    text = md(fx.trade_off())
    lines = text.splitlines()
    assert lines[0] == "⚖️ trade-off — train-step 18.7% faster (99% CI 17.3–20.3%) but peak memory +31.3%"
    assert "- ℹ️ not only the code differs between base and head: env, params (see differences)" in lines
    assert "**⚠️ Changed besides code:** env OMP\\_NUM\\_THREADS: 1 → 2" in lines
    assert "**⚠️ Changed besides code:** params batch\\_size: 64 → 128" in lines
    assert "| ⚠️ **env OMP\\_NUM\\_THREADS** | 1 | 2 |" in lines
    assert "| ref | main | HEAD |" in lines  # ref and commit differ by design: not flagged
    assert table_rows(text, "| metric |")[4][5] == "🔴 regressed"
    # the head's step is limited by its data loading; the 66 MB more it holds is the change's cost
    assert "- **Bottleneck:** data loading / IO" in lines
    assert "- **Cost:** peak memory +65.9 MB (+31.3%, 210.4 → 276.3 MB)" in lines


def test_failed_names_side_and_cause_with_error_tail():
    text = md(fx.failed())
    assert text.splitlines()[0] == ("💥 failed — head failed on train-step: RuntimeError: mat1 and mat2 shapes "
                                    "cannot be multiplied (64x128 and 256x10)")
    assert "**💥 head failed**" in text
    block = re.search(r"```\n(.*?)\n```", text, re.S).group(1)
    assert block.startswith("worker stderr:") and block.endswith("(64x128 and 256x10)")
    assert text.index("### 💥 train-step") < text.index("#### eval-step")


def test_inconclusive_and_unstable_verdicts():
    text = md(fx.inconclusive())
    assert text.splitlines()[0] == ("❔ inconclusive — train-step step time unclear after 60 rounds "
                                    "(99% CI −4.2% to +3.2%); 1 more benchmark")
    assert "| step time (ms) | 14.1 | 14.1 | −0.5% | −4.2% … +3.2% | 🟡 inconclusive |" in text
    assert re.search(r"^\| step time \(ms\) \|.*\| 🟠 unstable \|$", text, re.M)
    assert "paired, 60 rounds" in text.splitlines()[2]


def test_the_header_gives_the_range_of_rounds_the_benchmarks_ran():
    """Each benchmark stops at its own look: the header said the largest ("paired, 28 rounds") when
    most ran 12 (issue 28)."""
    c = fx.no_change()
    for b, n in zip(c["benchmarks"], (12, 28, 12), strict=True):
        b["rounds"] = n
    c["rounds"] = 28
    assert " · paired, 12–28 rounds · " in md(c).splitlines()[2]
    assert "配对，12–28 轮" in render(c, "md", "zh")
    assert "paired, 12–28 rounds" in render(c, "html")
    failed = fx.failed()  # a benchmark that failed before any round does not widen the range
    assert " · paired, 20 rounds · " in md(failed).splitlines()[2]


def test_no_change_and_unpaired_notes():
    assert md(fx.no_change()).splitlines()[0] == "➖ no-change — no change beyond ±3% in 3 benchmarks"
    text = md(fx.unpaired())
    assert "- ⚠️ Unpaired comparison of two stored results" in text
    assert "- ℹ️ pairing was impossible: the two results were measured separately" in text
    assert " · unpaired · " in text.splitlines()[2]
    assert "paired, 20 rounds" not in text


def test_bare_comparison_has_no_optional_sections():
    text = md(fx.bare())
    assert text.splitlines()[0].startswith("✅ keep — tiny 18.2% faster (99% CI 16.5–19.9%)")
    assert table_rows(text, "| metric |")[2][1:3] == ["0.00123", "0.00102"]
    assert "- **Bottleneck:** not analysed" in text  # the note is always there, saying why it is empty
    for absent in ("Phase breakdown", "Hot-op diff", "Changed besides code", "| constraint |", "Goal:"):
        assert absent not in text
    assert "<summary>Environments</summary>" in text


# ---- escaping of untrusted content --------------------------------------------------------------

def test_markdown_escapes_hostile_names_everywhere():
    text = md(fx.hostile())
    assert "a\\|b&lt;script&gt;@&#8203;team" in text.splitlines()[0]
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert not re.search(r"@(team|here|org|ops)", text.replace("@&#8203;", ""))
    assert "[x](" not in text and "\\[x\\](javascript" in text
    code_free = outside_code(text)
    assert code_free.count("<details>") == code_free.count("</details>") == 4
    assert "&lt;/details&gt;" in text
    widths = {"| metric |": 6, "| constraint |": 4, "| op |": 4, "| benchmark |": 9}
    for header, width in widths.items():  # no escaped pipe splits a cell
        assert {len(r) for r in table_rows(text, header)} == {width}, header
    assert "| aten::&lt;img src=x&gt;\\|@&#8203;ops |" in text
    title = re.search(r'^    title "(.*)"$', text, re.M).group(1)
    assert '"' not in title and "<" not in title


def test_code_block_cannot_be_closed_by_backticks_or_fake_markers():
    text = md(fx.huge_error_tail())
    assert fences_balanced(text)
    assert "````" in text  # longer fence than the ``` inside the tail
    assert "<!-- profopt:end noise -->" not in re.sub(r"^<!-- profopt:end noise -->$", "", text, flags=re.M)


# ---- Chinese --------------------------------------------------------------------------------------

def test_zh_report_uses_tutorial_headers_and_verdict_words():
    text = md(fx.keep(), "zh")
    lines = text.splitlines()
    assert lines[0] == ("✅ 保留 — train-step 快 13.0%（99% 置信区间 11.2–14.8%），内存无变化，"
                        "loss 在 1% 以内，output\\_digest 一致")
    assert table_rows(text, "| 指标 |")[0] == ["指标", "基线中位数", "新版中位数", "变化（估计）", "99% 置信区间", "判断"]
    assert "| 单步时间 (ms) | 14.3 | 12.5 | −13.0% | −14.8% … −11.2% | 🟢 改善 |" in lines
    assert "| 峰值内存 (MB) | 210 | 211 | +0.4% (+0.900 MB) | 容差 ±10.5 MB | ⚪ 无变化 |" in lines
    assert "- **瓶颈判断：** 数据加载 / IO" in lines
    for summary in ("运行环境", "阶段分解", "热点算子对比", "轮次与噪声"):
        assert f"<summary>{summary}</summary>" in text
    for english in ("improved", "unchanged", "Bottleneck", "Next action", "Environments"):
        assert english not in text


@pytest.mark.parametrize("name", ["reject_constraint", "trade_off", "failed", "inconclusive", "no_change"])
def test_zh_decisions_and_verdicts(name):
    text = md(fx.ALL[name](), "zh")
    word = {"reject_constraint": "❌ 拒绝", "trade_off": "⚖️ 权衡", "failed": "💥 失败",
            "inconclusive": "❔ 不确定", "no_change": "➖ 无变化"}[name]
    assert text.startswith(word + " — ")
    rows = [r for r in text.splitlines() if r.startswith(("| 单步时间", "| 吞吐量", "| 峰值内存"))]
    # each metric row's verdict, benchmarks in the report's order (step time, throughput, peak memory)
    same = ["⚪ 无变化"] * 3
    expected = {"reject_constraint": ["🟢 改善", "🟢 改善", "⚪ 无变化", *same], "trade_off": ["🟢 改善", "🟢 改善", "🔴 退化"],
                "failed": same, "inconclusive": ["🟡 不确定", "🟡 不确定", "⚪ 无变化", "🟠 不稳定", "🟠 不稳定", "⚪ 无变化"],
                "no_change": same * 3}[name]
    assert [row.split("|")[-2].strip() for row in rows] == expected


# ---- mermaid and details --------------------------------------------------------------------------

def test_mermaid_xychart_is_well_shaped(many):
    text = md(many)
    block = re.search(r"^```mermaid\n(.*?)\n```$", text, re.S | re.M).group(1).splitlines()
    assert block[0] == "xychart-beta"
    assert re.fullmatch(r'    title "[^"]+"', block[1])
    labels = re.fullmatch(r"    x-axis \[(.*)\]", block[2]).group(1)
    labels = re.findall(r'"([^"]*)"', labels)
    y_max = int(re.fullmatch(r'    y-axis "[^"]+" 0 --> (\d+)', block[3]).group(1))
    bars = [float(x) for x in re.fullmatch(r"    bar \[(.*)\]", block[4]).group(1).split(", ")]
    line = [float(x) for x in re.fullmatch(r"    line \[(.*)\]", block[5]).group(1).split(", ")]
    assert len(labels) == len(bars) == len(line) == 20
    assert set(bars) == {100.0} and max(line) < y_max
    assert "suite-00/bench-005" in labels and 110.7 in line  # the regression is charted


def test_single_benchmark_chart_plots_its_metrics():
    block = re.search(r"```mermaid\n(.*?)\n```", md(fx.keep()), re.S).group(1)
    assert 'x-axis ["step time", "throughput", "peak memory"]' in block
    # 100 + the change column (the verdict's estimate), then its CI low and high
    assert "line [87, 115, 100.4]\n    line [85.2, 112.6, 100.4]\n    line [88.8, 117.4, 100.4]" in block


def test_details_sections_present_and_closed():
    text = md(fx.keep())
    summaries = re.findall(r"<details><summary>(.*?)</summary>", text)
    assert summaries == ["Environments", "Phase breakdown", "Hot-op diff", "Rounds and noise"]
    assert text.count("<details>") == text.count("</details>") == 4
    assert re.search(r"<summary>Hot-op diff</summary>\n\n\*\*train-step\*\*\n\nself ms per profiled step:\n\n\| op \|", text)
    noise = table_rows(text, "| benchmark |")
    assert noise[2][:3] == ["train-step", "20", "0"] and noise[2][7:] == ["1.9e-06", "1.9e-06"]  # BH of one: p


# ---- the PR-comment limit -------------------------------------------------------------------------

def test_500_benchmarks_fit_with_a_note_of_what_was_dropped(many):
    full = md(many, max_chars=None)
    assert len(full) > 4 * LIMIT
    text = md(many, full_report_hint=HINT)
    assert len(text) <= LIMIT
    assert text.splitlines()[0] == md_inline(headline(many))
    assert text.rstrip().endswith(
        "✂️ Shortened to fit a PR comment; left out: rounds and noise, hot-op diff, phase breakdown, environments, "
        f"tables of unchanged benchmarks. Full report: {HINT}")
    assert text.count("### ❌ ") == 6 and text.count("### ✅ ") == 9 and text.count("### ❔ ") == 4
    assert "#### " not in text and "<details>" not in text
    unchanged = text.split("### ⚪ Unchanged (481)\n\n")[1].split("\n")[0].split(" · ")
    assert len(unchanged) == 481 and unchanged[-1] == "suite-09/bench-499"
    assert "```mermaid" in text


def test_huge_error_tails_are_capped_and_named():
    c = fx.huge_error_tail()
    text = md(c, full_report_hint=HINT)
    assert len(text) <= LIMIT
    capped = re.findall(r"^\*\*💥 (base|head) failed\*\* \(last ([\d,]+) of 200,315 characters\)$", text, re.M)
    assert len(capped) == 30 and {side for side, _ in capped} == {"base", "head"}
    assert text.count("RuntimeError: mat1 and mat2") >= 31  # every tail keeps its last line
    assert fences_balanced(text)


def test_too_many_failures_are_cut_at_a_benchmark_with_a_note():
    text = md(fx.huge_error_tail(n_failed=150), full_report_hint=HINT)
    assert len(text) <= LIMIT
    assert fences_balanced(text)
    code_free = outside_code(text)
    assert code_free.count("<details>") == code_free.count("</details>")
    note = text.rstrip().splitlines()[-1]
    assert re.fullmatch(r"✂️ Shortened to fit a PR comment; left out: rounds and noise, hot-op diff, phase "
                        rf"breakdown, environments, chart, the last \d+ benchmark sections\. Full report: {re.escape(HINT)}", note)
    assert text.splitlines()[0].endswith("; 149 more benchmarks")


def test_shrink_is_a_no_op_under_the_limit_and_works_again_on_its_output(many):
    small = md(fx.keep())
    assert shrink(small, LIMIT) == small
    text = md(many)
    tighter = shrink(text, 20000, hint=HINT)
    assert len(tighter) <= 20000 and tighter.splitlines()[0] == text.splitlines()[0]
    assert "| metric |" in tighter


def test_shrink_without_markers_drops_details_last_first_then_cuts():
    body = "line one stays\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\n"
    text = body + "<details><summary>first</summary>\n\n" + "x" * 300 + "\n</details>\n\n" \
        + "<details><summary>second</summary>\n\n" + "y" * 300 + "\n</details>\n"
    out = shrink(text, 500)
    assert out.startswith(body) and "x" * 300 in out and "yyy" not in out
    assert out.rstrip().endswith("left out: second.")
    cut = shrink(body + "### b\n" + "z" * 2000, 300)
    assert len(cut) <= 300 and cut.startswith("line one stays") and "| 1 | 2 |" in cut


def test_zh_shrink_note_is_chinese(many):
    text = md(many, "zh", full_report_hint="作业摘要")
    assert len(text) <= LIMIT
    assert text.rstrip().splitlines()[-1].startswith("✂️ 为适应 PR 评论长度已精简，省略了：轮次与噪声，")
    assert text.rstrip().endswith("完整报告：作业摘要")


# ---- every fixture, both languages ----------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", LIGHT)
def test_every_fixture_renders_sane_markdown(name, lang):
    c = fx.ALL[name]()
    text = md(c, lang)
    assert len(text) <= LIMIT
    assert text.splitlines()[0] == md_inline(headline(c, lang))
    assert "None" not in text and "{" not in text.splitlines()[0]
    assert fences_balanced(text)
    code_free = outside_code(text)
    assert code_free.count("<details>") == code_free.count("</details>")
    assert "<!-- profopt:lang " + lang + " -->" in text


# ---- HTML -----------------------------------------------------------------------------------------

class Checker(HTMLParser):
    VOID = {"meta", "br", "img", "hr", "input", "link"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.refs: list[str] = []
        self.tags: Counter = Counter()
        self.text: list[str] = []

    def _attrs(self, tag: str, attrs: list) -> None:
        self.tags[tag] += 1
        self.refs += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href") or "url(" in (v or "")]

    def handle_starttag(self, tag, attrs):
        self._attrs(tag, attrs)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._attrs(tag, attrs)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Checker:
    checker = Checker()
    checker.feed(html)
    checker.close()
    return checker


@pytest.mark.parametrize("name", LIGHT)
def test_html_is_well_formed_self_contained_and_escaped(name):
    c = fx.ALL[name]()
    html = render(c, "html")
    doc = parse(html)
    assert not doc.errors and doc.stack == []
    assert doc.refs == [] and "http" not in html and "<script" not in html and "<link" not in html
    assert doc.tags["style"] == 1 and doc.tags["table"] >= 1
    assert icons.without_emoji(headline(c)) in "".join(doc.text)   # the page draws its symbol (report/icons.py)


def test_html_plots_samples_and_delta_and_escapes():
    doc = parse(render(fx.keep(), "html"))
    assert doc.tags["svg"] == 2 and doc.tags["circle"] == 40  # 20 rounds a side, no overview for one
    hostile = render(fx.hostile(), "html")
    assert "a|b&lt;script&gt;@team" in hostile and "aten::&lt;img src=x&gt;" in hostile
    assert "<img" not in hostile
    zh = render(fx.keep(), "html", "zh")
    assert all(f"<th>{h}</th>" in zh for h in ("指标", "变化", "判断"))


def test_html_overview_for_many_benchmarks(many):
    html = render(many, "html")
    doc = parse(html)
    assert not doc.errors
    overview = re.search(r"<figure><svg.*?</svg>", html, re.S).group(0)
    assert overview.count("<circle") == 60



@pytest.mark.parametrize("lang", ["en", "zh"])
def test_streamed_html_file_is_the_rendered_page(many, tmp_path, lang):
    """`report --format html --out` streams the page (render.write_html): the same text as render()."""
    from profopt_ci.report.render import write_html

    for i, c in enumerate((many, fx.hostile(), fx.keep())):
        out = tmp_path / f"r{i}.html"
        write_html(c, out, lang)
        assert out.read_text(encoding="utf-8") == render(c, "html", lang)

# ---- json, template override, errors --------------------------------------------------------------

def test_json_is_the_comparison(tmp_path):
    c = fx.trade_off()
    text = render(c, "json")
    assert json.loads(text) == c and text.startswith('{\n  "schema"')
    path = tmp_path / "comparison.json"
    path.write_text(text, encoding="utf-8")
    read = load_comparison(path)
    assert msgspec.to_builtins(read) == c and read == c  # read, its metrics are Structs that equal their dicts


def test_template_override_uses_package_partials_and_escapes(tmp_path):
    template = tmp_path / "mine.md.j2"
    template.write_text("CUSTOM {{ v.headline }}\n{% set b = v.benchmarks[0] %}{% set heading = 3 %}"
                        "{% include '_benchmark.md.j2' %}", encoding="utf-8")
    text = md(fx.hostile(), template=template)
    assert text.startswith("CUSTOM ❌ reject — a\\|b&lt;script&gt;@&#8203;team")
    assert "| step time (ms) | 10.1 | 11.6 |" in text and "<script" not in text
    page = tmp_path / "mine.html.j2"
    page.write_text("<p>{{ v.headline }}</p>", encoding="utf-8")
    assert render(fx.hostile(), "html", template=page).startswith("<p>❌ reject — a|b&lt;script&gt;")


def test_usage_errors(tmp_path):
    c = fx.keep()
    with pytest.raises(UsageError, match="comparison@1"):
        render({"schema": "profopt/results@1"})
    with pytest.raises(UsageError, match="--format"):
        render(c, "pdf")
    with pytest.raises(UsageError, match="--lang"):
        render(c, lang="fr")
    with pytest.raises(UsageError, match="no such file"):
        render(c, template=tmp_path / "missing.j2")
    broken = tmp_path / "broken.md.j2"
    broken.write_text("{% if %}", encoding="utf-8")
    with pytest.raises(UsageError, match="line 1"):
        render(c, template=broken)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(UsageError, match=r"bad.json:1:2: not valid JSON"):
        load_comparison(bad)
    with pytest.raises(UsageError, match="no such file"):
        load_comparison(tmp_path / "nope.json")


# ---- small parts ----------------------------------------------------------------------------------

def test_number_formatting():
    assert [num(14.2), num(0.001234), num(1234.5), num(-3.456), num(None), num(0)] == \
        ["14.2", "0.00123", "1,234", "−3.46", "—", "0"]
    assert [pct(-12.44), pct(4.06), pct(0.04), pct(-0.04), pct(None)] == ["−12.4%", "+4.1%", "0.0%", "0.0%", "—"]


def test_unknown_words_are_shown_as_they_are():
    c = fx.keep()
    c["decision"] = c["benchmarks"][0]["decision"] = "shelved"
    c["benchmarks"][0]["metrics"]["step_time_ms"]["verdict"] = "sideways"
    text = md(c, "zh")
    assert text.startswith("❔ shelved — ")
    assert "### ❔ train-step — shelved" in text and "| 🟡 sideways |" in text


def test_catalogs_have_the_same_keys():
    assert set(i18n.EN) == set(i18n.ZH)


def test_every_bottleneck_class_has_a_name_in_both_languages():
    from profopt_ci.analyze.rules import CLASSES
    from profopt_ci.report.bench_view import _class_said
    from profopt_ci.words import i18n

    for cls in CLASSES:
        key = cls.replace("-", "_").replace(" ", "_").replace("/", "_")
        assert f"class.{key}" in i18n.EN and f"class.{key}" in i18n.ZH, cls
        assert not _class_said("zh", cls).isascii(), cls
    assert _class_said("zh", "a class of another version") == "a class of another version"


def test_goal_line_says_whether_it_was_met():
    from comparison_fixtures import keep

    c = keep()
    b = c["benchmarks"][0]
    b["goal"] = {"metric": "step_time_ms", "direction": "decrease", "target_pct": 10.0,
                 "achieved_pct": 12.4, "met": True}
    assert "— met (12.4%)" in render(c, "md")
    b["goal"].update(achieved_pct=4.0, met=False)
    assert "— not met (4.0%)" in render(c, "md")
    assert "未达成（4.0%）" in render(c, "md", "zh")


def test_the_terminal_summary_names_the_benchmark_the_headline_names():
    """Seen on attrs' astuple PR: stderr said "astuple_complicated 37.0% faster; 3 more", the report
    "astuple_atomic 74.4% faster; 1 more". Both now name the biggest win and count alike."""
    from profopt_ci.analyze.decide import summary_sentence

    small = fx.benchmark("small-win", 10.0, 6.3, seed=1)
    big = fx.benchmark("big-win", 10.0, 2.56, seed=2)
    flat = fx.benchmark("flat", 1.0, 1.0, cv=0.01, seed=3)
    c = fx.comparison([small, big, flat], "keep")
    said = summary_sentence(c["benchmarks"])
    assert said.startswith("big-win 74.3% faster") and said.endswith("; 1 more benchmark(s)")
    assert "big-win 74.3% faster" in headline(c).replace("\\", "") and "1 more benchmark" in headline(c)


def test_a_bottleneck_class_that_is_not_text_is_shown_as_it_is():
    """A file's bottleneck note is open data: a class that is a number (the hostile campaign's find)
    renders as it is in every format and language instead of raising."""
    c = fx.hostile()
    c["benchmarks"][0]["bottleneck"] = {**c["benchmarks"][0]["bottleneck"], "class": 7}
    for lang in ("en", "zh"):
        assert "7" in render(c, "md", lang)
        assert render(c, "html", lang)


# ---- the bottleneck note's side and cost, the hot-op diff's noise, profile paths (issue 40 §3) ----

def _demo_like() -> dict:
    """The trade-off fixture with the demo's profiles: a pure-Python loop (base) and its numpy rewrite
    (head), profiled in chunks, their files written under a runner's own /tmp."""
    from profopt_ci.analyze.bottleneck import annotate

    loop = {"kind": "cprofile", "step_time_ms": 13.0, "chunks": 5,
            "trace_path": "/tmp/runner-x/profopt-profiles/train-step-base.pstats",
            "ops": [{"name": "neighbors.py(count_close_pairs)", "self_ms": 26.4, "self_ms_range": [25.9, 27.0],
                     "category": "python"},
                    {"name": "timing.py(record)", "self_ms": 0.05, "self_ms_range": [0.002, 0.2], "category": "python"}],
            "counters": {"python_share": 0.99, "py_lines_per_ms": 12000.0}}
    numpy = {"kind": "cprofile", "step_time_ms": 2.3, "chunks": 5,
             "trace_path": "/tmp/runner-x/profopt-profiles/train-step-head.pstats",
             "ops": [{"name": "<method 'reduce' of 'numpy.ufunc' objects>", "self_ms": 1.28,
                      "self_ms_range": [1.2, 1.4], "category": "builtin"},
                     {"name": "neighbors.py(count_close_pairs)", "self_ms": 1.05, "self_ms_range": [1.0, 1.1],
                      "category": "python"},
                     {"name": "timing.py(record)", "self_ms": 0.004, "self_ms_range": [0.003, 0.005], "category": "python"}],
             "counters": {"python_share": 0.45, "py_lines_per_ms": 4.0}}
    c = fx.trade_off()
    # a decided entry is the frozen Entry annotate takes, as the pipeline's are; back as its JSON reads
    c["benchmarks"][0] = msgspec.to_builtins(annotate(comparison_doc.entry(c["benchmarks"][0]),
                                                      {"base": loop, "head": numpy}))
    return c


def test_the_note_says_the_bases_bottleneck_and_the_memory_cost_on_a_line_of_its_own():
    c = _demo_like()
    for fmt in ("md", "html", "text"):
        en = " ".join(render(c, fmt, "en", max_chars=None).split())  # the terminal's lines are wrapped
        assert "interpreter overhead in Python code, in the base (the head no longer shows it)" in en, fmt
        assert "peak memory +65.9 MB (+31.3%, 210.4 → 276.3 MB)" in en, fmt
        assert "PYTORCH" not in en and "torch.compile" not in en, fmt
        zh = "".join(render(c, fmt, "zh", max_chars=None).split())
        assert "Python代码的解释器开销，在基线中（新版已不再如此）" in zh and "峰值内存+65.9MB" in zh, fmt
    lines = md(c).splitlines()
    assert "- **Cost:** peak memory +65.9 MB (+31.3%, 210.4 → 276.3 MB)" in lines
    assert next(ln for ln in lines if ln.startswith("- **Next action:**")).startswith(
        "- **Next action:** the change removed what limited the base; the head has no single bottleneck left")


def test_the_hot_op_diff_marks_noise_and_lists_it_last():
    c = _demo_like()
    rows = table_rows(md(c, max_chars=None), "| op |")[2:]
    assert [r[0] for r in rows][:2] == ["neighbors.py(count\\_close\\_pairs)", "&lt;method 'reduce' of 'numpy.ufunc' objects&gt;"]
    assert rows[-1][0] == "timing.py(record)" and rows[-1][3].startswith("≈ −")  # its spreads overlap
    assert not any(r[3].startswith("≈") for r in rows[:-1])
    text = md(c, max_chars=None)
    assert ("Δ weighed against the profile's own noise (each op's least and most self ms per step over 5 base "
            "and 5 head profiled chunks, one run a side): ≈ marks a Δ within it, listed last") in text
    assert "≈ 表示 Δ 在噪声之内" in md(c, "zh", max_chars=None)


def test_no_report_carries_the_runners_own_paths():
    """A PR comment's reader has none of the runner's disk: the profile file by its folder and name."""
    c = _demo_like()
    for fmt in ("md", "html"):
        out = render(c, fmt, "en", max_chars=None)
        assert "/tmp/" not in out and "runner-x" not in out, fmt
        assert "trace: profopt-profiles/train-step-base.pstats" in out, fmt
    from profopt_ci.report.details import shown_path

    assert shown_path("profiles/train-step-head.json") == "profiles/train-step-head.json"  # relative: as written
    assert shown_path("/x.pstats") == "x.pstats"


def test_a_hostile_cost_or_noise_mark_renders_as_data():
    c = _demo_like()
    b = c["benchmarks"][0]
    b["bottleneck"] = {**b["bottleneck"], "cost_msgs": 7, "cost": 7, "side": ["base"]}
    b["profile"] = {**b["profile"], "hot_diff": [{"name": "x", "delta_ms": 1.0, "noise": "yes"}]}
    for fmt in ("md", "html", "text"):
        out = render(c, fmt, "en", max_chars=None)
        assert "Cost" not in out and "in the base" not in out, fmt
