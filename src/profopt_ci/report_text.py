"""The report for a terminal: plain text in, plain text out, from the same view as Markdown/HTML.

    text(comparison, "en")   # what `profopt compare` / `demo` / `report` print on a TTY

No Markdown escapes, HTML entities, comment markers or mermaid: tables are aligned by display width
(CJK and emoji take two columns), error tails are indented, and the collapsible details of the
Markdown report (environments, phases, hot ops, noise) are left to the files. Untrusted text is
printed as it is apart from control characters, which are dropped so a name cannot move the cursor.
Linear in the number of benchmarks.
"""
from __future__ import annotations

import re
import unicodedata

from .i18n import t
from .report_view import build_view

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
UNCHANGED_MAX = 30


def width(text: str) -> int:
    """Columns `text` takes on a terminal: wide East Asian characters and emoji count two."""
    cols = 0
    for ch in text:
        if unicodedata.combining(ch) or ch in "\ufe0f\u200b\u2060":
            continue
        cols += 2 if unicodedata.east_asian_width(ch) in "WF" or ord(ch) >= 0x1F300 else 1
    return cols


def _clean(value: object) -> str:
    return _CONTROL.sub("", str(value)).replace("\r", " ")


def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    """Rows aligned in columns two spaces apart; `right` columns are right-aligned (numbers)."""
    cells = [[_clean(c) for c in r] for r in [header, *rows]]
    widths = [max(width(r[i]) for r in cells) for i in range(len(header))]

    def line(r: list[str]) -> str:
        out = []
        for i, c in enumerate(r):
            pad = " " * (widths[i] - width(c))
            out.append(pad + c if i in right else c + pad)
        return "  ".join(out).rstrip()

    rule = "  ".join("─" * w for w in widths)
    return [line(cells[0]), rule, *(line(r) for r in cells[1:])]


def text(comparison: dict, lang: str = "en") -> str:
    """The comparison as terminal text (no trailing detail sections)."""
    v = build_view(comparison, lang, error_budget=8000)
    out = [_clean(v["headline"]), _clean(v["meta"]), ""]
    notes = ([t(lang, "unpaired_note")] if v["unpaired"] else []) + v["notes"]
    out += [f"  • {_clean(n)}" for n in notes]
    if v["differences"]:
        out.append(f"  ⚠ {t(lang, 'differences')}{t(lang, 'colon')} " + " · ".join(map(_clean, v["differences"])))
    if notes or v["differences"]:
        out.append("")
    for b in v["benchmarks"]:
        out += _bench(b, v, lang)
    if v["benchmarks"]:
        out += [_clean(v["legend"]), ""]
    if v["unchanged"]:
        out.append(f"⚪ {t(lang, 'unchanged_group', n=len(v['unchanged']))}")
        for b in v["unchanged"][:UNCHANGED_MAX]:
            step = next((r for r in b["rows"] if r["key"] == "step_time_ms"), None)
            out.append(f"  {_clean(b['name'])}" + (f"  {step['change']}  ({step['ci']})" if step else ""))
        if len(v["unchanged"]) > UNCHANGED_MAX:
            out.append(f"  … {t(lang, 'hl.more', n=len(v['unchanged']) - UNCHANGED_MAX)}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _bench(b: dict, v: dict, lang: str) -> list[str]:
    colon = t(lang, "colon")
    out = [f"{b['emoji']} {_clean(b['name'])} — {b['word']}"]
    if b["reason"]:
        out.append(f"  {_clean(b['reason'])}")
    if b["error"]:
        e = b["error"]
        out.append(f"  💥 {e['title']}" + (f" ({e['capped']})" if e["capped"] else ""))
        out += [f"    │ {_clean(ln)}" for ln in e["tail"].splitlines()]
    if b["rows"]:
        header = [t(lang, k) for k in ("col.metric", "col.base_median", "col.head_median", "col.estimate")]
        header += [b["ci_header"], t(lang, "col.verdict")]
        rows = [[r["label"], r["base"], r["head"], r["change"], r["ci"], f"{r['symbol']} {r['word']}"]
                for r in b["rows"]]
        out += [""] + ["  " + ln for ln in table(header, rows, right={1, 2, 3})]
    if b["goal"]:
        out += ["", f"  {t(lang, 'goal')}{colon} {_clean(b['goal'])}"]
    if b["constraints"]:
        header = [t(lang, k) for k in ("col.constraint", "col.base", "col.head", "col.result")]
        rows = [[r["label"], r["base"], r["head"], f"{r['symbol']} {r['word']}" + (f" — {r['detail']}" if r["detail"] else "")]
                for r in b["constraints"]]
        out += [""] + ["  " + ln for ln in table(header, rows, right={1, 2})]
    bn = b["bottleneck"]
    if bn:
        out += ["", f"  {t(lang, 'bottleneck')}{colon} {_clean(bn['cls'])}"]
        if bn["evidence"]:
            out.append(f"  {t(lang, 'evidence')}{colon} " + t(lang, "sep2").join(map(_clean, bn["evidence"])))
        if bn["next_action"]:
            out.append(f"  {t(lang, 'next_action')}{colon} {_clean(bn['next_action'])}")
    if b["differences"]:
        out.append(f"  ⚠ {t(lang, 'differences')}{colon} " + " · ".join(map(_clean, b["differences"])))
    return out + [""]
