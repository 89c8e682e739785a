"""The memory rules of the bottleneck note (analyze/rules.py): a step near a real memory limit (the
device's, the machine's, the CUDA allocator's retries), a KV cache that grows toward the device's
limit, and what a memory regression costs, said beside the bottleneck (`memory_cost`) — a cost is
never the class."""
from __future__ import annotations

from profopt_ci.analyze.facts import Evidence, Facts, op_pairs
from profopt_ci.words.i18n import message

CAPACITY_SHARE = 0.90      # † peak memory / total
RESERVED_RATIO = 1.5       # † reserved ≫ allocated (fragmentation: a cost, and at capacity its remedy)
RESERVED_GAP_MB = 1024.0
PROFILE_MEM_GROWTH = 0.10  # the cost: head's profiled peak vs base's, when no metrics are given…
PROFILE_MEM_MIN_MB = 64.0  # …and at least this much
KV_GROWTH_R = 0.9          # allocated memory rises with every decode span…
KV_CAPACITY_SHARE = 0.5    # …and already holds half the device
_MEMORY_METRICS = (("peak_memory_mb", "peak memory"), ("cuda_max_allocated_mb", "CUDA max allocated"),
                   ("cuda_max_reserved_mb", "CUDA max reserved"))



def _device_total(f: Facts) -> float | None:
    return (f.gpu or {}).get("total_mb") or (f.machine.get("device") or {}).get("memory_mb")



def _reserved_allocated(f: Facts) -> tuple[float | None, float | None]:
    alloc = f.metric("cuda_max_allocated_mb").get("head") or f.memory.get("device_peak_allocated_mb")
    resv = f.metric("cuda_max_reserved_mb").get("head") or f.memory.get("device_peak_reserved_mb")
    return resv, alloc



def _fragmented(f: Facts) -> bool:
    resv, alloc = _reserved_allocated(f)
    return bool(alloc and resv and resv > RESERVED_RATIO * alloc and resv - alloc > RESERVED_GAP_MB)



def _near_capacity(f: Facts) -> Evidence | None:
    ev: Evidence = []
    text = " ".join(str(x) for x in (f.profile.get("reason"), f.metrics.get("error")) if x).lower()
    if "out of memory" in text or "memoryerror" in text:
        ev.append(message("bottleneck.oom"))
    total = _device_total(f)
    peak = f.memory.get("device_peak_reserved_mb") or f.metric("cuda_max_reserved_mb").get("head")
    if total and peak and peak > CAPACITY_SHARE * total:
        ev.append(message("bottleneck.device_peak", peak=peak, total=total, share=peak / total))
    rss, ram = f.metric("peak_memory_mb").get("head"), f.memory_limit_mb
    if rss and ram and rss > CAPACITY_SHARE * ram:
        ev.append(message("bottleneck.rss_peak", rss=rss, ram=ram, share=rss / ram))
    retries = f.memory.get("alloc_retries") or 0
    if retries > 0:
        ev.append(message("bottleneck.alloc_retries", retries=retries))
    if ev and _fragmented(f):
        resv, alloc = _reserved_allocated(f)
        ev.append(message("bottleneck.fragmentation", reserved=resv, allocated=alloc))
    return ev or None



def _capacity_advice(f: Facts) -> dict:
    # a step whose profiled run died of a CUDA OOM has no profile to say it ran CUDA: its error does
    cuda = f.platform == "cuda" or "cuda" in str(f.profile.get("reason") or "").lower()
    if cuda and ((f.memory.get("alloc_retries") or 0) > 0 or _fragmented(f)):
        return message("next_action.near_capacity_allocator")
    if cuda or f.platform == "torch":
        return message("next_action.near_capacity")
    return message("next_action.near_capacity_host")



def memory_cost(f: Facts) -> Evidence:
    """What the change costs in memory, said apart from the bottleneck: each memory metric that
    regressed (or, without metrics, a profiled peak that grew), the CUDA allocator's fragmentation,
    and the ops that allocated most in the head where the profile says which. [] when none."""
    ev: Evidence = []
    for key, word in _MEMORY_METRICS:
        m = f.metric(key)
        if m.get("verdict") == "regressed":
            base, head = m.get("base") or 0.0, m.get("head") or 0.0
            mb = m["delta_mb"] if isinstance(m.get("delta_mb"), (int, float)) else head - base
            ev.append(message("cost.memory_metric", metric=word, mb=mb, delta_pct=m.get("delta_pct") or 0.0,
                              base=base, head=head))
    if not ev and f.base_profile:  # no metrics (a profile-only call): compare the profiles' peaks
        base_mem = f.base_profile.get("memory") or {}
        for key, word in (("device_peak_allocated_mb", "device peak allocated"),
                          ("host_peak_allocated_mb", "host peak allocated")):
            b, h = base_mem.get(key), f.memory.get(key)
            if b and h and h > (1 + PROFILE_MEM_GROWTH) * b and h - b >= PROFILE_MEM_MIN_MB:
                ev.append(message("cost.memory_profile", metric=word, mb=h - b, delta_pct=100 * (h / b - 1),
                                  base=b, head=h))
    if f.platform == "cuda" and _fragmented(f):
        resv, alloc = _reserved_allocated(f)
        ev.append(message("cost.fragmentation", reserved=resv, allocated=alloc))
    if not ev:
        return []
    top = sorted((o for o in f.profile.get("ops") or [] if (o.get("self_memory_mb") or 0) > 0),
                 key=lambda o: -o["self_memory_mb"])[:3]
    if top:
        ev.append(message("cost.top_memory_ops", ops=op_pairs(top, "self_memory_mb")))
    return ev



def _kv_growth(f: Facts) -> Evidence | None:
    growth = (f.memory.get("decode_growth") or {}).get("device")
    total = _device_total(f)
    peak = f.memory.get("device_peak_allocated_mb")
    if not (f.gpu and growth and total and peak):
        return None
    if growth["mb_per_span"] > 0 and growth["r"] >= KV_GROWTH_R and peak >= KV_CAPACITY_SHARE * total:
        return [message("bottleneck.kv_growth", mb=growth["mb_per_span"], r=growth["r"], spans=growth["spans"]),
                message("bottleneck.kv_peak", peak=peak, total=total, share=peak / total)]
    return None
