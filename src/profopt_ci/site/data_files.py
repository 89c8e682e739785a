"""One benchmark page's data: a script that hands the page its series, loaded by `<script src>`.

In: a label, one benchmark's series, its change points, the words of its marks and metric labels,
the commit URL prefix. Out: the text of `data/<label>/<name>-<hash>.js`: `profoptData = {…}` with
the nightlies' commits (12 hex) and dates, each metric's medians and CIs, and the marks.

A script rather than a .json file: a page opened from file:// may not fetch() a file beside it in
Chromium, while a script beside it loads from file:// and from GitHub Pages alike, under a
Content-Security-Policy that allows scripts from the page's own origin only. The data is JSON: it
assigns a value and runs nothing else; the page's script puts every string in as text, never markup.
A nightly without a figure is NaN in the series and null in the JSON (msgspec writes NaN so).
"""
from __future__ import annotations

import msgspec

from profopt_ci.site.series import Label, Series


def _safe(text: str) -> str:
    # JSON allows U+2028/U+2029 in strings; older JavaScript parsers did not
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def payload(lab: Label, s: Series, labels: dict[str, str], bands: dict[str, str], marks: list[dict],
            commit_url: str | None) -> dict:
    nights = [lab.nightlies[i] for i in s.at]
    return {
        "label": lab.label, "name": s.name, "unit": s.unit,
        "commits": [n.commit[:12] for n in nights],
        "dates": [n.created[:10] for n in nights],
        "failed": s.failed,
        "metrics": [{"key": key, "label": labels[key], "band": bands[key], "median": v.median, "low": v.low,
                     "high": v.high} for key, v in s.metrics.items()],
        "marks": marks,
        "commitUrl": commit_url,
    }


def script(data: dict) -> bytes:
    text = msgspec.json.encode(data).decode()
    return f"window.profoptData={_safe(text)};\n".encode()
