"""Profile summary (+ comparison metrics) → one bottleneck class, its evidence and the next action.

In: one side's profile summary, the comparison's metrics and the base's summary. Out: {class,
rule, evidence, evidence_msgs, next_action, next_action_msg} for the comparison entry's
`bottleneck`: the evidence and next action as messages (words/i18n.message: id, figures, English)
that the report says in its language, with their English also as the plain strings `evidence` and
`next_action` that integrators read.

Pure: dicts in, dicts out. `bottleneck()` walks `rules.RULES` in priority order and reports the
first rule that fires. When none fires:
class None with evidence `bottleneck.no_clear` and the figures that were weighed (the largest
category shares, the FLOP and byte rates against the measured ones, the Python share, the op
density), because a class named on weak evidence sends the next optimization the wrong way: a
class is named only when its own figures support it (analyze/rules.py).
A side without a profile (kind "none") can still hit the metric-driven rules (capacity).
"""
from __future__ import annotations

from profopt_ci.analyze.facts import Facts
from profopt_ci.analyze.rules import RULES, op_pairs
from profopt_ci.documents.comparison import revised
from profopt_ci.words.i18n import message

TOP_OPS = 30  # the length of a summary's ops list when it was cut
NO_CLEAR_ACTION = "next_action.no_clear"
NO_PROFILE_ACTION = "next_action.no_profile"


def bottleneck(profile: dict | None, metrics: dict | None = None, base_profile: dict | None = None) -> dict:
    """{"class", "evidence", "evidence_msgs", "next_action", "next_action_msg", "rule"} for one side
    (normally the head)."""
    facts = Facts(profile or {"kind": "none"}, metrics or {}, base_profile)
    for rule in RULES:
        evidence = rule.signal(facts)
        if evidence:
            return note(rule.cls, evidence, rule.action, rule.name)
    if facts.kind == "none":
        reason = facts.profile.get("reason")  # the profiler's own words, passed on
        said = message("bottleneck.no_profile", reason=str(reason)) if reason else message("bottleneck.not_profiled")
        return note(None, [said], NO_PROFILE_ACTION, None)
    return _fallback(facts)


def note(cls: str | None, evidence: list[dict], action: str, rule: str | None) -> dict:
    """The comparison entry's `bottleneck`: the messages, and their English as plain strings."""
    action_msg = message(action)
    return {"class": cls, "evidence": [m["text"] for m in evidence], "evidence_msgs": evidence,
            "next_action": action_msg["text"], "next_action_msg": action_msg, "rule": rule}


def _fallback(facts: Facts) -> dict:
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
    return note(None, evidence, NO_CLEAR_ACTION, None)


def hot_diff(base_profile: dict | None, head_profile: dict | None, top: int = 10) -> list[dict]:
    """The ops/functions whose self time per step grew or shrank most from base to head."""
    base, base_floor = _self_times(base_profile)
    head, head_floor = _self_times(head_profile)
    rows = []
    for name in base.keys() | head.keys():
        b, h = base.get(name, base_floor), head.get(name, head_floor)
        rows.append({"name": name, "base_ms": round(b, 4), "head_ms": round(h, 4), "delta_ms": round(h - b, 4)})
    rows.sort(key=lambda r: (-abs(r["delta_ms"]), r["name"]))
    return rows[:top]


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
