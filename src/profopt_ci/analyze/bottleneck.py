"""Profile summary (+ comparison metrics) → one bottleneck class, its evidence, the next action, and
what the change costs in memory.

In: one side's profile summary, the comparison's metrics and the base's summary. Out: {class,
rule, side, evidence, evidence_msgs, next_action, next_action_msg, cost, cost_msgs} for the
comparison entry's `bottleneck`: the evidence, next action and cost as messages (words/i18n.message:
id, figures, English) that the report says in its language, with their English also as the plain
strings `evidence`, `next_action` and `cost` that integrators read.

Pure: dicts in, dicts out. `bottleneck()` walks `rules.RULES` in priority order over the head's
profile and reports the first rule that fires: the resource that limits the head's step. Where
none fires on the head but the step got faster and one fires on the base, the note is the base's
(`side: "base"`): the change is what needs explaining, and what limited the base is what it
removed; its next action is then about the head. When none fires:
class None with evidence `bottleneck.no_clear` and the figures that were weighed (the largest
category shares, the FLOP and byte rates against the measured ones, the Python share, the op
density), because a class named on weak evidence sends the next optimization the wrong way: a
class is named only when its own figures support it (analyze/rules.py).
A side without a profile (kind "none") can still hit the metric-driven rules (capacity).
A memory regression is never the class: it is the note's `cost` (memory_rules.memory_cost), beside it.

`hot_diff` lists the ops whose self time changed most; where both profiles have each op's spread
over their chunks or steps (`self_ms_range`), a row whose base and head spreads overlap is marked
`noise` and listed after the rows that changed beyond it.
"""
from __future__ import annotations

from profopt_ci.analyze.facts import Facts, op_pairs
from profopt_ci.analyze.memory_rules import memory_cost
from profopt_ci.analyze.rules import RULES, Rule, leading
from profopt_ci.documents.comparison import revised
from profopt_ci.words.i18n import message

TOP_OPS = 30  # the length of a summary's ops list when it was cut
NO_CLEAR_ACTION = "next_action.no_clear"
NO_PROFILE_ACTION = "next_action.no_profile"
FASTER = ("step_time_ms", "throughput")  # a verdict "improved" on either: the step got faster


def bottleneck(profile: dict | None, metrics: dict | None = None, base_profile: dict | None = None) -> dict:
    """{"class", "rule", "side", "evidence", "evidence_msgs", "next_action", "next_action_msg",
    "cost", "cost_msgs"} for the head (normally), or for the base where the change removed what
    limited it."""
    facts = Facts(profile or {"kind": "none"}, metrics or {}, base_profile)
    cost = memory_cost(facts)
    fired = _first(facts)
    if fired:
        rule, evidence = fired
        return note(rule.cls, evidence, rule.action_for(facts), rule.name, cost=cost)
    if facts.kind == "none" and facts.profile.get("skipped") == "unchanged":  # compare took no profile: no need
        return note(None, [message("bottleneck.skipped")], "next_action.skipped", "skipped", cost=cost)
    if facts.kind == "none" and facts.profile.get("skipped") == "budget":  # no time was left for one
        return note(None, [message("bottleneck.budget")], "next_action.budget", "skipped", cost=cost)
    if facts.kind == "none":
        reason = facts.profile.get("reason")  # the profiler's own words, passed on
        said = message("bottleneck.no_profile", reason=str(reason)) if reason else message("bottleneck.not_profiled")
        return note(None, [said], NO_PROFILE_ACTION, None, cost=cost)
    removed = _removed(facts)
    if removed:
        return removed | {"cost": [m["text"] for m in cost], "cost_msgs": cost}
    return _fallback(facts, cost)


def _first(facts: Facts) -> tuple[Rule, list[dict]] | None:
    for rule in RULES:
        evidence = rule.signal(facts)
        if evidence:
            return rule, evidence
    return None


def _removed(head: Facts) -> dict | None:
    """The base's note, where the head's step got faster and no rule fires on it but one does on the
    base: what limited the base is what the change removed; the next action is about the head."""
    if not head.base_profile or not any(head.metric(k).get("verdict") == "improved" for k in FASTER):
        return None
    fired = _first(Facts(head.base_profile))
    if not fired:
        return None
    rule, evidence = fired
    hot = leading((head.profile.get("ops") or [])[:2])
    action = message("next_action.removed", ops=op_pairs(hot)) if hot else message("next_action.removed_plain")
    return note(rule.cls, evidence, action, rule.name, side="base")


def note(cls: str | None, evidence: list[dict], action: str | dict, rule: str | None, *, side: str = "head",
         cost: list[dict] | None = None) -> dict:
    """The comparison entry's `bottleneck`: the messages, and their English as plain strings."""
    action_msg = message(action) if isinstance(action, str) else action
    cost = cost or []
    return {"class": cls, "evidence": [m["text"] for m in evidence], "evidence_msgs": evidence,
            "next_action": action_msg["text"], "next_action_msg": action_msg, "rule": rule, "side": side,
            "cost": [m["text"] for m in cost], "cost_msgs": cost}


def _fallback(facts: Facts, cost: list[dict]) -> dict:
    """No class: the figures that were weighed, so a reader sees why none was named."""
    shares = facts.native_shares()
    ranked = [[k, v] for k, v in sorted(shares.items(), key=lambda kv: -kv[1])[:3]]
    evidence = [message("bottleneck.no_clear")]
    if ranked:
        evidence.append(message("bottleneck.categories", shares=ranked))
    flops, moved = facts.flop_rate(), facts.byte_rate()
    if flops is not None:
        evidence.append(message("bottleneck.flop_rate", gflops=flops[0], share=flops[1],
                                peak=facts.balance["matmul_gflops"]))
    if moved is not None:
        evidence.append(message("bottleneck.bandwidth", gbps=moved[0], share=moved[1], peak=facts.balance["copy_gbps"]))
    py, density = facts.counters.get("python_share"), facts.ops_per_ms()
    if py is not None:
        evidence.append(message("bottleneck.python_share", share=py))
    if density:
        evidence.append(message("bottleneck.op_density", ops=facts.counters.get("ops_per_step") or 0,
                                per_ms=density, us=1000 / density))
    hot = (facts.profile.get("ops") or [])[:2]
    if hot:
        evidence.append(message("bottleneck.hottest", ops=op_pairs(hot)))
    return note(None, evidence, NO_CLEAR_ACTION, None, cost=cost)


def hot_diff(base_profile: dict | None, head_profile: dict | None, top: int = 10) -> list[dict]:
    """The ops/functions whose self time per step grew or shrank most from base to head; where both
    profiles give each op's spread (`self_ms_range`), a row is `noise: true` when the base's and the
    head's spreads overlap (the profile cannot tell its delta from its own step-to-step noise), and
    those rows come after the others."""
    base, base_floor = _self_times(base_profile)
    head, head_floor = _self_times(head_profile)
    spreads = (_spreads(base_profile), _spreads(head_profile))
    rows = []
    for name in base.keys() | head.keys():
        b, h = base.get(name, base_floor), head.get(name, head_floor)
        row = {"name": name, "base_ms": round(b, 4), "head_ms": round(h, 4), "delta_ms": round(h - b, 4)}
        if spreads[0] is not None and spreads[1] is not None:
            lo_b, hi_b = spreads[0].get(name, (0.0, base_floor))
            lo_h, hi_h = spreads[1].get(name, (0.0, head_floor))
            row["noise"] = max(lo_b, lo_h) <= min(hi_b, hi_h)
        rows.append(row)
    rows.sort(key=lambda r: (bool(r.get("noise")), -abs(r["delta_ms"]), r["name"]))
    return rows[:top]


def _spreads(profile: dict | None) -> dict[str, tuple[float, float]] | None:
    """Each op's least and most self ms per step over the profile's chunks, or None where the profile
    has fewer than two (one run of a command, a profile from before the spreads)."""
    ops = (profile or {}).get("ops") or []
    if ((profile or {}).get("chunks") or 0) < 2 or not ops:
        return None
    out = {}
    for o in ops:
        r = o.get("self_ms_range")
        if not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) for x in r)):
            return None
        out[o["name"]] = (float(r[0]), float(r[1]))
    return out


def _self_times(profile: dict | None) -> tuple[dict[str, float], float]:
    """Self ms per name, and the value to assume for a name the list lacks: 0 when the list is
    complete, else its smallest entry (an upper bound, so a delta is never overstated)."""
    ops = (profile or {}).get("ops") or []
    times = {o["name"]: o.get("self_ms") or 0.0 for o in ops}
    floor = min(times.values()) if len(ops) >= TOP_OPS and times else 0.0
    return times, floor


def annotate(entry: dict, profiles: dict[str, dict]) -> dict:
    """The comparison entry with both profiles, the hot-op diff and the head's bottleneck note."""
    base, head = profiles.get("base"), profiles.get("head")
    try:
        return revised(entry, profile={"base": base, "head": head, "hot_diff": hot_diff(base, head)},
                       bottleneck=bottleneck(head, entry.get("metrics"), base))
    except Exception as exc:  # a profile answer the step tampered with: drop it, keep the comparison
        reason = f"profile unusable: {type(exc).__name__}: {str(exc)[:300]}"
        none = {"kind": "none", "reason": reason}
        return revised(entry, profile={"base": none, "head": none, "hot_diff": []}, bottleneck=None)
