"""From two sides' samples to verdicts and a decision. Pure: samples and settings in, dicts out.

In: a `Benchmark` (settings, constraints, goal) and each side's samples. Out: the `metrics`,
`constraints`, `goal`, `decision` and `reason` of a comparison entry, and the overall decision,
counts and summary sentence of the comparison.

Per benchmark: every metric compared (paired rounds, or unpaired for `profopt diff`), the
constraints checked on the recorded quality values, then one decision:

- failed        a side did not finish (setup, crash, timeout);
- reject        a constraint broke, or something regressed and nothing improved;
- trade-off     one metric better, another worse (both named);
- keep          the goal metric (or, without a goal, any speed/memory metric) improved, nothing
                regressed, the constraints hold;
- inconclusive  the speed metric could not be told apart from noise at the rounds run;
- no-change     everything unchanged within its threshold.

Across benchmarks: Benjamini–Hochberg decides what stays flagged as changed (the report), Holm what
may fail the build (`policy_failures`). The overall decision is the worst benchmark's, by each
decision's `precedence` in `DECISIONS`; the report lists benchmarks by its `severity`.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, NamedTuple

from msgspec.structs import replace

from profopt_ci.analyze import multiplicity, quality, stats
from profopt_ci.analyze.stats import MEMORY_METRICS, SPEED
from profopt_ci.analyze.unpaired import memory_change
from profopt_ci.documents.comparison import revised
from profopt_ci.documents.statement import put
from profopt_ci.documents.types_comparison import Entry, Metric, typed_messages
from profopt_ci.errors import cause_lines
from profopt_ci.figures import is_measurement as _usable
from profopt_ci.specfile.load import Benchmark, Constraint
from profopt_ci.specfile.model import GOAL_METRICS
from profopt_ci.words.i18n import message


class DecisionRow(NamedTuple):
    """One decision, as everything that ranks or says it reads it."""

    name: str
    # Which decision a comparison takes from its benchmarks (`overall`, the summary): the lowest. A
    # keep outranks an inconclusive: a benchmark that showed its win says more than one that could not.
    precedence: int
    # Where the report lists a benchmark with it (report/view.report_order): the lowest first. An
    # inconclusive comes before a keep: it asks the reader for something (more rounds), a keep does not.
    severity: int
    message: str  # its word in the catalogs (words/messages_*.py)


DECISIONS: tuple[DecisionRow, ...] = (
    DecisionRow("failed", 0, 0, "decision.failed"),
    DecisionRow("reject", 1, 1, "decision.reject"),
    DecisionRow("trade-off", 2, 2, "decision.trade-off"),
    DecisionRow("keep", 3, 4, "decision.keep"),
    DecisionRow("inconclusive", 4, 3, "decision.inconclusive"),
    DecisionRow("no-change", 5, 5, "decision.no-change"),
)
DECISION_ORDER = tuple(row.name for row in sorted(DECISIONS, key=lambda row: row.precedence))
SEVERITY = {row.name: row.severity for row in DECISIONS}
ENERGY = "energy_per_step_j"  # a GPU step's energy per step (measure/lockstep.energy_blocks), judged like step time


def throttled(sample: dict) -> bool:
    """A sample of a round whose GPU clocks were throttled (measure/gpu.py): left out of the verdict."""
    block = sample.get("gpu")
    return bool(block and block.get("throttled"))


def throttled_rounds(base: list[dict], head: list[dict]) -> set:
    """The round indices where either side's sample was throttled."""
    return {s.get("round") for s in (*base, *head) if throttled(s)}


def _pairs(base: list[dict], head: list[dict], metric: str) -> tuple[list[float], list[float], list[float] | None]:
    """Values of rounds both sides completed, matched by round index, throttled rounds left out; and
    for step time and throughput, each round's head/base from its pairs when every round has them
    (`round_ratios`)."""
    b = {s["round"]: s for s in base}
    h = {s["round"]: s for s in head}
    skip = throttled_rounds(base, head) if any(s.get("gpu") for s in base[:1] + head[:1]) else set()
    rounds = sorted(r for r in b.keys() & h.keys()
                    if r not in skip and _usable(b[r].get(metric)) and _usable(h[r].get(metric)))
    ratios = None
    if metric in (SPEED, "throughput"):
        per = [round_ratio(b[r], h[r]) for r in rounds]
        if per and all(x is not None for x in per):
            ratios = [x if metric == SPEED else 1.0 / x for x in per]
    return [b[r][metric] for r in rounds], [h[r][metric] for r in rounds], ratios


def round_ratio(base: dict, head: dict) -> float | None:
    """A lockstep round's head/base step time: the median of its pairs' ratios. The values of both
    sides were taken pair by pair, each pair in the same moment of the machine, so a pair's ratio
    cancels the machine's speed where the ratio of the two sides' medians does not (an A/A of a
    pure-Python step: the per-round spread of 3.1–4.5% became 0.7–1.1%, docs/experiments.md). None
    for a round that was not taken in pairs (pairing: rounds, older results)."""
    if base.get("pairing") != "lockstep" or head.get("pairing") != "lockstep":
        return None
    vb, vh = base.get("values_ms"), head.get("values_ms")
    if not vb or not vh or len(vb) != len(vh):
        return None
    logs = sorted(math.log(y / x) for x, y in zip(vb, vh, strict=True) if _usable(x) and _usable(y) and x > 0 and y > 0)
    if not logs:
        return None
    mid = len(logs) // 2
    return math.exp(logs[mid] if len(logs) % 2 else (logs[mid - 1] + logs[mid]) / 2)


def _values(samples: list[dict], metric: str) -> list[float]:
    return [s[metric] for s in samples if _usable(s.get(metric))]


def compare_metrics(bench: Benchmark, base: list[dict], head: list[dict], *, alpha: float | None = None) -> dict[str, dict]:
    """The metric entries of paired rounds (`compare`); unpaired ones are analyze.unpaired's."""
    s = bench.settings
    out: dict[str, dict] = {}
    for metric, better in ((SPEED, "lower"), ("throughput", "higher"), (ENERGY, "lower")):
        b, h, ratios = _pairs(base, head, metric)
        if b:
            out[metric] = stats.paired_change(b, h, threshold_pct=s.threshold, better=better, alpha=alpha,
                                              ratios=ratios)
    for metric in MEMORY_METRICS:
        b, h = _values(base, metric), _values(head, metric)
        if b and h:
            out[metric] = memory_change(b, h, tolerance_pct=s.memory_tolerance)
    return out


def _quality(samples: list[dict], metric: str) -> list[Any]:
    return [s["quality"][metric] for s in samples if metric in (s.get("quality") or {})]


def _center(values: list[Any]) -> Any:
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if nums and len(nums) == len(values):
        return statistics.median(nums)
    return values[-1]


def check_constraint(c: Constraint, base: list[dict], head: list[dict],
                     traces: tuple[dict | None, dict | None] = (None, None)) -> dict:
    """The constraint at equal steps from both sides' quality traces (analyze/quality.py). When a side
    has none (results or a stored baseline written before the quality pass existed), from the
    timed samples' last values, and the detail says they were not compared at equal steps."""
    tb, th = traces
    if tb is not None and th is not None:
        return quality.check_at_steps(c, tb, th)
    failed = quality.failed_side(tb, th)
    if failed:
        return quality.check_at_steps(c, tb or {}, th or {})
    entry = _from_samples(c, base, head)
    return put(entry, "detail", message("con.timed_values", detail=entry["detail_msg"]))


def _from_samples(c: Constraint, base: list[dict], head: list[dict]) -> dict:
    bv, hv = _quality(base, c.metric), _quality(head, c.metric)
    entry = {"metric": c.metric, "rule": c.rule, "limit": c.limit, "base": None, "head": None, "ok": False}
    missing = [side for side, vals in (("base", bv), ("head", hv)) if not vals]
    if missing:
        return put(entry, "detail", message("con.not_recorded", metric=c.metric, sides=missing))
    b, h = _center(bv), _center(hv)
    entry.update(base=b, head=h)
    if c.rule == "equal":
        distinct = {repr(v) for v in bv + hv}
        entry["ok"] = len(distinct) == 1
        return put(entry, "detail", message("con.identical") if entry["ok"] else
                            message("con.differs", base=_short(bv), head=_short(hv)))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (b, h)):
        return put(entry, "detail", message("con.not_a_number", metric=c.metric, base=repr(b), head=repr(h)))
    diff = abs(h - b)
    if c.rule == "abs_tol":
        entry["ok"] = diff <= float(c.limit)
        delta, limit = f"{diff:.4g}", f"{float(c.limit):g}"
    else:
        rel = diff / abs(b) if b else (0.0 if diff == 0 else math.inf)
        entry["ok"] = rel <= float(c.limit)
        delta, limit = f"{rel * 100:.2f}%", f"{float(c.limit) * 100:g}%"
    return put(entry, "detail", message("con.delta", delta=delta, op="≤" if entry["ok"] else ">", limit=limit))


def _short(values: list[Any]) -> str:
    shown = sorted({str(v)[:16] for v in values})
    return ", ".join(shown[:3]) + ("…" if len(shown) > 3 else "")


def _goal_metric(bench: Benchmark) -> str | None:
    return bench.goal.metric if bench.goal else None


def decide_benchmark(bench: Benchmark, metrics: dict[str, dict], constraints: list[dict]) -> tuple[str, dict]:
    """(decision, reason) for one benchmark whose sides both finished; the reason a message (`decision_of`
    writes it into the entry)."""
    broken = [c for c in constraints if not c["ok"]]
    if SPEED not in metrics and "instructions" not in metrics and not broken:
        return "inconclusive", message("reason.no_rounds")
    # throughput mirrors step time (same rounds, inverted): decide on step time, name both in the report
    judged = {m: r for m, r in metrics.items() if m != "throughput"}
    improved = [m for m, r in judged.items() if r["verdict"] == "improved"]
    regressed = [m for m, r in judged.items() if r["verdict"] == "regressed"]
    if broken:
        return "reject", broken_reason(broken)
    if regressed and improved:
        return "trade-off", message("reason.trade-off", improved=improved, regressed=regressed)
    if regressed:
        return "reject", message("reason.regressed", regressed=regressed)
    goal = _goal_metric(bench)
    if goal == "throughput":
        goal = SPEED
    if improved and (goal is None or goal in improved):
        return "keep", message("reason.keep", improved=improved)
    speed = metrics.get(SPEED, {}).get("verdict")
    if speed in ("inconclusive", "unstable"):
        return "inconclusive", message("reason.unstable" if speed == "unstable" else "reason.inconclusive")
    if improved:
        return "no-change", message("reason.goal_unchanged", goal=[goal], improved=improved)
    return "no-change", message("reason.no-change")


def broken_reason(broken: list[dict]) -> dict:
    """The reason of a benchmark whose constraints broke: each one's metric and detail."""
    return message("reason.broken", what=[[c["metric"], c.get("detail_msg") or c["detail"]] for c in broken])


def decision_of(decision: str, reason: dict) -> dict[str, Any]:
    """How an entry says its decision: the decision, its reason in English and the message beside it."""
    return {"decision": decision, "reason": reason["text"], "reason_msg": reason}


def decided(entry: Entry, decision: str, reason: dict, **changes: Any) -> Entry:
    """A decided entry decided again (a failed instructions run, the budget, a confirmation), with
    any other `changes`: one new Entry (documents.comparison.revised)."""
    return revised(entry, **changes, **decision_of(decision, reason))


def goal_status(bench: Benchmark, metrics: dict[str, dict]) -> dict | None:
    if bench.goal is None:
        return None
    m = metrics.get(bench.goal.metric)
    achieved = None
    if m is not None and m.get("delta_pct") is not None:
        achieved = -m["delta_pct"] if bench.goal.direction == "decrease" else m["delta_pct"]
    met = None
    if achieved is not None and bench.goal.target_pct is not None:
        met = achieved >= bench.goal.target_pct and m["verdict"] == "improved"
    return {"metric": bench.goal.metric, "direction": bench.goal.direction, "target_pct": bench.goal.target_pct,
            "achieved_pct": achieved, "met": met}


def multiplicity_corrected(entries: list[dict], q: float = 0.01) -> list[dict[str, Any]]:
    """BH and Holm over the entries' speed p-values: per entry, its speed metric with `p_adjusted`
    and `p_holm`, inconclusive (throughput too) where BH does not flag a change; {} for an entry
    without one. New metric entries: the given entries and their metrics stay as they were."""
    rows = [k for k, e in enumerate(entries) if SPEED in e.get("metrics", {})]
    pvals = [entries[k]["metrics"][SPEED].get("p_value") for k in rows]
    out: list[dict[str, Any]] = [{} for _ in entries]
    for k, p_bh, p_holm in zip(rows, multiplicity.bh_adjusted(pvals), multiplicity.holm_adjusted(pvals), strict=True):
        metrics = entries[k]["metrics"]
        m = out[k][SPEED] = changed_metric(metrics[SPEED], p_adjusted=p_bh, p_holm=p_holm)
        level = 1 - m.get("confidence", 1 - q)
        if m["verdict"] in ("improved", "regressed") and p_bh is not None and p_bh > max(level, q) and len(rows) > 1:
            why = message("why.bh", p=m["p_value"], n=len(rows), adjusted=p_bh)
            out[k][SPEED] = changed_metric(m, verdict="inconclusive", reason=why["text"], reason_msg=why)
            if "throughput" in metrics:
                out[k]["throughput"] = changed_metric(metrics["throughput"], verdict="inconclusive")
    return out


def changed_metric(metric: Metric, **values: Any) -> Metric:
    """A copy of a metric (documents.types_comparison.Metric, as `stats.metric` makes it) with
    `values` set, messages as `Message`s."""
    return replace(metric, **typed_messages(values))


def policy_failures(entries: list[dict], fail_on: str, alpha: float = 0.01) -> list[str]:
    """Names of benchmarks that fail the build under --fail-on (Holm-confirmed regressions)."""
    if fail_on == "none":
        return []
    out = []
    for e in entries:
        broken = any(not c["ok"] for c in e.get("constraints", []))
        if broken:
            out.append(e["name"])
            continue
        if fail_on != "regression":
            continue
        for metric, m in e.get("metrics", {}).items():
            if m.get("verdict") != "regressed":
                continue
            p = m.get("p_holm")
            if metric in MEMORY_METRICS or p is None or p <= max(alpha, 1 - m.get("confidence", 1 - alpha)):
                out.append(e["name"])
                break
    return out


def overall(entries: list[dict]) -> str:
    if not entries:
        return "no-change"
    return min((e["decision"] for e in entries), key=DECISION_ORDER.index)


def counts(entries: list[dict]) -> dict[str, int]:
    out = {"benchmarks": len(entries), "regressed": 0, "improved": 0, "constraint_failures": 0, "failed": 0,
           "inconclusive": 0}
    for e in entries:  # one pass: a large diff's entries
        verdicts = {m.get("verdict") for k, m in e.get("metrics", {}).items() if k != "throughput"}
        out["regressed"] += "regressed" in verdicts
        out["improved"] += "improved" in verdicts
        out["constraint_failures"] += any(not c["ok"] for c in e.get("constraints", []))
        out["failed"] += e["decision"] == "failed"
        out["inconclusive"] += e["decision"] == "inconclusive"
    return out


def summary_sentence(entries: list[dict], confidence: float = 0.99) -> str:
    """The summary's English (see `summary`)."""
    return summary(entries, confidence)["text"]


def summary(entries: list[dict], confidence: float = 0.99) -> dict:
    """The ten-second sentence, a message: the decisive benchmark and its figures.

    The CI is labelled with the nominal `confidence` (the report's "99% CI"); the level each
    interval really used after sequential looks is the metric's own `confidence` in the JSON.
    Only an improved or regressed step time is worded as faster/slower.
    """
    if not entries:
        return message("summary.none")
    first = min(entries, key=lambda e: DECISION_ORDER.index(e["decision"]))
    same = [e for e in entries if e["decision"] == first["decision"]]
    # the benchmark the report's headline names (report/headline.py): for `keep`, the biggest win
    top = max(same, key=gain) if first["decision"] == "keep" else first
    m = top.get("metrics", {}).get(SPEED)
    if top["decision"] == "failed":
        err = top.get("error") or {}
        last = cause_lines(err.get("message"), 1)
        return message("summary.failed", name=top["name"], side=err.get("side", "a side"),
                       error=(last[0].strip() if last else "")[:160])
    parts = []
    if m and m.get("delta_pct") is not None:
        parts.append(_speed_phrase(m, f"{confidence * 100:g}"))
    ins = top.get("metrics", {}).get("instructions")
    if ins and ins.get("delta_pct") is not None:
        parts.append(message("sum.instructions", verdict=ins["verdict"], delta=ins["delta_pct"]))
    mem = top.get("metrics", {}).get("peak_memory_mb")
    if mem:
        if mem["verdict"] == "unchanged":
            parts.append(message("sum.memory_unchanged"))
        elif mem.get("delta_pct") is not None:
            parts.append(message("sum.memory", verdict=mem["verdict"], delta=mem["delta_pct"]))
        else:
            parts.append(message("sum.memory_plain", verdict=mem["verdict"]))
    for c in top.get("constraints", []):
        parts.append(message("sum.con_ok" if c["ok"] else "sum.con_broken", metric=c["metric"]))
    others = len(same) - 1  # as the headline counts them: more benchmarks with the same decision
    if others:
        return message("summary.more", name=top["name"], parts=parts, more=others)
    return message("summary.of", name=top["name"], parts=parts)


METRIC_ORDER = (SPEED, "throughput", ENERGY, "peak_memory_mb")  # an entry's metrics as the report lists them


def ordered_metrics(metrics: dict) -> list[str]:
    return [k for k in METRIC_ORDER if k in metrics] + sorted(k for k in metrics if k not in METRIC_ORDER)


def main_metric(bench: dict) -> str | None:
    """The metric the benchmark's goal names, else the first of its metrics in report order."""
    metrics = bench.get("metrics") or {}
    goal = (bench.get("goal") or {}).get("metric")
    key = GOAL_METRICS.get(str(goal), goal)  # compare writes the metric key; a spec's own name maps too
    if key in metrics:
        return key
    return next(iter(ordered_metrics(metrics)), None)


def gain(entry: dict) -> float:
    """How far the main metric moved the good way: the biggest win heads the headline and the summary."""
    m = (entry.get("metrics") or {}).get(main_metric(entry)) or {}
    delta = m.get("delta_pct") or 0.0
    return delta if m.get("better") == "higher" else -delta


def _speed_phrase(m: dict, level: str) -> dict:
    delta, lo, hi = m["delta_pct"], m.get("ci_low_pct"), m.get("ci_high_pct")
    if m["verdict"] == "unchanged":
        return message("sum.speed_unchanged", delta=delta)
    if m["verdict"] in ("improved", "regressed") and lo is not None and hi is not None:
        a, b = sorted((abs(lo), abs(hi)))
        return message("sum.faster" if delta < 0 else "sum.slower", pct=abs(delta), level=level, lo=a, hi=b)
    if lo is not None and hi is not None:
        return message("sum.speed_ci", verdict=m["verdict"], delta=delta, level=level, lo=lo, hi=hi)
    return message("sum.speed", verdict=m["verdict"], delta=delta)
