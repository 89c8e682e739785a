"""Trace → summary arithmetic on small literal traces: phases, overlaps, self time, memory, FLOPs."""
from __future__ import annotations

import pytest

from profopt_ci.profile import kineto, opcats


def X(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def step(i, t0, dur=1000.0):
    return X(f"ProfilerStep#{i}", t0, dur, cat="user_annotation")


def trace(*events):
    return {"traceEvents": list(events)}


def test_innermost_label_owns_the_time_and_shares_sum_to_one():
    t = trace(
        step(2, 0),
        X("profopt.phase.decode", 100, 600, cat="user_annotation"),
        X("profopt.phase.sampling", 500, 100, cat="user_annotation"),   # nested in decode
        X("aten::mm", 150, 200),
        X("aten::argmax", 520, 50),
    )
    s = kineto.summarize_trace(t)
    assert s["phases"] == {"decode": pytest.approx(0.5), "sampling": pytest.approx(0.1),
                           "other": pytest.approx(0.4)}
    assert sum(s["phase_shares"].values()) == pytest.approx(1.0)
    # decode's own span (inclusive of sampling) is what its detail and growth figures read
    assert s["phase_detail"]["decode"]["ops_per_step"] == 2


def test_backward_engine_spans_merge_unless_other_work_sits_between():
    t = trace(
        step(2, 0),
        X("aten::ones_like", 10, 10),
        X("autograd::engine::evaluate_function: AddmmBackward0", 100, 100),
        X("autograd::engine::evaluate_function: TBackward0", 220, 50),     # 20 µs engine gap: merged
        X("aten::add_", 300, 50),                                          # other work: a new span
        X("autograd::engine::evaluate_function: MulBackward0", 400, 100),
        X("Optimizer.step#AdamW.step", 600, 300, cat="user_annotation"),
        X("aten::lerp_", 650, 5),
        X("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 950, 40, cat="user_annotation"),
    )
    s = kineto.summarize_trace(t)
    assert s["phases"]["backward"] == pytest.approx(0.27)   # 100..270 and 400..500
    assert s["phases"]["optimizer"] == pytest.approx(0.3)
    assert s["phases"]["data_loading"] == pytest.approx(0.04)
    ops = {o["name"]: o for o in s["ops"]}
    assert ops["Optimizer.step#AdamW.step"]["self_ms"] == pytest.approx(0.295)
    assert ops["Optimizer.step#AdamW.step"]["category"] == "optimizer"
    assert ops[kineto.PY_OUTSIDE]["self_ms"] == pytest.approx(1.0 - 0.65)  # step minus its direct children
    c = s["counters"]
    assert c["ops_per_step"] == 6 and c["small_ops_share"] == pytest.approx(1 / 6, abs=1e-3)  # lerp_ only
    assert c["python_share"] == pytest.approx(1 - 0.315)  # outside the six native ops


def test_steps_are_averaged_and_a_stalled_step_is_dropped():
    t = trace(step(2, 0), X("aten::mm", 100, 400), step(3, 1000), X("aten::mm", 1100, 600),
              step(4, 2000, dur=5000), X("aten::mm", 2100, 4800))
    s = kineto.summarize_trace(t)
    assert (s["steps"], s["steps_dropped"]) == (2, 1)
    assert s["ops"][0]["self_ms"] == pytest.approx(0.5) and s["ops"][0]["calls"] == 1


def test_a_stall_inside_one_steps_phase_leaves_that_phase_its_typical_time():
    # five 1 ms steps, 40 µs of data loading each, but one step (1.36 ms: not long enough to be
    # dropped) stalled 360 µs inside it: the phase stays 0.04 ms, the stall is the mean step's "other"
    events = []
    for i in range(5):
        t0, stall = i * 2000, 360 if i == 2 else 0
        events += [step(i + 2, t0, dur=1000 + stall),
                   X("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0 + 10, 40 + stall,
                     cat="user_annotation"),
                   X("Optimizer.step#AdamW.step", t0 + 500 + stall, 400, cat="user_annotation")]
    s = kineto.summarize_trace(trace(*events))
    assert s["steps"] == 5 and s["step_time_ms"] == pytest.approx(1.072)
    assert s["phases"]["data_loading"] == pytest.approx(0.04) and s["phases"]["optimizer"] == pytest.approx(0.4)
    assert s["phases"]["other"] == pytest.approx(1.072 - 0.44)
    assert sum(s["phase_shares"].values()) == pytest.approx(1.0, abs=1e-3)


def test_memory_lands_on_the_innermost_op_and_growth_is_fitted():
    mb = 2**20

    def mem(ts, total, nbytes):
        return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                "args": {"Device Type": 0, "Bytes": nbytes, "Total Allocated": total}}

    events = [step(2, 0, dur=2000), X("aten::linear", 10, 100), X("aten::addmm", 20, 50),
              mem(30, 5 * mb, 4 * mb), mem(100, 3 * mb, -2 * mb)]
    for i in range(5):
        start = 300 + 300 * i
        events += [X("profopt.phase.decode", start, 200, cat="user_annotation"),
                   X("aten::cat", start + 10, 20), mem(start + 20, (10 + i) * mb, mb)]
    s = kineto.summarize_trace(trace(*events))
    ops = {o["name"]: o for o in s["ops"]}
    assert ops["aten::addmm"]["self_memory_mb"] == pytest.approx(4.0)
    assert ops["aten::linear"]["self_memory_mb"] == pytest.approx(-2.0)
    assert s["memory"]["host_peak_allocated_mb"] == pytest.approx(14.0)
    assert s["memory"]["decode_growth"]["host"] == {"mb_per_span": pytest.approx(1.0), "r": pytest.approx(1.0),
                                                    "spans": 5}


def test_flops_and_bytes_from_shapes():
    mm = {"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}
    sdpa = {"Input Dims": [[2, 4, 16, 32], [2, 4, 80, 32], [2, 4, 80, 32]], "Input type": ["float"] * 3}
    conv = {"Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [16]], "Input type": ["float"] * 3,
            "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]}
    assert opcats.op_flops("aten::mm", mm) == 2 * 64 * 128 * 256
    assert opcats.op_bytes("aten::mm", mm) == 4 * (64 * 128 + 128 * 256 + 64 * 256)
    assert opcats.op_flops("aten::scaled_dot_product_attention", sdpa) == 4 * 2 * 4 * 16 * 80 * 32
    assert opcats.op_flops("aten::conv2d", conv) == 2 * 8 * 16 * 16 * 16 * 3 * 9
    add = {"Input Dims": [[1000], [1000], []], "Input type": ["float", "float", "Scalar"]}
    assert opcats.op_bytes("aten::add", add) == 3 * 4000
    assert opcats.op_bytes("aten::view", add) == 0
    t = trace(step(2, 0), X("aten::scaled_dot_product_attention", 10, 100, **sdpa),
              X("aten::bmm", 20, 30, **{"Input Dims": [[8, 16, 32], [8, 32, 80]], "Input type": ["float"] * 2}))
    s = kineto.summarize_trace(t)
    assert s["counters"]["flops_per_step"] == pytest.approx(4 * 2 * 4 * 16 * 80 * 32, rel=1e-3)  # bmm inside: not twice


@pytest.mark.parametrize("name,category", [
    ("aten::addmm", "gemm"), ("aten::_scaled_dot_product_flash_attention_for_cpu", "gemm"),
    ("aten::clamp_min", "elementwise"), ("aten::native_layer_norm", "reduction/norm"),
    ("aten::copy_", "copy/memory"), ("aten::item", "sync"), ("aten::_fused_adamw_", "optimizer"),
    ("AddmmBackward0", "framework"), ("nccl:all_reduce", "communication"),
])
def test_op_categories(name, category):
    assert opcats.category(name) == category


def test_a_trace_without_steps_is_one_step():
    s = kineto.summarize_trace(trace(X("aten::mm", 0, 300), X("aten::relu", 500, 100)))
    assert s["steps"] == 1 and s["step_time_ms"] == pytest.approx(0.6)
    assert next(o for o in s["ops"] if o["name"] == kineto.PY_OUTSIDE)["self_ms"] == pytest.approx(0.2)
    assert s["counters"]["python_share"] == pytest.approx(0.2 / 0.6, abs=1e-3)
