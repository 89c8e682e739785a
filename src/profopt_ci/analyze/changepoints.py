"""Nightly history: series per benchmark, change points, and drift of a freshly measured base.

In: stored runs (store.stores.at_or_before, newest first). Out: plain dicts for the comparison's
`history` and `drift` keys. Pure apart from importing `ruptures`.

Change points follow Daly et al. (ICPE 2020) and Fleming et al. (ICPE 2023): search the commit
series for steps instead of judging each commit against a fixed threshold. Candidates come from
PELT (ruptures, l2 cost on log values, a BIC-like penalty scaled by a robust noise estimate); each
is kept only when the segments either side differ by a Welch t-test at `alpha` and by at least
`min_pct` — the same smallest-change-that-counts as the comparison.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from profopt_ci.documents.statement import put
from profopt_ci.figures import is_measurement as _usable
from profopt_ci.words.i18n import message

METRIC = "step_time_ms"
DEFAULT_N = 30
MIN_SIZE = 3
DRIFT_MIN_N = 5
DRIFT_Z = 3.5


def series(runs: list[tuple[Any, dict, int]], metric: str = METRIC) -> dict[str, dict[str, list]]:
    """Per benchmark, oldest first: the nightly medians, their commits (12 hex) and dates."""
    out: dict[str, dict[str, list]] = {}
    for _, doc, _ in reversed(runs):
        for name, bench in (doc.get("benchmarks") or {}).items():
            value = ((bench.get("metrics") or {}).get(metric) or {}).get("median") if isinstance(bench, dict) else None
            if not _usable(value):
                continue
            s = out.setdefault(name, {"values": [], "commits": [], "dates": []})
            s["values"].append(float(value))
            s["commits"].append(str(doc.get("commit"))[:12])
            s["dates"].append(str(doc.get("created") or "")[:10])
    return out


def _welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's two-sided t-test p-value (scipy.stats.ttest_ind(equal_var=False)'s, from the t
    distribution in scipy.special: importing scipy.stats is a noticeable part of the site's rebuild)."""
    va, vb = a.var(ddof=1), b.var(ddof=1)
    diff = abs(a.mean() - b.mean())
    if va == 0 and vb == 0:
        return 0.0 if diff > 0 else 1.0
    from scipy.special import stdtr

    sa, sb = va / len(a), vb / len(b)
    t = diff / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa ** 2 / (len(a) - 1) + sb ** 2 / (len(b) - 1))
    return float(2 * stdtr(df, -t))


def detect(values: list[float], *, min_pct: float = 3.0, alpha: float = 0.01, min_size: int = MIN_SIZE) -> list[dict]:
    """Steps in a series: [{index (first value after the step), delta_pct, p_value}], oldest first."""
    n = len(values)
    if n < 2 * min_size or not all(_usable(v) for v in values):
        return []
    import ruptures

    x = np.log(np.asarray(values, dtype=float))
    bkps = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(x.reshape(-1, 1)).predict(pen=_penalty(x))[:-1]
    return _kept(x, bkps, min_pct, alpha)


def _penalty(x: np.ndarray) -> float:
    """3·σ²·ln n, σ from the MAD of successive differences: a step moves one difference only."""
    d = np.diff(x)
    sigma = max(1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2), 1e-4)
    return 3.0 * sigma ** 2 * math.log(len(x))


def _kept(x: np.ndarray, bkps: list[int], min_pct: float, alpha: float) -> list[dict]:
    """The candidates whose segments either side differ by Welch's test at `alpha` and by `min_pct`."""
    bounds = [0, *bkps, len(x)]
    out = []
    for i, k in enumerate(bkps):
        before, after = x[bounds[i]:k], x[k:bounds[i + 2]]
        delta = (math.exp(float(np.median(after) - np.median(before))) - 1) * 100
        p = _welch_p(before, after)
        if abs(delta) >= min_pct and p < alpha:
            out.append({"index": int(k), "delta_pct": round(delta, 2), "p_value": p})
    return out


def detect_many(series: list[list[float]], *, min_pct: float = 3.0, alpha: float = 0.01,
                min_size: int = MIN_SIZE) -> list[list[dict]]:
    """`detect` of each series, the same steps, with the search done for all series of one length
    at once (analyze/partition.py): the site searches hundreds of histories of 10³ nightlies."""
    from profopt_ci.analyze.partition import optimal_partition

    out: list[list[dict]] = [[] for _ in series]
    by_len: dict[int, list[int]] = {}
    for i, values in enumerate(series):
        if len(values) >= 2 * min_size and all(_usable(v) for v in values):
            by_len.setdefault(len(values), []).append(i)
    for idx in by_len.values():
        x = np.log(np.asarray([series[i] for i in idx], dtype=float))
        pen = np.asarray([_penalty(row) for row in x])
        for i, row, bkps in zip(idx, x, optimal_partition(x, pen, min_size), strict=True):
            out[i] = _kept(row, bkps, min_pct, alpha)
    return out


def build(runs: list[tuple[Any, dict, int]], entries: list[dict], *, head_commit: str | None,
          min_pct: float | None = None, metric: str = METRIC) -> dict[str, dict]:
    """A comparison's `history`: per compared benchmark (its `entries`), the nightly series and
    change points of at least `min_pct` (default 3)."""
    per = series(runs, metric)
    threshold = min_pct or 3.0
    out: dict[str, dict] = {}
    for b in entries:
        s = per.get(b.get("name"))
        if not s:
            continue
        head = ((b.get("metrics") or {}).get(metric) or {}).get("head")
        cps = []
        for cp in detect(s["values"], min_pct=threshold):
            k = cp["index"]
            cps.append({"index": k, "from_commit": s["commits"][k - 1], "to_commit": s["commits"][k],
                        "delta_pct": cp["delta_pct"], "p_value": cp["p_value"]})
        out[b["name"]] = {"metric": metric, "values": s["values"], "commits": s["commits"], "dates": s["dates"],
                          "head": head, "head_commit": str(head_commit or "")[:12],
                          "change_points": cps}
    return out


def drift(fresh: float, history: list[float], *, threshold_pct: float = 3.0, z_cut: float = DRIFT_Z,
          min_n: int = DRIFT_MIN_N) -> dict:
    """Did a freshly measured value leave its nightly history?

    A robust z-score on log values (median and MAD of the history) with a floor on the scale, so
    that a move smaller than the threshold never counts however quiet the history was; drifted
    when |z| > z_cut and the value lies outside the history's range.
    """
    vals = [v for v in history if _usable(v)]
    res: dict[str, Any] = {"fresh": fresh, "n": len(vals), "history_median": None, "history_min": None,
                           "history_max": None, "delta_pct": None, "z": None, "drifted": None, "reason": None}
    if not vals or not _usable(fresh):
        return put(res, "reason", message("drift.no_values" if not vals else "drift.no_fresh"))
    med = statistics.median(vals)
    res.update(history_median=med, history_min=min(vals), history_max=max(vals),
               delta_pct=round((fresh / med - 1) * 100, 2))
    if len(vals) < min_n:
        return put(res, "reason", message("drift.too_few", n=len(vals), least=min_n))
    logs = np.log(np.asarray(vals, dtype=float))
    center = float(np.median(logs))
    scale = max(1.4826 * float(np.median(np.abs(logs - center))), math.log1p(threshold_pct / 100) / z_cut)
    z = (math.log(fresh) - center) / scale
    res["z"] = round(z, 2)
    res["drifted"] = bool(abs(z) > z_cut and not (min(vals) <= fresh <= max(vals)))
    return res


def drift_note(name: str, d: dict) -> dict:
    """The report's note on a fresh base that left its nightly series (a message, words/i18n.message)."""
    return message("note.drift", name=name, fresh_ms=d["fresh"], median_ms=d["history_median"], runs=d["n"],
                   delta_pct=abs(d["delta_pct"]), direction="slower" if d["delta_pct"] > 0 else "faster", z=d["z"])
