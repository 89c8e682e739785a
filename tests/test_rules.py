"""Every bottleneck rule fires on its own fixture and on no other one; priority and fallbacks.

Host-side fixtures are literal profile summaries. The CUDA-only rules run on synthetic Kineto
traces (there is no GPU here) that go through the real `kineto.summarize_trace`, so the device
figures they read (busy share, memcpy, NCCL, syncs, device memory) are computed, not typed in.
"""
from __future__ import annotations

import copy

import pytest

from profopt_ci.analyze import bottleneck as analyze
from profopt_ci.analyze.facts import Facts
from profopt_ci.analyze.rules import CLASSES, RULES
from profopt_ci.profile import kineto

MACHINE = {"matmul_gflops": 200.0, "copy_gbps": 20.0, "ridge_flops_per_byte": 10.0, "ram_mb": 24000.0,
           "device": {"matmul_gflops": 50000.0, "copy_gbps": 3000.0, "ridge_flops_per_byte": 16.7,
                      "memory_mb": 143000.0}}

# A host-only profile where nothing stands out: no rule fires on it.
NEUTRAL = {
    "kind": "torch", "reason": None, "trace_path": None, "step_time_ms": 10.0,
    "phases": {"forward": 4.0, "backward": 5.0, "other": 1.0},
    "phase_shares": {"forward": 0.4, "backward": 0.5, "other": 0.1},
    "ops": [{"name": "aten::addmm", "self_ms": 4.0, "total_ms": 4.2, "calls": 4, "category": "gemm",
             "self_memory_mb": 1.0, "flops": 1e7},
            {"name": "aten::gelu", "self_ms": 3.0, "total_ms": 3.0, "calls": 4, "category": "elementwise",
             "self_memory_mb": 0.5, "flops": 0.0}],
    "counters": {"ops_per_step": 40, "small_ops_share": 0.3, "sync_ms": 0.0, "python_share": 0.2,
                 "flops_per_step": None, "bytes_per_step": None},
    "category_shares": {"gemm": 0.45, "elementwise": 0.3, "reduction/norm": 0.15, "framework": 0.1},
    "machine": MACHINE,
}


def host(**changes) -> dict:
    profile = copy.deepcopy(NEUTRAL)
    for key, value in changes.items():
        profile[key] = value
    return profile


# ---- synthetic CUDA traces ----------------------------------------------------------------------

STEP_US = 10_000.0


def X(name, ts, dur, cat="cpu_op", pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(name, ts, dur, stream=7):
    return X(name, ts, dur, cat="kernel", pid=0, tid=stream)


def memcpy(name, ts, dur):
    return X(name, ts, dur, cat="gpu_memcpy", pid=0, tid=7)


def device_mem(ts, allocated_mb, reserved_mb=None):
    mb = 2**20
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "s": "t",
            "args": {"Device Type": 1, "Bytes": mb, "Total Allocated": allocated_mb * mb,
                     "Total Reserved": (reserved_mb or allocated_mb) * mb}}


def launches(t0, names, wait_from=None):
    """Host ops that each launch one kernel, then the capture's end-of-step device wait."""
    out, t = [], t0 + 50
    for name in names:
        out += [X(name, t, 40), X("cudaLaunchKernel", t + 10, 8, cat="cuda_runtime")]
        t += 50
    t = max(t, wait_from or 0)
    out += [X(kineto.CAPTURE_SYNC, t + 10, t0 + STEP_US - t - 20, cat="user_annotation"),
            X("cudaDeviceSynchronize", t + 15, t0 + STEP_US - t - 30, cat="cuda_runtime")]
    return out


def balanced_kernels(t0, start=100.0, end=9900.0):
    """GEMM ≈ elementwise ≈ 49% of device time, a little NCCL: neither compute nor bandwidth wins."""
    span = (end - start - 100) / 2
    return [kernel("ampere_sgemm_128x64_tn", t0 + start, span),
            kernel("vectorized_elementwise_kernel<add>", t0 + start + span, span),
            kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t0 + end - 100, 100, stream=9)]


def gpu_trace(body, steps: int = 3, total_mb: float = 143_000.0) -> dict:
    events = []
    for i in range(steps):
        t0 = 1_000_000.0 + i * STEP_US
        events.append(X(f"ProfilerStep#{i + 2}", t0, STEP_US, cat="user_annotation"))
        events += body(t0)
    return {"traceEvents": events, "deviceProperties": [{"id": 0, "totalGlobalMem": total_mb * 2**20}]}


def gpu_profile(body, **kw) -> dict:
    profile = {"kind": "torch", "reason": None, "trace_path": None}
    profile.update(kineto.summarize_trace(gpu_trace(body, **kw)))
    profile["machine"] = MACHINE
    return profile


def gpu_neutral(t0):
    return launches(t0, ["aten::mm", "aten::add", "c10d::allreduce_"]) + balanced_kernels(t0)


def gpu_sync(t0):
    # .item() every step: the host blocks ~1 ms in cudaStreamSynchronize and copies a scalar back.
    out = [X("aten::item", t0 + 20, 1000), X("aten::_local_scalar_dense", t0 + 25, 990),
           X("cudaMemcpyAsync", t0 + 30, 10, cat="cuda_runtime"),
           X("cudaStreamSynchronize", t0 + 45, 960, cat="cuda_runtime"),
           memcpy("Memcpy DtoH (Device -> Pinned)", t0 + 1000, 2)]
    return out + [dict(e, ts=e["ts"] + 1000) if e["cat"] != "kernel" else e for e in launches(t0, ["aten::mm"])] \
        + balanced_kernels(t0)


def gpu_transfer(t0):
    return launches(t0, ["aten::to", "aten::mm"]) + [memcpy("Memcpy HtoD (Pageable -> Device)", t0 + 50, 600)] \
        + balanced_kernels(t0, start=700)


def gpu_comm(t0):
    return launches(t0, ["aten::mm", "aten::add", "c10d::allreduce_"]) + [
        kernel("ampere_sgemm_128x64_tn", t0 + 100, 3500),
        kernel("vectorized_elementwise_kernel<add>", t0 + 3600, 3300),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t0 + 6900, 3000, stream=9)]


def gpu_launch(t0):
    # 280 kernels of 5 µs, each launched 30 µs after the previous: the GPU idles 85% of the step.
    ks = [kernel("ampere_sgemm_32x32_tn" if i % 2 else "elementwise_kernel<mul>", t0 + 100 + 30 * i, 5)
          for i in range(280)]
    ks += [kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t0 + 9000 + 30 * i, 5, stream=9) for i in range(20)]
    return launches(t0, ["aten::mm"] * 20) + ks


def gpu_kv_growth(t0):
    # Eight decode steps; allocated device memory rises 100 MB with each (80 GB of 143 GB in use).
    out = launches(t0, ["aten::mm"], wait_from=t0 + 9100) + balanced_kernels(t0)
    for i in range(8):
        start = t0 + 1000 + 1000 * i
        out.append(X("profopt.phase.decode", start, 900, cat="user_annotation"))
        out.append(device_mem(start + 800, 80_000 + 100 * i))
    return out


FIXTURES = {
    "near capacity": (lambda: (host(), {"peak_memory_mb": {"base": 22000.0, "head": 23000.0,
                                                           "delta_pct": 4.5, "verdict": "unchanged"}})),
    "KV-cache growth": (lambda: (gpu_profile(gpu_kv_growth), None)),
    "host-device sync": (lambda: (gpu_profile(gpu_sync), None)),
    "data loading": (lambda: (host(phase_shares={"data_loading": 0.2, "forward": 0.3, "backward": 0.5},
                                   phases={"data_loading": 2.0, "forward": 3.0, "backward": 5.0}), None)),
    "host-to-device transfer": (lambda: (gpu_profile(gpu_transfer), None)),
    "communication": (lambda: (gpu_profile(gpu_comm), None)),
    "GPU launch overhead": (lambda: (gpu_profile(gpu_launch), None)),
    "optimizer launch overhead": (lambda: (host(
        phase_shares={"forward": 0.3, "backward": 0.35, "optimizer": 0.35},
        phase_detail={"optimizer": {"ops_per_step": 300, "small_ops_share": 0.95,
                                    "multi_tensor_ops_per_step": 0}}), None)),
    "framework overhead": (lambda: (host(counters={**NEUTRAL["counters"], "python_share": 0.7,
                                                   "ops_per_step": 900}), None)),
    "interpreter overhead": (lambda: ({"kind": "cprofile", "step_time_ms": 40.0, "phases": {}, "phase_shares": {},
                                       "ops": [{"name": "loop.py:3(f)", "self_ms": 39.0, "category": "python"}],
                                       "counters": {"python_share": 0.97, "py_lines_per_ms": 12000.0},
                                       "machine": MACHINE}, None)),
    "decode bandwidth": (lambda: (host(phase_detail={"decode": {"gbps": 15.0, "ops_per_step": 100}}), None)),
    "memory bandwidth": (lambda: (host(
        category_shares={"elementwise": 0.55, "copy/memory": 0.15, "gemm": 0.3},
        counters={**NEUTRAL["counters"], "flops_per_step": 1e6, "bytes_per_step": 1e8}), None)),
    "compute": (lambda: (host(
        category_shares={"gemm": 0.8, "elementwise": 0.2},
        counters={**NEUTRAL["counters"], "flops_per_step": 1e9, "bytes_per_step": 1e7}), None)),
}


def test_every_rule_has_a_fixture_and_a_known_class():
    assert set(FIXTURES) == {r.name for r in RULES}
    assert {r.cls for r in RULES} <= set(CLASSES)
    assert len({r.name for r in RULES}) == len(RULES)


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_rule_fires_only_on_its_own_fixture(fixture):
    profile, metrics = FIXTURES[fixture]()
    facts = Facts(profile, metrics or {})
    fired = [r.name for r in RULES if r.signal(facts)]
    assert fired == [fixture]
    result = analyze.bottleneck(profile, metrics)
    rule = next(r for r in RULES if r.name == fixture)
    assert result["rule"] == fixture and result["class"] == rule.cls and result["side"] == "head"
    assert result["next_action_msg"] == rule.action_for(facts)
    assert result["evidence"] and all(isinstance(e, str) and any(c.isdigit() for c in e)
                                      for e in result["evidence"][:1])


def test_neutral_profiles_fire_nothing():
    for profile in (host(), gpu_profile(gpu_neutral)):
        facts = Facts(profile)
        assert [r.name for r in RULES if r.signal(facts)] == []


def test_synthetic_gpu_figures():
    p = gpu_profile(gpu_neutral)
    g = p["gpu"]
    assert g["kernels_per_step"] == 3 and g["busy_share"] == pytest.approx(0.98, abs=0.005)
    assert g["sync_ms"] == 0  # the capture's own end-of-step wait is not the user's sync
    assert g["total_mb"] == pytest.approx(143_000)
    assert p["category_shares"]["gemm"] == pytest.approx(0.49, abs=0.01)
    sync = gpu_profile(gpu_sync)["gpu"]
    assert sync["sync_ms"] == pytest.approx(1.0, abs=0.01) and sync["dtoh_per_step"] == 1
    comm = gpu_profile(gpu_comm)["gpu"]
    assert comm["comm_share"] == pytest.approx(0.30, abs=0.01) and comm["comm_overlap"] == 0
    launch = gpu_profile(gpu_launch)["gpu"]
    assert launch["median_kernel_us"] == 5 and launch["busy_share"] == pytest.approx(0.15, abs=0.01)
    kv = gpu_profile(gpu_kv_growth)["memory"]["decode_growth"]["device"]
    assert kv == {"mb_per_span": pytest.approx(100.0), "r": pytest.approx(1.0), "spans": 8}


def test_priority_capacity_then_sync_then_data_then_launch():
    both = host(phase_shares={"data_loading": 0.2, "optimizer": 0.35, "forward": 0.45},
                phase_detail={"optimizer": {"ops_per_step": 300, "small_ops_share": 0.95,
                                            "multi_tensor_ops_per_step": 0}})
    assert analyze.bottleneck(both)["rule"] == "data loading"
    # a memory regression is what the change costs, not what limits the step's time
    regressed = {"peak_memory_mb": {"base": 100.0, "head": 150.0, "delta_pct": 50.0, "delta_mb": 50.0,
                                    "verdict": "regressed"}}
    b = analyze.bottleneck(both, regressed)
    assert (b["class"], b["rule"]) == ("data loading", "data loading")
    assert b["cost"][0] == "peak memory +50.0 MB (+50.0%, 100.0 → 150.0 MB)"
    sync = gpu_profile(gpu_sync)
    sync["phase_shares"] = {"data_loading": 0.2, **sync["phase_shares"]}
    assert analyze.bottleneck(sync)["rule"] == "host-device sync"
    order = [r.cls for r in RULES]
    rank = {"memory capacity": 0, "host-device sync": 1, "data loading": 2, "communication": 3,
            "launch/framework overhead": 4, "interpreter overhead": 4, "memory bandwidth": 5, "compute": 5}
    assert [rank[c] for c in order] == sorted(rank[c] for c in order)


def test_optimizer_rule_quiet_once_fused():
    fused = host(phase_shares={"forward": 0.3, "backward": 0.35, "optimizer": 0.35},
                 phase_detail={"optimizer": {"ops_per_step": 146, "small_ops_share": 0.97,
                                             "multi_tensor_ops_per_step": 2}})
    assert analyze.bottleneck(fused)["rule"] != "optimizer launch overhead"


def test_gpu_capacity_and_fragmentation():
    near = gpu_profile(lambda t0: gpu_neutral(t0) + [device_mem(t0 + 500, 120_000, 135_000)])
    b = analyze.bottleneck(near)
    assert b["rule"] == "near capacity" and "135000 MB of 143000 MB" in b["evidence"][0]
    assert b["next_action_msg"]["id"] == "next_action.near_capacity"  # torch on a GPU: its own memory levers
    # reserved ≫ allocated far from the device's limit: a cost, not the class; the allocator's
    # setting is named where it matters, at the limit
    frag = gpu_profile(lambda t0: gpu_neutral(t0) + [device_mem(t0 + 500, 20_000, 60_000)])
    f = analyze.bottleneck(frag)
    assert f["class"] is None and f["cost"] == [
        "the CUDA allocator reserves 60000 MB for 20000 MB allocated (fragmentation)"]
    both = gpu_profile(lambda t0: gpu_neutral(t0) + [device_mem(t0 + 500, 60_000, 135_000)])
    b = analyze.bottleneck(both)
    assert b["class"] == "memory capacity" and "(fragmentation)" in b["evidence"][-1]
    assert b["next_action_msg"]["id"] == "next_action.near_capacity_allocator"
    assert "expandable_segments" in b["next_action"]
    oom = analyze.bottleneck({"kind": "none", "reason": "torch.OutOfMemoryError: CUDA out of memory"})
    assert oom["class"] == "memory capacity" and oom["next_action_msg"]["id"] == "next_action.near_capacity"
    host_oom = analyze.bottleneck({"kind": "none", "reason": "profiled run failed: MemoryError"})
    assert host_oom["next_action_msg"]["id"] == "next_action.near_capacity_host"


def test_capacity_is_named_only_near_a_real_limit():
    # the demo's case: 28 MB on a 24 GB machine is no limit, whatever the regression
    small = {"peak_memory_mb": {"base": 23.8, "head": 28.2, "delta_pct": 18.2, "delta_mb": 4.4, "verdict": "regressed"}}
    b = analyze.bottleneck(host(), small)
    assert b["class"] != "memory capacity" and b["cost"][0] == "peak memory +4.4 MB (+18.2%, 23.8 → 28.2 MB)"
    near = {"peak_memory_mb": {"base": 20000.0, "head": 23000.0, "verdict": "regressed", "delta_pct": 15.0}}
    assert analyze.bottleneck(host(), near)["evidence"][0] == "peak RSS 23000 MB of 24000 MB RAM (96%)"
    # a container's cgroup limit is where the host runs out, not the machine's RAM
    capped = host(machine={**MACHINE, "mem_limit_mb": 2048.0})
    mid = {"peak_memory_mb": {"base": 1900.0, "head": 2000.0, "verdict": "unchanged"}}
    assert analyze.bottleneck(capped, mid)["evidence"][0] == "peak RSS 2000 MB of 2048 MB RAM (98%)"
    assert analyze.bottleneck(host(), mid)["class"] != "memory capacity"
    # the CUDA allocator freeing its cache to retry: at the device's limit whatever the peak says
    retried = gpu_profile(gpu_neutral)
    retried["memory"] = {**retried["memory"], "alloc_retries": 3}
    b = analyze.bottleneck(retried)
    assert b["class"] == "memory capacity" and "retried 3 allocations" in b["evidence"][0]
    assert b["next_action_msg"]["id"] == "next_action.near_capacity_allocator"
    # plain Python at the host's limit: no torch levers
    py = {"kind": "cprofile", "step_time_ms": 40.0, "ops": [], "counters": {}, "machine": MACHINE}
    b = analyze.bottleneck(py, near)
    assert b["next_action_msg"]["id"] == "next_action.near_capacity_host"
    assert not {"torch", "CUDA", "bf16"} & set(b["next_action"].replace(",", " ").replace("(", " ").split())


def test_the_memory_cost_names_the_ops_that_allocated_it():
    b = analyze.bottleneck(host(), {"peak_memory_mb": {"base": 100.0, "head": 150.0, "delta_pct": 50.0,
                                                       "verdict": "regressed"}})
    assert b["class"] is None  # the time bottleneck: none here (NEUTRAL)
    assert b["cost"] == ["peak memory +50.0 MB (+50.0%, 100.0 → 150.0 MB)",
                         "allocated most in the head: aten::addmm 1 MB/step, aten::gelu 0.5 MB/step"]
    unchanged = analyze.bottleneck(host(), {"peak_memory_mb": {"base": 100.0, "head": 101.0, "verdict": "unchanged"}})
    assert unchanged["cost"] == [] and unchanged["cost_msgs"] == []


def test_the_memory_cost_from_the_base_profile_without_metrics():
    base = gpu_profile(lambda t0: gpu_neutral(t0) + [device_mem(t0 + 500, 2_000)])
    head = gpu_profile(lambda t0: gpu_neutral(t0) + [device_mem(t0 + 500, 3_000)])
    b = analyze.bottleneck(head, None, base)
    assert b["class"] is None
    assert b["cost"][0] == "device peak allocated +1000 MB in the profiles (+50%, 2000 → 3000 MB)"
    assert analyze.bottleneck(base, None, base)["cost"] == []  # nothing grew


def test_cprofile_interpreter_rule_needs_the_line_rate():
    loop = {"kind": "cprofile", "step_time_ms": 40.0, "phases": {}, "phase_shares": {},
            "ops": [{"name": "neighbors.py:19(count_close_pairs)", "self_ms": 39.0, "category": "python"}],
            "counters": {"python_share": 0.97, "py_lines_per_ms": 12000.0}, "machine": MACHINE}
    b = analyze.bottleneck(loop)
    assert b["rule"] == "interpreter overhead" and "12000 Python lines" in b["evidence"][1]
    numpy_body = copy.deepcopy(loop)
    numpy_body["counters"]["py_lines_per_ms"] = 4.0  # the time is in C under one Python line
    assert analyze.bottleneck(numpy_body)["class"] is None


def test_fallbacks():
    fallback = analyze.bottleneck(host())  # GEMM the largest share, but no rate says it limits the step
    assert (fallback["class"], fallback["rule"]) == (None, None)
    assert fallback["evidence"] == ["no clear bottleneck",
                                    "native time by category: gemm 45%, elementwise 30%, reduction/norm 15%",
                                    "python share 20%", "40 op calls per step, 4 per ms (~250 µs each)",
                                    "hottest: aten::addmm 4 ms, aten::gelu 3 ms"]
    assert fallback["next_action_msg"]["id"] == "next_action.no_clear"
    flat = analyze.bottleneck(host(category_shares={"gemm": 0.3, "elementwise": 0.35, "framework": 0.35}))
    assert flat["class"] is None and flat["evidence"][0] == "no clear bottleneck"
    none = analyze.bottleneck({"kind": "none", "reason": "not a Python process: no profile taken"})
    assert none["class"] is None and none["evidence"] == ["no profile: not a Python process: no profile taken"]
    assert analyze.bottleneck(None)["class"] is None


def _rates(flops: float | None, nbytes: float | None, shares: dict, python: float = 0.05, ops: float = 20) -> dict:
    return host(category_shares=shares, counters={**NEUTRAL["counters"], "flops_per_step": flops,
                                                  "bytes_per_step": nbytes, "python_share": python,
                                                  "ops_per_step": ops, "small_ops_time_share": 0.0})


def test_a_class_is_named_only_when_its_own_rate_supports_it():
    gemm, memory = {"gemm": 0.9, "elementwise": 0.1}, {"elementwise": 0.8, "copy/memory": 0.2}
    # 10 ms steps against 200 GFLOP/s and 20 GB/s: 1.2e9 FLOP = 60% of the rate, 2e7 = 1%
    assert analyze.bottleneck(_rates(1.2e9, 1e7, gemm))["class"] == "compute"
    weak = analyze.bottleneck(_rates(2e7, 1e6, gemm))
    assert weak["class"] is None and "1% of the measured 200 GFLOP/s matmul rate" in " ".join(weak["evidence"])
    # 1.2e8 bytes in 10 ms = 12 GB/s, 60% of the copy bandwidth; 1.46e6 = 0.146 GB/s, under 1%
    moved = analyze.bottleneck(_rates(None, 1.2e8, memory))
    assert moved["class"] == "memory bandwidth" and moved["evidence"][0].startswith("moves ~12 GB/s, 60%")
    idle = analyze.bottleneck(_rates(None, 1.46e6, memory))
    assert idle["class"] is None and "moves ~0.146 GB/s, 1% of the measured 20 GB/s" in " ".join(idle["evidence"])


def test_overhead_is_framework_with_many_short_ops_and_interpreter_with_few():
    many = _rates(None, None, {"elementwise": 1.0}, python=0.45, ops=2000)
    many["counters"]["small_ops_time_share"] = 0.5
    b = analyze.bottleneck(many)
    assert (b["class"], b["rule"]) == ("launch/framework overhead", "framework overhead")
    assert "2000 op calls per step, 200 per ms (~5 µs each)" in b["evidence"]
    # with the machine's cost of a trivial op: op calls × that cost, over the step the rounds timed
    calls = _rates(None, None, {"gemm": 0.5, "elementwise": 0.5}, python=0.2, ops=1900)
    calls["machine"] = {**MACHINE, "op_floor_us": 2.0}
    b = analyze.bottleneck(calls, {"step_time_ms": {"base": 6.0, "head": 6.0}})
    assert b["rule"] == "framework overhead" and b["evidence"][0] == (
        "83% of the step is overhead: 20% outside native ops (Python and glue) + 1900 op calls × 2 µs, what a "
        "trivial op costs here (63% of the 6 ms step)")
    assert analyze.bottleneck(calls, {"step_time_ms": {"head": 60.0}})["class"] is None  # the same calls in a 60 ms step
    loop = _rates(None, None, {}, python=1.0, ops=0)  # a pure-Python loop in a module that imports torch
    b = analyze.bottleneck(loop)
    assert (b["class"], b["rule"]) == ("interpreter overhead", "interpreter overhead")
    assert b["evidence"][0].startswith("100% of the step outside native ops with 0 op calls per step")


def test_hot_diff_largest_changes_first():
    base = {"ops": [{"name": "a", "self_ms": 5.0}, {"name": "b", "self_ms": 1.0}, {"name": "c", "self_ms": 2.0}]}
    head = {"ops": [{"name": "a", "self_ms": 2.0}, {"name": "b", "self_ms": 1.5}, {"name": "d", "self_ms": 0.5}]}
    assert analyze.hot_diff(base, head, top=3) == [
        {"name": "a", "base_ms": 5.0, "head_ms": 2.0, "delta_ms": -3.0},
        {"name": "c", "base_ms": 2.0, "head_ms": 0.0, "delta_ms": -2.0},
        {"name": "b", "base_ms": 1.0, "head_ms": 1.5, "delta_ms": 0.5}]
    # A name missing from a cut (full) list is not assumed to be 0 there: at most the list's smallest.
    full = {"ops": [{"name": f"op{i}", "self_ms": 10.0 - i * 0.1} for i in range(analyze.TOP_OPS)]}
    row = next(r for r in analyze.hot_diff(full, {"ops": [{"name": "new", "self_ms": 9.0}]}, top=100)
               if r["name"] == "new")
    assert row["base_ms"] == pytest.approx(10.0 - (analyze.TOP_OPS - 1) * 0.1)


# ---- the side that matters, and next actions that fit the step ----------------------------------

LOOP = {"kind": "cprofile", "cuda": False, "step_time_ms": 13.0, "phases": {}, "phase_shares": {},
        "ops": [{"name": "neighbors.py(count_close_pairs)", "self_ms": 26.4, "category": "python"},
                {"name": "timing.py(record)", "self_ms": 0.005, "category": "python"}],
        "counters": {"python_share": 0.99, "py_lines_per_ms": 12000.0}, "machine": {"ram_mb": 24000.0}}
NUMPY = {"kind": "cprofile", "cuda": False, "step_time_ms": 2.3, "phases": {}, "phase_shares": {},
         "ops": [{"name": "<method 'reduce' of 'numpy.ufunc' objects>", "self_ms": 1.28, "category": "builtin"},
                 {"name": "neighbors.py(count_close_pairs)", "self_ms": 1.05, "category": "python"}],
         "counters": {"python_share": 0.45, "py_lines_per_ms": 4.0}, "machine": {"ram_mb": 24000.0}}
DEMO_METRICS = {"step_time_ms": {"base": 13.2, "head": 2.36, "delta_pct": -82.2, "verdict": "improved"},
                "peak_memory_mb": {"base": 23.6, "head": 27.9, "delta_pct": 18.5, "delta_mb": 4.36,
                                   "verdict": "regressed"}}
TORCH_WORDS = {"torch", "torch.compile", "CUDA", "PYTORCH_CUDA_ALLOC_CONF", "DataLoader", "AMP", "TF32", "bf16"}


def _words(text: str) -> set[str]:
    return {w.strip(".,;:()") for w in text.replace("(", " ").replace("/", " ").split()}


def test_the_demo_names_the_bases_interpreter_overhead_and_its_memory_cost_apart():
    """profopt demo: a pure-Python loop (base) against its numpy rewrite (head), no torch. The head's
    step shows no single bottleneck; what limited the base, and what the change removed, is the
    interpreter; the 4 MB of memory it costs is its own line; no torch or CUDA advice."""
    b = analyze.bottleneck(NUMPY, DEMO_METRICS, LOOP)
    assert (b["class"], b["rule"], b["side"]) == ("interpreter overhead", "interpreter overhead", "base")
    assert b["evidence"] == ["99% of profiled self time in pure-Python functions",
                             "12000 Python lines executed per ms of step",
                             "hottest: neighbors.py(count_close_pairs) 26.4 ms"]  # profopt's own record() left out
    assert b["cost"] == ["peak memory +4.4 MB (+18.5%, 23.6 → 27.9 MB)"]
    assert b["next_action_msg"]["id"] == "next_action.removed"
    assert "<method 'reduce' of 'numpy.ufunc' objects> 1.28 ms" in b["next_action"]
    assert not TORCH_WORDS & _words(b["next_action"])
    # no base profile, or a step that did not get faster: the head's own note
    assert analyze.bottleneck(NUMPY, DEMO_METRICS)["side"] == "head"
    slower = {**DEMO_METRICS, "step_time_ms": {**DEMO_METRICS["step_time_ms"], "verdict": "regressed"}}
    assert analyze.bottleneck(NUMPY, slower, LOOP)["class"] is None
    # the head's own class, where one fires on it, is the note: what limits the step now
    assert analyze.bottleneck(LOOP, DEMO_METRICS, NUMPY)["side"] == "head"


def test_python_advice_names_the_hot_function_and_fits_python_code():
    b = analyze.bottleneck(LOOP)
    assert b["next_action_msg"] == {"id": "next_action.interpreter_overhead_fn",
                                    "args": {"fn": "neighbors.py(count_close_pairs)"}, "text": b["next_action"]}
    assert b["next_action"].startswith("make neighbors.py(count_close_pairs) do less: a better algorithm first")
    assert "only if its data are numbers in arrays, which the profile cannot tell" in b["next_action"]
    assert not TORCH_WORDS & _words(b["next_action"]) and "numba" not in b["next_action"]
    nameless = analyze.bottleneck({**LOOP, "ops": []})
    assert nameless["next_action_msg"]["id"] == "next_action.interpreter_overhead"
    loop = _rates(None, None, {}, python=1.0, ops=0)  # Python between few ops, in a torch step
    assert analyze.bottleneck(loop)["next_action_msg"]["id"] == "next_action.interpreter_overhead_torch"


def test_every_next_action_fits_the_steps_platform():
    """No torch or CUDA advice for a step without them, CPU advice for a CPU step."""
    py_data = {**LOOP, "ops": [], "counters": {"python_share": 0.3}, "phase_shares": {"data_loading": 0.3},
               "phases": {"data_loading": 4.0}}
    b = analyze.bottleneck(py_data)
    assert b["rule"] == "data loading" and b["next_action_msg"]["id"] == "next_action.data_loading_python"
    assert not TORCH_WORDS & _words(b["next_action"])
    torch_data = FIXTURES["data loading"]()[0]
    assert analyze.bottleneck(torch_data)["next_action_msg"]["id"] == "next_action.data_loading"
    cpu_gemm = FIXTURES["compute"]()[0]
    b = analyze.bottleneck(cpu_gemm)
    assert b["next_action_msg"]["id"] == "next_action.compute_cpu" and not {"TF32", "AMP"} & _words(b["next_action"])
    assert "thread settings" in b["next_action"]
    cuda_gemm = {**cpu_gemm, "cuda": True}
    b = analyze.bottleneck(cuda_gemm)
    assert b["next_action_msg"]["id"] == "next_action.compute" and "thread settings" not in b["next_action"]
    cpu_copy = FIXTURES["memory bandwidth"]()[0]
    b = analyze.bottleneck(cpu_copy)
    assert b["next_action_msg"]["id"] == "next_action.memory_bandwidth_cpu"
    assert "channels_last" not in b["next_action"] and "fp16" not in b["next_action"]
    for name, make in FIXTURES.items():  # the rest: each says what its platform has
        profile, metrics = make()
        b = analyze.bottleneck(profile, metrics)
        if not Facts(profile, metrics or {}).gpu:
            assert "CUDA" not in b["next_action"] and "GPU" not in b["next_action"], name


def test_platform_of_the_step():
    assert Facts(LOOP).platform == "python"
    assert Facts(host()).platform == "torch"
    assert Facts(gpu_profile(gpu_neutral)).platform == "cuda"
    assert Facts({"kind": "torch", "cuda": True}).platform == "cuda"
    assert Facts({"kind": "none"}, {"cuda_max_allocated_mb": {"head": 10.0}}).platform == "cuda"
    assert Facts({"kind": "none"}).platform == "unknown"


def test_hot_diff_marks_a_delta_within_the_profiles_own_noise_and_lists_it_last():
    """A function the change does not touch, −30 ms between one profiled run per side, but its
    self time per step swings over that whole range within each run: noise, listed after a real
    change (the parser PR's report, issue 40)."""
    def prof(ops):
        return {"kind": "cprofile", "chunks": 5,
                "ops": [{"name": n, "self_ms": ms, "self_ms_range": list(r)} for n, ms, r in ops]}
    base = prof([("inline.py(parse)", 80.0, (40.0, 120.0)), ("block.py(scan)", 20.0, (19.0, 21.0))])
    head = prof([("inline.py(parse)", 50.0, (45.0, 110.0)), ("block.py(scan)", 10.0, (9.5, 10.5)),
                 ("block.py(fast)", 1.0, (0.9, 1.1))])
    rows = analyze.hot_diff(base, head)
    assert [(r["name"], r["noise"]) for r in rows] == [
        ("block.py(scan)", False), ("block.py(fast)", False), ("inline.py(parse)", True)]
    assert rows[-1]["delta_ms"] == -30.0
    # without spreads on both sides (one run of a command, an older profile): nothing marked
    old = {"ops": [{"name": "inline.py(parse)", "self_ms": 80.0}]}
    assert all("noise" not in r for r in analyze.hot_diff(old, head))
    assert all("noise" not in r for r in analyze.hot_diff({**base, "chunks": 1}, head))
