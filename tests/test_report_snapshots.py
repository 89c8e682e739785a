"""What a reviewer and a new user see, held in place: snapshots of the Markdown, HTML and terminal
renderings of representative comparisons, the report's numbers checked against the JSON, no
untranslated English in a zh render, no Markdown/HTML markup on the terminal, a responsive HTML.

Snapshots live in tests/snapshots/; after an intended change regenerate them with
`PROFOPT_UPDATE_SNAPSHOTS=1 pytest tests/test_report_snapshots.py` and review the diff.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import comparison_fixtures as fx
import pytest

from profopt_ci.analyze.decide import ordered_metrics, summary_sentence
from profopt_ci.report.render import render
from profopt_ci.report.svg import ticks
from profopt_ci.report.text import width
from profopt_ci.words.i18n import say

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("PROFOPT_UPDATE_SNAPSHOTS") == "1"
CASES = [("keep", "en"), ("reject_constraint", "en"), ("trade_off", "en"), ("inconclusive", "en"), ("aa", "en"),
         ("failed", "en"), ("keep", "zh"), ("trade_off", "zh"), ("inconclusive", "zh"), ("aa", "zh"), ("failed", "zh"),
         ("instructions", "en"), ("instructions", "zh")]
EXT = {"md": "md", "html": "html", "text": "txt"}


@pytest.mark.parametrize("fmt", list(EXT))
@pytest.mark.parametrize(("name", "lang"), CASES)
def test_snapshot(name, lang, fmt):
    text = render(fx.ALL[name](), fmt, lang, max_chars=65000 if fmt == "md" else None)
    path = SNAPSHOTS / f"{name}.{lang}.{EXT[fmt]}"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.skip(f"wrote {path.name}")
    assert path.is_file(), f"no snapshot {path.name}: run with PROFOPT_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} changed; regenerate if intended"


# ---- one story: the numbers a reader sees are the JSON's ------------------------------------------

def _number(cell: str) -> float:
    return float(cell.replace("−", "-").replace(",", "").replace("%", "").replace("+", "").split()[0])


def _metric_rows(md: str) -> list[list[str]]:
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| metric |"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split(" | ")])
    return rows


def _close(shown: float, value: float) -> bool:
    """`num` shows three significant figures (thousands whole): within half a unit of the last digit."""
    return abs(shown - value) <= max(abs(value) * 0.005, 0.0005)


@pytest.mark.parametrize("name", ["keep", "trade_off", "aa", "bare"])
def test_table_chart_and_headline_numbers_are_the_jsons(name):
    c = fx.ALL[name]()
    b = c["benchmarks"][0]
    md = render(c, "md")
    rows = _metric_rows(md)
    keys = ordered_metrics(b["metrics"])
    assert len(rows) == len(keys)
    for key, row in zip(keys, rows, strict=True):
        m = b["metrics"][key]
        assert _close(_number(row[1]), m["base"]) and _close(_number(row[2]), m["head"]), (key, row)
        assert _number(row[3]) == pytest.approx(round(m["delta_pct"], 1)), (key, row)  # the verdict's estimate
        if m["ci_low_pct"] is not None:
            low, high = (_number(x) for x in row[4].split(" … "))
            assert (low, high) == (round(m["ci_low_pct"], 1), round(m["ci_high_pct"], 1)), (key, row)
        else:
            assert row[4] == f"tolerance ±{m['tolerance_mb']:.3g} MB"
    chart = re.search(r"```mermaid\n(.*?)\n```", md, re.S).group(1)
    series = [[float(x) for x in ln.split("[")[1].rstrip("]").split(", ")] for ln in chart.splitlines()
              if ln.strip().startswith("line [")]
    assert series[0] == [round(100 + b["metrics"][k]["delta_pct"], 1) for k in keys]  # the change column
    if len(series) == 3:
        for k, lo, hi in zip(keys, series[1], series[2], strict=True):
            m = b["metrics"][k]
            if m["ci_low_pct"] is not None:
                assert (lo, hi) == (round(100 + m["ci_low_pct"], 1), round(100 + m["ci_high_pct"], 1))
    step = b["metrics"]["step_time_ms"]
    if step["verdict"] == "improved":
        lo, hi = sorted((abs(step["ci_low_pct"]), abs(step["ci_high_pct"])))
        assert f"{abs(step['delta_pct']):.1f}% faster (99% CI {lo:.1f}–{hi:.1f}%)" in md.splitlines()[0]
    # the terminal shows the same cells as the Markdown table
    text = render(c, "text", cols=1000)  # aligned, not stacked
    for row in rows:
        assert re.search(r"\s+".join(re.escape(cell.replace("\\", "")) for cell in row[1:5]), text), row


def test_one_ci_label_nominal_everywhere_exact_level_in_the_json():
    c = fx.keep()
    m = c["benchmarks"][0]["metrics"]["step_time_ms"]
    m["confidence"] = 0.99705  # what the last of several sequential looks really used
    m["verdict"] = "improved"
    entry = {**c["benchmarks"][0], "decision": "keep"}
    assert "(99% CI 11.2–14.8%)" in summary_sentence([entry])
    for fmt in ("md", "text", "html"):
        out = render(c, fmt)
        assert "99% CI" in out and "99.7" not in out and "99.705" not in out, fmt


def test_inconclusive_a_a_is_not_worded_as_a_speed_up():
    c = fx.aa()
    entry = c["benchmarks"][0]
    line = summary_sentence([entry])
    assert "faster" not in line and "slower" not in line
    assert line.startswith("word-lengths step time inconclusive (-0.6%, 99% CI -3.8…+2.9%)")
    for fmt in ("md", "text"):
        out = render(c, fmt).replace("\\", "")  # Markdown's escapes (max\\_rounds)
        assert "faster" not in out and "A/A" in out
        assert "not established at this noise" in out and "max_rounds" in out and "not met" not in out
        assert "no single bottleneck" in out and "no clear bottleneck" not in out


# ---- the terminal, the zh report, the HTML ----------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in fx.ALL if n != "many"])
def test_terminal_view_has_no_markup(name):
    c = fx.ALL[name]()
    out = render(c, "text")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out)
    for markup in ("\\_", "\\~", "\\|", "&lt;", "&amp;", "&#8203;"):  # Markdown/HTML escapes: never
        assert markup not in out, (name, markup)
    ours = "\n".join(ln for ln in out.splitlines() if not ln.startswith("    │"))  # error tails are the PR's
    untrusted = _data_strings(c) | {str(b.get("reason")) for b in c["benchmarks"]} | {say("en", n) for n in c.get("notes") or []}
    for b in c["benchmarks"]:
        untrusted |= {str(x) for x in ((b.get("bottleneck") or {}).get("evidence") or [])}
        untrusted.add(str((b.get("bottleneck") or {}).get("next_action")))
    for s in sorted(untrusted, key=len, reverse=True):
        ours = ours.replace(s, " ")
    for markup in ("<!--", "```", "xychart", "<details>", "<summary>", "**", "<sub>"):
        assert markup not in ours, (name, markup)


def test_terminal_tables_align_by_display_width():
    out = render(fx.keep(), "text", "zh", cols=200)  # wide enough for the aligned table
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("指标"))
    table = lines[start:start + 5]
    # the rule spans every column; the widest row ends where the rule ends, the others before it
    assert max(width(ln) for ln in table) == width(table[1]) and table[1].strip().startswith("─")
    col = [width(ln[:ln.index(cell)]) + width(cell) for ln, cell in zip(table[2:], ("14.3", "4,489", "210"), strict=True)]
    assert len(set(col)) == 1  # numbers are right-aligned in their column
    assert width("单步时间") == 8 and width("🟢 x") == 4


@pytest.mark.parametrize("name", ["keep", "trade_off", "failed", "hostile", "unpaired"])
def test_zh_terminal_view_fits_80_columns_and_loses_nothing(name):
    c = fx.ALL[name]()
    wide, narrow = render(c, "text", "zh", cols=1000), render(c, "text", "zh", cols=80)
    assert max(width(ln) for ln in narrow.splitlines()) <= 80
    assert max(width(ln) for ln in wide.splitlines()) > 80  # the fixture does need wrapping
    squash = lambda s: re.sub(r"[\s│·─]+", "", s)  # noqa: E731 — same characters, other breaks
    lines = wide.splitlines()  # a stacked table names its columns per value, so its header row goes
    table_free = [ln for i, ln in enumerate(lines) if "─" not in ln and "─" not in (lines[i + 1:i + 2] or [""])[0]]
    for cell in map(squash, re.findall(r"[^\s│]+", "\n".join(table_free))):  # every word and figure still shown
        assert cell in squash(narrow), cell
    if "指标" in wide:  # the metrics table, too wide at 80, became one block per row
        assert "基线中位数 " in narrow


def _data_strings(c: dict) -> set[str]:
    """What the PR controls or the machine reports: shown as it is in any language."""
    out = {c.get("hardware_label") or ""}
    for side in ("base", "head"):
        s = c.get(side) or {}
        out |= {str(s.get("ref")), str(s.get("commit"))}
        out |= {str(x) for kv in ((s.get("fingerprint") or {}), (s.get("env") or {})) for x in (*kv, *kv.values())}
    for d in c.get("differences") or []:
        out |= {str(d.get("key")), str(d.get("base")), str(d.get("head"))}
    for b in c.get("benchmarks") or []:
        out |= {b["name"], str(b.get("unit")), *b.get("metrics", {})}
        out |= {k for smp in (b.get("samples") or {}).get("base") or [] for k in smp.get("phases_ms") or {}}
        hottest = [e for e in (b.get("bottleneck") or {}).get("evidence") or [] if e.startswith("hottest: ")]
        out |= {e[len("hottest: "):] for e in hottest}  # op names inside the evidence
        out |= {str(x.get("metric")) for x in b.get("constraints") or []}
        out |= {str(x.get("base")) for x in b.get("constraints") or []}
        lines = str((b.get("error") or {}).get("message") or "").splitlines()
        out |= {*lines, *(ln.rstrip(": ") for ln in lines[:1])}  # its first line, as a reason quotes it
        for side in ("base", "head"):
            prof = (b.get("profile") or {}).get(side) or {}
            out |= {o["name"] for o in prof.get("ops") or []} | {str(prof.get("trace_path"))}
    return {s for s in out if s}


# Words a zh report keeps on purpose: units, acronyms, spec keys and flags, product names.
ZH_ALLOWED = {"CI", "MB", "ms", "CPU", "CUDA", "GEMM", "FLOP", "Python", "trace", "profopt", "max_rounds",
              "memory_tolerance", "max", "rounds", "SDPA", "AMP", "bf16", "TF32", "GPU", "flash", "attention",
              "autocast", "conv", "RSS", "peak_memory", "profile", "torch", "cprofile", "PYTORCH_CUDA_ALLOC_CONF",
              "expandable_segments", "True", "Mann", "Whitney", "DataLoader", "num_workers", "pin_memory",
              "persistent_workers", "prefetch_factor"}


@pytest.mark.parametrize("name", ["keep", "reject_constraint", "trade_off", "failed", "inconclusive", "aa",
                                  "no_change", "unpaired"])
def test_zh_render_has_no_untranslated_english(name):
    c = fx.ALL[name]()
    data = sorted(_data_strings(c), key=len, reverse=True)
    for fmt in ("md", "text"):
        out = render(c, fmt, "zh", cols=1000)  # unwrapped, so the data strings are whole
        out = re.sub(r"<!--.*?-->|</?(details|summary|sub)>|```mermaid\n.*?```|```.*?```", " ", out, flags=re.S)
        out = out.replace("\\", "").replace("@&#8203;", "@").replace("&lt;", "<").replace("&gt;", ">")
        for s in data:
            out = out.replace(s, " ")
        words = set(re.findall(r"[A-Za-z][A-Za-z_]{2,}", out)) - ZH_ALLOWED
        assert not words, (name, fmt, sorted(words))


def test_html_is_responsive_and_its_axes_have_ticks():
    html = render(fx.keep(), "html")
    svgs = re.findall(r"<svg[^>]*>", html)
    assert svgs and all("viewBox" in s and "width:100%" in s and " width=" not in s for s in svgs)
    assert "table{" in html and "overflow-x:auto" in html and "@media (max-width:900px)" in html
    strip = re.search(r"<svg.*?</svg>", html, re.S).group(0)
    assert len(re.findall(r'text-anchor="middle">[^<]+</text>', strip)) >= 3  # tick labels on the ms axis
    assert ticks(0.0, 10.0) == [0.0, 2.5, 5.0, 7.5, 10.0] and ticks(-12.5, 12.5)[0] >= -12.5
