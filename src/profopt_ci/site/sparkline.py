"""The index's small trend line: an inline SVG polyline of a benchmark's newest nightlies.

In: values (NaN where a nightly has no figure). Out: SVG markup with no text and no style
attribute (the site's stylesheet colours it, in light and dark), or "" with fewer than two values.
"""
from __future__ import annotations

from markupsafe import Markup

WIDTH, HEIGHT, PAD = 96, 22, 2


def sparkline(values: list[float]) -> Markup:
    points = [(i, v) for i, v in enumerate(values) if v > 0]   # NaN: no figure
    if len(points) < 2:
        return Markup("")
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    span = (hi - lo) or abs(hi) or 1.0
    last = len(values) - 1 or 1

    def xy(i: int, v: float) -> str:
        x = PAD + i / last * (WIDTH - 2 * PAD)
        y = HEIGHT - PAD - (v - lo) / span * (HEIGHT - 2 * PAD)
        return f"{x:.1f},{y:.1f}"

    line = " ".join(xy(i, v) for i, v in points)
    end = xy(*points[-1]).split(",")
    return Markup(f'<svg class="spark" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
                  f'aria-hidden="true"><polyline points="{line}"/>'
                  f'<circle cx="{end[0]}" cy="{end[1]}" r="2"/></svg>')
