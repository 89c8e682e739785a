"""The table under a benchmark's charts: one row per nightly, and a cache of the rows already made.

In: a label, one benchmark's series, its marks' words, the rows cache of the build before. Out: the
rows' HTML (commit, date, each metric's median and its band, the marks), escaped. Optional end tags
are left out (10³ rows on each of 10² pages).

A nightly's figures never change once stored, so neither do its cells: the cache keeps each
benchmark's row starts (all but the marks) with the store paths they came from, and a rebuild makes
only the rows of nightlies it has not seen (all of them when the benchmark's metrics changed). The
marks are always said anew: a change point may move when a nightly arrives.
"""
from __future__ import annotations

import math
from pathlib import Path

import msgspec
from markupsafe import Markup, escape

from profopt_ci.report.format import DASH
from profopt_ci.site.series import Label, Series, Values


class _Rows(msgspec.Struct, array_like=True):
    keys: list[str]
    paths: list[str]
    starts: list[str]


class RowCache:
    def __init__(self, path: Path | None) -> None:
        self.path, self.new = path, {}
        self.old: dict[str, _Rows] = {}
        if path is not None and path.is_file():
            try:
                self.old = msgspec.msgpack.decode(path.read_bytes(), type=dict[str, _Rows])
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.old = {}

    def save(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(msgspec.msgpack.encode(self.new))


def _cells(v: Values, start: int) -> list[str]:
    """Each nightly's two cells of one metric from `start` on: the median to three significant
    figures (as report/format.num) and its band with as many decimals; positive numbers only, so
    nothing to escape."""
    out = []
    log10, floor = math.log10, math.floor
    for med, lo, hi in zip(v.median[start:], v.low[start:], v.high[start:], strict=True):
        if med != med:   # NaN: no figure that nightly
            out.append(f"<td>{DASH}<td>")
            continue
        spec = ",.0f" if med >= 999.5 else f".{max(0, 2 - floor(log10(med)))}f"
        band = f"{lo:{spec}}–{hi:{spec}}" if lo == lo and hi == hi else ""
        out.append(f"<td>{med:{spec}}<td>{band}")
    return out


def _starts(lab: Label, s: Series, paths: list[str], cache: RowCache) -> list[str]:
    key, keys = f"{lab.label}\0{s.name}", list(s.metrics)
    known = cache.old.get(key)
    kept: list[str] = []
    if known is not None and known.keys == keys and paths[:len(known.paths)] == known.paths:
        kept = known.starts
    start = len(kept)
    columns = [_cells(v, start) for v in s.metrics.values()]
    made = []
    for j, cells in enumerate(zip(*columns, strict=True) if columns else ([] for _ in paths[start:]), start):
        n = lab.nightlies[s.at[j]]
        made.append(f"<tr><td>{escape(n.commit[:12])}<td>{escape(n.created[:10])}{''.join(cells)}<td>")
    starts = kept + made
    cache.new[key] = _Rows(keys, paths, starts)
    return starts


def rows(lab: Label, s: Series, marks: list[dict], cache: RowCache) -> Markup:
    words: dict[int, list[str]] = {}
    for m in marks:
        words.setdefault(m["i"], []).append(m["text"])
    paths = [lab.nightlies[i].path for i in s.at]
    out = []
    for j, start in enumerate(_starts(lab, s, paths, cache)):
        note = words.get(j)
        out.append(f"{start}{escape('; '.join(note))}\n" if note else f"{start}\n")
    return Markup("".join(out))
