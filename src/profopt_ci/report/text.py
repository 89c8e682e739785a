"""The report for a terminal: a comparison@1 dict in, plain text out, from the same view as Markdown/HTML.

    render(comparison, "text", "en")   # what `profopt compare` / `demo` / `report` print on a TTY

No Markdown escapes, HTML entities, comment markers or mermaid: tables are aligned by display width
(CJK and emoji take two columns), error tails are indented, and the collapsible details of the
Markdown report (environments, phases, hot ops, noise) are left to the files. Untrusted text is
printed as it is apart from control characters, which are dropped so a name cannot move the cursor.
Linear in the number of benchmarks.
"""
from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from profopt_ci.words.i18n import say

if TYPE_CHECKING:
    from profopt_ci.report.view import Page

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
UNCHANGED_MAX = 30
WIDTH = 80          # columns when the caller does not know the terminal's
_KEEP = "\x00"      # marks a line the final pass must not wrap (an aligned table row)
# CJK punctuation that must not start a line: it stays with the character before it.
_NO_START = set("，。、；：）」』！？》〉…%")


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


def _tokens(text: str) -> list[str]:
    """Break opportunities: a run of non-CJK non-space characters is one word, a wide character is
    one token (Chinese wraps between any two characters), spaces are their own tokens."""
    out: list[str] = []
    for ch in text:
        wide = width(ch) == 2
        if out and (ch in _NO_START or (not wide and not ch.isspace() and not out[-1].isspace()
                                        and width(out[-1][-1]) < 2)):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def wrap(line: str, cols: int) -> list[str]:
    """`line` in lines of at most `cols` display columns; continuation lines are indented past the
    line's own indent (and bullet). A word longer than a whole line is cut, never left to overflow."""
    if width(line) <= cols:
        return [line]
    body = line.lstrip(" ")
    lead = line[:len(line) - len(body)]
    bullet = next((b for b in ("• ", "⚠ ", "│ ") if body.startswith(b)), "")
    hang = lead + " " * width(bullet) if bullet != "│ " else lead + bullet
    room = max(10, cols - width(hang))
    out, cur = [], line[:0]
    for tok in _tokens(line):
        if cur and width(cur) + width(tok) > cols and cur.strip():
            out.append(cur.rstrip())
            cur = hang
            if tok.isspace():
                continue
        while width(tok) > room:  # a path or URL longer than a line
            cut = _fit(tok, cols - width(cur))
            out.append(cur + tok[:cut])
            tok, cur = tok[cut:], hang
        cur += tok
    if cur.strip():
        out.append(cur.rstrip())
    return out


def _fit(text: str, cols: int) -> int:
    n, used = 0, 0
    for ch in text:
        if used + width(ch) > max(cols, 1):
            break
        used, n = used + width(ch), n + 1
    return max(n, 1)


def _pack(pairs: list[str], cols: int) -> list[str]:
    """`header value` pairs on as few lines as fit, never split inside a pair that fits a line."""
    lines: list[str] = []
    for pair in pairs:
        if lines and width(lines[-1]) + 3 + width(pair) <= cols:
            lines[-1] += " · " + pair
        else:
            lines.append("  " + pair)
    return [ln if width(ln) > cols else _KEEP + ln for ln in lines]


def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset(),
          cols: int | None = None) -> list[str]:
    """Rows aligned in columns two spaces apart; `right` columns are right-aligned (numbers).
    When that is wider than `cols`, each row becomes a block: its first cell, then `header: value`
    pairs (the final pass wraps them), since clipping a cell would hide a figure."""
    cells = [[_clean(c) for c in r] for r in [header, *rows]]
    widths = [max(width(r[i]) for r in cells) for i in range(len(header))]
    if cols is not None and sum(widths) + 2 * (len(widths) - 1) > cols:
        return [ln for r in cells[1:] for ln in [r[0], *_pack([f"{h} {c}" for h, c in zip(cells[0][1:], r[1:],
                                                                                          strict=True)], cols)]]

    def line(r: list[str]) -> str:
        out = []
        for i, c in enumerate(r):
            pad = " " * (widths[i] - width(c))
            out.append(pad + c if i in right else c + pad)
        return "  ".join(out).rstrip()

    rule = "  ".join("─" * w for w in widths)
    return [_KEEP + ln for ln in (line(cells[0]), rule, *(line(r) for r in cells[1:]))]


def text(v: Page, cols: int = WIDTH) -> str:
    """The report as terminal text (no trailing detail sections), wrapped to `cols` columns, from a
    page of the comparison's view (report/view.py)."""
    lang = v.lang
    out = [_clean(v.headline), _clean(v.meta), ""]
    notes = ([say(lang, "unpaired_note")] if v.unpaired else []) + v.notes
    out += [f"  • {_clean(n)}" for n in notes]
    if v.differences:
        out.append(f"  ⚠ {say(lang, 'differences')}{say(lang, 'colon')} " + " · ".join(map(_clean, v.differences)))
    if notes or v.differences:
        out.append("")
    for b in v.benchmarks:
        out += _bench(b, lang, cols)
    if v.benchmarks:
        out += [_clean(v.legend), ""]
    if v.unchanged:
        out.append(f"⚪ {say(lang, 'unchanged_group', n=len(v.unchanged))}")
        for b in v.unchanged[:UNCHANGED_MAX]:
            step = next((r for r in b["rows"] if r["key"] == "step_time_ms"), None)
            out.append(f"  {_clean(b['name'])}" + (f"  {step['change']}  ({step['ci']})" if step else ""))
        if len(v.unchanged) > UNCHANGED_MAX:
            out.append(f"  … {say(lang, 'hl.more', n=len(v.unchanged) - UNCHANGED_MAX)}")
        out.append("")
    if v.not_measured:
        out.append(f"⏭ {say(lang, 'reach.title', n=len(v.not_measured))}")
        for r in v.not_measured[:UNCHANGED_MAX]:
            out.append(f"  {_clean(r['name'])}: " + (f"{_clean(r['nightly'])} · " if r["nightly"] else "") + _clean(r["why"]))
        if len(v.not_measured) > UNCHANGED_MAX:
            out.append(f"  … {say(lang, 'hl.more', n=len(v.not_measured) - UNCHANGED_MAX)}")
        out.append("")
    lines: list[str] = []
    for ln in out:
        lines += [ln[1:]] if ln.startswith(_KEEP) else wrap(ln, cols)
    return "\n".join(lines).rstrip() + "\n"


def _bench(b: dict, lang: str, cols: int) -> list[str]:
    colon = say(lang, "colon")
    out = [f"{b['emoji']} {_clean(b['name'])} — {b['word']}"]
    if b["reason"]:
        out.append(f"  {_clean(b['reason'])}")
    if b.get("sensitivity"):
        out.append(f"  {_clean(b['sensitivity'])}")
    if b.get("reach"):
        out.append(f"  {say(lang, 'reach.label')}{colon} {_clean(b['reach'])}")
    if b["error"]:
        e = b["error"]
        out.append(f"  💥 {e['title']}" + (f" ({e['capped']})" if e["capped"] else ""))
        out += [f"    │ {_clean(ln)}" for ln in e["tail"].splitlines()]
    if b["rows"]:
        header = [say(lang, k) for k in ("col.metric", "col.base_median", "col.head_median", "col.estimate")]
        header += [b["ci_header"], say(lang, "col.verdict")]
        rows = [[r["label"], r["base"], r["head"], r["change"], r["ci"], f"{r['symbol']} {r['word']}"]
                for r in b["rows"]]
        out += [""] + [_indent(ln) for ln in table(header, rows, right={1, 2, 3}, cols=cols - 2)]
    if b["goal"]:
        out += ["", f"  {say(lang, 'goal')}{colon} {_clean(b['goal'])}"]
    if b["constraints"]:
        header = [say(lang, k) for k in ("col.constraint", "col.base", "col.head", "col.result")]
        rows = [[r["label"], r["base"], r["head"], f"{r['symbol']} {r['word']}" + (f" — {r['detail']}" if r["detail"] else "")]
                for r in b["constraints"]]
        out += [""] + [_indent(ln) for ln in table(header, rows, right={1, 2}, cols=cols - 2)]
    bn = b["bottleneck"]
    if bn:
        out += ["", f"  {say(lang, 'bottleneck')}{colon} {_clean(bn['cls'])}"]
        if bn["evidence"]:
            out.append(f"  {say(lang, 'evidence')}{colon} " + say(lang, "sep2").join(map(_clean, bn["evidence"])))
        if bn["cost"]:
            out.append(f"  {say(lang, 'cost')}{colon} " + say(lang, "sep2").join(map(_clean, bn["cost"])))
        if bn["next_action"]:
            out.append(f"  {say(lang, 'next_action')}{colon} {_clean(bn['next_action'])}")
    if b["differences"]:
        out.append(f"  ⚠ {say(lang, 'differences')}{colon} " + " · ".join(map(_clean, b["differences"])))
    return out + [""]


def _indent(line: str) -> str:
    return _KEEP + "  " + line[1:] if line.startswith(_KEEP) else "  " + line
