"""The search of `profopt bisect`: which commit to probe next, and what a probe says. Pure.

In: the first-parent commits after the good end (the bad end last), and for each probed one its
class; a comparison entry and the direction the change between the ends took. Out: the next index
to probe, the first bad commit once the range is closed, and a probe's class:

- bad           changed beyond τ in the direction of the change between the ends;
- good          unchanged (or changed the other way: not the change searched for);
- inconclusive  still not told apart from noise after the extensions: never a guess, left untested;
- skip          the commit does not build or run (`git bisect skip`).

Skipped and inconclusive commits are never a boundary: the search probes the untested commit
nearest the middle instead, and when only such commits are left between the last good and the first
bad, the culprit is any of them up to the first bad (`candidates`), as git bisect says.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from profopt_ci.errors import cause_lines
from profopt_ci.specfile.keys import METRIC_KEYS

CHANGED = ("regressed", "improved")
UNDECIDED = ("inconclusive", "unstable")
# What --metric may name: throughput moves with step time, so searching it would find the same commit.
METRICS = {name: key for name, key in METRIC_KEYS.items() if name != "throughput"}


@dataclass
class Search:
    """One binary search over `n` commits (index n-1 is the bad end, known bad); index -1 is the good end."""

    n: int
    classes: dict[int, str] = field(default_factory=dict)

    def bounds(self) -> tuple[int, int]:
        """(the last good index, the first bad index) known so far."""
        good = max((i for i, c in self.classes.items() if c == "good"), default=-1)
        bad = min((i for i, c in self.classes.items() if c == "bad" and i > good), default=self.n - 1)
        return good, bad

    def next_probe(self) -> int | None:
        """The untested commit nearest the middle of the open range; None once it is closed."""
        lo, hi = self.bounds()
        open_ = [i for i in range(lo + 1, hi) if i not in self.classes]
        if not open_:
            return None
        mid = (lo + hi) / 2
        return min(open_, key=lambda i: (abs(i - mid), i))

    def record(self, index: int, cls: str) -> None:
        self.classes[index] = cls

    def result(self) -> tuple[int, list[int]]:
        """(the first bad index, every index that may be the culprit: the untestable ones before it, then it)."""
        lo, hi = self.bounds()
        return hi, list(range(lo + 1, hi + 1))


def metric_key(metric: str, bench_constraints: list[str]) -> tuple[str, bool]:
    """(the key in a comparison entry, whether it is a recorded quality value) for `--metric`; a quality
    value must be one of the benchmark's constraints (that is what says how far it may move)."""
    if metric in METRICS:
        return METRICS[metric], False
    if metric in bench_constraints:
        return metric, True
    known = ", ".join(["step_time", "instructions", "peak_memory", *bench_constraints])
    raise ValueError(f"{metric!r} — expected one of {known}")


def observe(entry: dict, key: str, quality: bool) -> dict:
    """What one comparison entry says of the metric: estimate, CI, verdict (None when it failed)."""
    if entry.get("decision") == "failed":
        cause = cause_lines(((entry.get("error") or {}).get("message") or ""), 2)
        said = " — ".join([entry.get("reason") or "failed", *[c for c in cause if c not in (entry.get("reason") or "")]])
        return {"verdict": "failed", "delta_pct": None, "ci_low_pct": None, "ci_high_pct": None,
                "rounds": entry.get("rounds"), "error": said[:500]}
    if (entry.get("reach") or {}).get("measured") is False:  # runs as the good end does: unchanged, not measured
        return {"verdict": "unchanged", "delta_pct": None, "ci_low_pct": None, "ci_high_pct": None, "rounds": 0,
                "reached": False}
    if quality:
        return _observe_quality(entry, key)
    m = (entry.get("metrics") or {}).get(key) or {}
    return {"verdict": m.get("verdict") or "inconclusive", "delta_pct": m.get("delta_pct"),
            "ci_low_pct": m.get("ci_low_pct"), "ci_high_pct": m.get("ci_high_pct"),
            "rounds": entry.get("rounds")}


def _observe_quality(entry: dict, key: str) -> dict:
    c = next((c for c in entry.get("constraints") or [] if c.get("metric") == key), None)
    out = {"verdict": "inconclusive", "delta_pct": None, "ci_low_pct": None, "ci_high_pct": None,
           "rounds": entry.get("rounds")}
    if c is None:
        return out
    b, h = c.get("base"), c.get("head")
    if isinstance(b, (int, float)) and isinstance(h, (int, float)) and b:
        out["delta_pct"] = (h - b) / abs(b) * 100
    out["verdict"] = "unchanged" if c.get("ok") else "regressed"  # a broken constraint is the change
    return out


def classify(obs: dict, direction: str) -> str:
    """A probe's class against the direction the ends changed in (`regressed` or `improved`)."""
    verdict = obs["verdict"]
    if verdict == "failed":
        return "skip"
    if verdict in UNDECIDED:
        return "inconclusive"
    return "bad" if verdict == direction else "good"
