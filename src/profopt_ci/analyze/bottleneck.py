"""Profile summary (+ comparison metrics) → one bottleneck class, its evidence and the next action.

In: one side's profile summary, the comparison's metrics and the base's summary. Out: {class,
rule, evidence, next_action} for the comparison entry's `bottleneck`.

Pure: dicts in, dicts out. `bottleneck()` walks `rules.RULES` in priority order and reports the
first rule that fires. When none fires:
- GEMM/conv/attention is the largest category of native time and at least FALLBACK_GEMM of it →
  "compute" (rule "fallback: GEMM largest"), since that is where a faster kernel would pay;
- otherwise class None with evidence "no clear bottleneck" and the largest shares, because a class
  named on weak evidence sends the next optimization the wrong way.
A side without a profile (kind "none") can still hit the metric-driven rules (capacity).
"""
from __future__ import annotations

from profopt_ci.analyze.rules import RULES, Facts

FALLBACK_GEMM = 0.35
TOP_OPS = 30  # the length of a summary's ops list when it was cut
NO_CLEAR_ACTION = ("no single resource dominates: optimize the hottest op or function below, or profile "
                   "with a larger input so one cost stands out")
NO_PROFILE_ACTION = "set profile: torch or cprofile (a Python callable or command) to get a bottleneck note"


def bottleneck(profile: dict | None, metrics: dict | None = None, base_profile: dict | None = None) -> dict:
    """{"class", "evidence", "next_action", "rule"} for one side (normally the head)."""
    facts = Facts(profile or {"kind": "none", "reason": "no profile taken"}, metrics or {}, base_profile)
    for rule in RULES:
        evidence = rule.signal(facts)
        if evidence:
            return {"class": rule.cls, "evidence": evidence, "next_action": rule.next_action,
                    "rule": rule.name}
    if facts.kind == "none":
        reason = facts.profile.get("reason") or "no profile taken"
        return {"class": None, "evidence": [f"no profile: {reason}"], "next_action": NO_PROFILE_ACTION,
                "rule": None}
    return _fallback(facts)


def _fallback(facts: Facts) -> dict:
    shares = facts.native_shares()
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    listing = ", ".join(f"{k} {100 * v:.0f}%" for k, v in ranked[:3])
    if ranked and ranked[0][0] == "gemm" and ranked[0][1] >= FALLBACK_GEMM:
        rule = next(r for r in RULES if r.cls == "compute")
        return {"class": "compute", "evidence": [f"GEMM is the largest share of native time ({listing})"],
                "next_action": rule.next_action, "rule": "fallback: GEMM largest"}
    evidence = ["no clear bottleneck"]
    if listing:
        evidence.append(f"native time by category: {listing}")
    py = facts.counters.get("python_share")
    if py is not None:
        evidence.append(f"python share {100 * py:.0f}%")
    hot = (facts.profile.get("ops") or [])[:2]
    if hot:
        evidence.append("hottest: " + ", ".join(f"{o['name']} {o['self_ms']:.3g} ms" for o in hot))
    return {"class": None, "evidence": evidence, "next_action": NO_CLEAR_ACTION, "rule": None}


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
