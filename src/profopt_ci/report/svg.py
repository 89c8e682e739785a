"""Inline SVG plots for the HTML report: no scripts, no external references, text escaped.

In: comparison@1 benchmark entries, the threshold and the side labels. Out: SVG markup (`Markup`,
escaped here) the HTML template embeds as it is.

Per benchmark: a strip plot of the per-round step time of base and head, and a bar of the step
time change with its CI against the ±threshold band. For the whole report: the change and CI of
every benchmark (the largest first when there are many).
"""
from __future__ import annotations

import heapq
import math
import statistics

from markupsafe import Markup, escape

from profopt_ci.report.format import ci, clip, pct

COLORS = {"improved": "#1a7f37", "regressed": "#cf222e", "unchanged": "#8c959f",
          "inconclusive": "#bf8700", "unstable": "#e16f24"}
BASE_COLOR, HEAD_COLOR = "#7a869a", "#2f6fde"
OVERVIEW_MAX = 60


def _f(x: float) -> str:
    return f"{x:.1f}"


def _open(width: int, height: int) -> str:
    """An SVG that scales to its container (viewBox, width 100%) but never beyond its drawn size."""
    return (f'<svg class="plot" viewBox="0 0 {width} {height}" preserveAspectRatio="xMinYMin meet" '
            f'style="width:100%;max-width:{width}px;height:auto" role="img">')


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round values (1, 2, 2.5 or 5 × 10^k apart) between lo and hi."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _axis(x, lo: float, hi: float, y: float, label) -> list[str]:
    """A horizontal axis at `y` with a tick and a label at each round value."""
    parts = [f'<line x1="{_f(x(lo))}" y1="{y}" x2="{_f(x(hi))}" y2="{y}" stroke="#999"/>']
    for v in ticks(lo, hi):
        px = _f(x(v))
        parts.append(f'<line x1="{px}" y1="{y}" x2="{px}" y2="{y + 4}" stroke="#999"/>')
        parts.append(f'<text x="{px}" y="{y + 14}" font-size="10" text-anchor="middle">{label(v)}</text>')
    return parts


def strip_plot(title: str, base: list[float], head: list[float], labels: tuple[str, str]) -> Markup | None:
    """Dots per round, one row per side, with a tick at each side's median."""
    values = base + head
    if not values:
        return None
    width, left, right = 420, 48, 16
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    parts = [_open(width, 92), f"<title>{escape(title)}</title>"]
    for row, (label, series, color) in enumerate(((labels[0], base, BASE_COLOR), (labels[1], head, HEAD_COLOR))):
        y = 22 + row * 30
        parts.append(f'<text x="2" y="{y + 4}" font-size="11">{escape(label)}</text>')
        for i, v in enumerate(series):
            jitter = (i * 37) % 11 - 5
            parts.append(f'<circle cx="{_f(x(v))}" cy="{y + jitter}" r="2.6" fill="{color}" fill-opacity="0.6"/>')
        if series:
            mx = _f(x(statistics.median(series)))
            parts.append(f'<line x1="{mx}" y1="{y - 10}" x2="{mx}" y2="{y + 10}" stroke="#000" stroke-width="1.5"/>')
    parts += _axis(x, lo, hi, 72, lambda v: escape(f"{v:g}"))
    parts.append('<text x="2" y="86" font-size="10">ms</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def delta_bar(m: dict, threshold: float | None) -> Markup | None:
    """The change as a bar from zero, its CI as a whisker, the ±threshold band shaded."""
    delta = m.get("delta_pct")
    if delta is None:
        return None
    low, high = m.get("ci_low_pct"), m.get("ci_high_pct")
    tau = abs(threshold or 0.0)
    span = max([abs(v) for v in (delta, low, high) if v is not None] + [tau, 1.0]) * 1.25
    width, mid = 420, 210

    def x(v: float) -> float:
        return mid + v / span * (mid - 12)

    color = COLORS.get(str(m.get("verdict")), COLORS["inconclusive"])
    lo_x, d_x = min(x(0), x(delta)), abs(x(delta) - x(0))
    parts = [_open(width, 66), f"<title>change {escape(pct(delta))} {escape(ci(low, high))}</title>",
             f'<rect x="{_f(x(-tau))}" y="4" width="{_f(x(tau) - x(-tau))}" height="28" fill="#eee"/>',
             f'<line x1="{mid}" y1="2" x2="{mid}" y2="34" stroke="#999"/>',
             f'<rect x="{_f(lo_x)}" y="12" width="{_f(d_x)}" height="12" fill="{color}" fill-opacity="0.8"/>']
    if low is not None and high is not None:
        a, b = _f(x(low)), _f(x(high))
        parts += [f'<line x1="{a}" y1="18" x2="{b}" y2="18" stroke="#000" stroke-width="1.5"/>',
                  f'<line x1="{a}" y1="13" x2="{a}" y2="23" stroke="#000"/>',
                  f'<line x1="{b}" y1="13" x2="{b}" y2="23" stroke="#000"/>']
    parts += _axis(x, -span, span, 36, lambda v: escape(pct(v).replace(".0%", "%")))
    parts.append(f'<text x="{mid}" y="63" font-size="11" text-anchor="middle">'
                 f"{escape(pct(delta))} ({escape(ci(low, high))}) · ±{escape(f'{tau:g}')}%</text>")
    parts.append("</svg>")
    return Markup("".join(parts))


def overview_plot(benches: list[dict], threshold: float | None) -> Markup | None:
    """One row per benchmark: step time change (dot) and CI (line), on one shared scale."""
    sizes = [(-abs(d), i) for i, d in enumerate(map(_step_delta, benches)) if d is not None]
    if not sizes:
        return None
    rows = [benches[i] for _, i in heapq.nsmallest(OVERVIEW_MAX, sizes)]  # the largest changes, in file order on ties
    tau = abs(threshold or 0.0)
    extremes = [abs(v) for b in rows for v in _triple(b["metrics"]["step_time_ms"]) if v is not None]
    span = max(extremes + [tau, 1.0]) * 1.1
    label_w, width, row_h = 190, 520, 16
    height = row_h * len(rows) + 30
    mid = label_w + (width - label_w - 10) / 2

    def x(v: float) -> float:
        return mid + v / span * (width - label_w - 10) / 2

    parts = [_open(width, height), "<title>step time change per benchmark</title>",
             f'<rect x="{_f(x(-tau))}" y="0" width="{_f(x(tau) - x(-tau))}" height="{height - 26}" fill="#eee"/>',
             f'<line x1="{_f(mid)}" y1="0" x2="{_f(mid)}" y2="{height - 26}" stroke="#999"/>']
    for i, b in enumerate(rows):
        m = b["metrics"]["step_time_ms"]
        y = i * row_h + 10
        color = COLORS.get(str(m.get("verdict")), COLORS["inconclusive"])
        parts.append(f'<text x="2" y="{y + 4}" font-size="11">{escape(clip(str(b.get("name", "?")), 30))}</text>')
        if m.get("ci_low_pct") is not None and m.get("ci_high_pct") is not None:
            parts.append(f'<line x1="{_f(x(m["ci_low_pct"]))}" y1="{y}" x2="{_f(x(m["ci_high_pct"]))}" y2="{y}" '
                         f'stroke="{color}" stroke-width="2"/>')
        parts.append(f'<circle cx="{_f(x(m["delta_pct"]))}" cy="{y}" r="4" fill="{color}"/>')
    parts += _axis(x, -span, span, height - 22, lambda v: escape(pct(v).replace(".0%", "%")))
    parts.append("</svg>")
    return Markup("".join(parts))


def _step_delta(b: dict) -> float | None:
    """The step time change of an entry (its metric as made, or as read: both read alike)."""
    m = (b.get("metrics") or {}).get("step_time_ms")
    return None if m is None else m.get("delta_pct")


def _triple(m: dict) -> tuple:
    return m.get("delta_pct"), m.get("ci_low_pct"), m.get("ci_high_pct")


def bench_plots(b: dict, threshold: float | None, labels: tuple[str, str], title: str) -> dict:
    samples = b.get("samples") or {}

    def times(side: str) -> list[float]:
        return [s["step_time_ms"] for s in samples.get(side) or [] if isinstance(s.get("step_time_ms"), (int, float))]

    step = (b.get("metrics") or {}).get("step_time_ms") or {}
    return {"strip": strip_plot(f"{b.get('name', '?')}: {title}", times("base"), times("head"), labels),
            "delta": delta_bar(step, threshold) if step else None}
