"""Change points of each benchmark's history, with what the nightly's bisection found about them.

In: the labels' series (site/series.py), the stored change documents (bisect@1 with their
`change_point` block, store/stores.changes), a memo of earlier searches. Out: per label and
benchmark the `Change`s of its step time (and of its instruction count where counted), oldest
first, each with its effect, the commits either side, its state (reverted · bisected · not bisected)
and the bisection's first bad commit when there is one.

The search is the nightly's own (analyze/changepoints: PELT's optimum on log values, each step kept
only when Welch's test and the threshold agree), run over windows of WINDOW nightlies that start
every STRIDE nightlies; a step belongs to the window whose middle half holds it (the first window
owns its start, the last its end). A history of up to WINDOW nightlies is searched whole, exactly as
the nightly searches it. A window's result depends only on its values, so it is memoized: a rebuild
after one more nightly searches only the windows that reach it.
"""
from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from profopt_ci.analyze import changepoints
from profopt_ci.publish.issues import reverted
from profopt_ci.site.series import Label, Series

WINDOW = 128
STRIDE = WINDOW // 2
THRESHOLD_PCT = 3.0   # the spec's default threshold: a step smaller than this is not a change point
SEARCHED = ("step_time_ms", "instructions")
LEVEL_RUNS = changepoints.MIN_SIZE + 2   # runs either side that give a step's levels, as the nightly's


@dataclass(frozen=True)
class Change:
    metric: str
    point: int            # index in the series of the first point after the step
    delta_pct: float
    p_value: float
    from_commit: str
    to_commit: str
    date: str
    state: str            # reverted | bisected | open
    bisect: dict | None   # the stored bisect@1 of this change point, when the nightly bisected it


def windows(n: int) -> list[tuple[int, int, int, int]]:
    """(start, end, owns_from, owns_to) of each window over n values."""
    if n <= WINDOW:
        return [(0, n, 0, n)]
    starts = list(range(0, n - STRIDE, STRIDE))
    out = []
    for j, s in enumerate(starts):
        end = min(s + WINDOW, n)
        own_from = 0 if j == 0 else s + STRIDE // 2
        own_to = n if j == len(starts) - 1 else s + STRIDE + STRIDE // 2
        out.append((s, end, own_from, own_to))
    return out


class Memo:
    """Window values → the steps found in them, kept between builds in the site's cache folder."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.used, self.searched = path, {}, 0
        self.old: dict[str, list[tuple[int, float, float]]] = {}
        if path is not None and path.is_file():
            try:
                self.old = msgspec.msgpack.decode(path.read_bytes(), type=dict[str, list[tuple[int, float, float]]])
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.old = {}

    @staticmethod
    def key(values: np.ndarray) -> str:
        return hashlib.blake2b(values.tobytes() + f"{THRESHOLD_PCT}".encode(), digest_size=16).hexdigest()

    def get(self, key: str) -> list[tuple[int, float, float]] | None:
        found = self.used.get(key, self.old.get(key))
        if found is not None:
            self.used[key] = found
        return found

    def put(self, key: str, steps: list[dict]) -> None:
        self.searched += 1
        self.used[key] = [(s["index"], s["delta_pct"], s["p_value"]) for s in steps]

    def save(self) -> None:
        if self.path is not None and self.used.keys() != self.old.keys():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(msgspec.msgpack.encode(self.used))


def _steps_of(valued: list[np.ndarray], memo: Memo) -> list[list[tuple[int, float, float]]]:
    """The steps of each series (its indices into the values given), window by window."""
    out: list[list[tuple[int, float, float]]] = [[] for _ in valued]
    todo: dict[int, list[tuple[int, str, np.ndarray]]] = {}   # window length → (series, key, values)
    plan = []
    for i, x in enumerate(valued):
        for start, end, own_from, own_to in windows(len(x)):
            part = x[start:end]
            key = Memo.key(part)
            plan.append((i, start, own_from, own_to, key))
            if memo.get(key) is None:
                todo.setdefault(len(part), []).append((i, key, part))
    for items in todo.values():
        unique = {key: part for _, key, part in items}
        found = changepoints.detect_many([p.tolist() for p in unique.values()], min_pct=THRESHOLD_PCT)
        for key, steps in zip(unique, found, strict=True):
            memo.put(key, steps)
    for i, start, own_from, own_to, key in plan:
        for index, delta, p in memo.get(key) or []:
            if own_from <= start + index < own_to:
                out[i].append((start + index, delta, p))
    return out


def _bisects(docs: list[tuple[str, dict]]) -> dict[tuple[str, str, str], dict]:
    """(label, benchmark, to commit 12) → the newest stored bisect@1 of that change point."""
    out = {}
    for _, doc in docs:
        cp = doc.get("change_point") or {}
        key = (str(cp.get("label")), str(cp.get("benchmark")), str(cp.get("to_commit"))[:12])
        if key not in out or str(doc.get("created")) >= str(out[key].get("created")):
            out[key] = doc
    return out


def _change(lab: Label, s: Series, metric: str, pos: list[int], step: tuple[int, float, float],
            nxt: int | None, values: list[float], bisects: dict) -> Change:
    k, delta, p = step
    before = statistics.median(values[max(0, k - LEVEL_RUNS):k])
    after = statistics.median(values[k:nxt])
    night_to, night_from = lab.nightlies[s.at[pos[k]]], lab.nightlies[s.at[pos[k - 1]]]
    doc = bisects.get((lab.label, s.name, night_to.commit[:12])) if metric == "step_time_ms" else None
    tau = float(doc.get("threshold_pct") or THRESHOLD_PCT) if doc else THRESHOLD_PCT
    state = ("reverted" if reverted(values[-1], before, after, tau)
             else "bisected" if doc and doc.get("first_bad") else "open")
    return Change(metric, pos[k], delta, p, night_from.commit, night_to.commit, night_to.created[:10], state, doc)


def find_changes(labels: list[Label], docs: list[tuple[str, dict]], memo: Memo) -> dict[tuple[str, str], list[Change]]:
    """(label, benchmark) → its change points, oldest first."""
    bisects = _bisects(docs)
    jobs = []   # (label, series, metric, positions of the valued points, their values)
    for lab in labels:
        for s in lab.series.values():
            for metric in SEARCHED:
                vals = s.metrics.get(metric)
                if vals is None:
                    continue
                pos = [j for j, v in enumerate(vals.median) if v > 0]   # NaN: no figure
                if len(pos) >= 2 * changepoints.MIN_SIZE:
                    jobs.append((lab, s, metric, pos, [vals.median[j] for j in pos]))
    steps = _steps_of([np.asarray(v, dtype=float) for *_, v in jobs], memo)
    out: dict[tuple[str, str], list[Change]] = {}
    for (lab, s, metric, pos, values), found in zip(jobs, steps, strict=True):
        found.sort()
        ends: list[int | None] = [f[0] for f in found[1:]] + [None] if found else []
        changes = [_change(lab, s, metric, pos, f, nxt, values, bisects) for f, nxt in zip(found, ends, strict=True)]
        out.setdefault((lab.label, s.name), []).extend(changes)
    for changes in out.values():
        changes.sort(key=lambda c: (c.point, c.metric))
    return out
