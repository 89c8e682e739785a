"""Real profiles of the real examples: torch.profiler on CPU, cProfile, a profiled command.

The example factories are called in-process (small params where the defaults are slow); each side
(base and the tuned/ overlay) is profiled and classified. The class asserted per example is the one
measured on a 2-core runner and argued for in the examples' profopt.yml comments.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from profopt_ci.analyze import bottleneck as analyze
from profopt_ci.profile import capture, machine
from profopt_ci.profile.capture_command import capture_command

torch = pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(example: str, filename: str, tuned: bool = False):
    path = EXAMPLES / example / ("tuned" if tuned else "") / filename
    spec = importlib.util.spec_from_file_location(f"ex_{example}_{'tuned' if tuned else 'base'}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def machine_balance() -> dict:
    return machine.probe()


@pytest.fixture(autouse=True)
def one_thread():
    # Two threads on a shared 2-core runner oversubscribe and make op times swing 10×.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_machine_probe_positive_finite(machine_balance):
    for key in ("matmul_gflops", "copy_gbps", "ridge_flops_per_byte", "ram_mb"):
        assert math.isfinite(machine_balance[key]) and machine_balance[key] > 0, key
    assert machine_balance["ridge_flops_per_byte"] == pytest.approx(
        machine_balance["matmul_gflops"] / machine_balance["copy_gbps"], rel=0.01)


def _shares_sum_to_one(summary: dict) -> None:
    assert sum(summary["phase_shares"].values()) == pytest.approx(1.0, abs=0.05)
    assert sum(summary["phases"].values()) == pytest.approx(summary["step_time_ms"], rel=0.05)


def test_torch_train_optimizer_loop_then_fused(tmp_path, machine_balance):
    sides = {}
    for tuned in (False, True):
        step = load("torch_train", "train.py", tuned).make_step()
        sides[tuned] = capture.capture(step, "auto", steps=5, trace_dir=tmp_path, name=f"train-{tuned}",
                                       machines={"torch": machine_balance, "numpy": machine_balance})
    base, head = sides[False], sides[True]
    assert base["kind"] == "torch" and Path(base["trace_path"]).is_file()
    assert base["cuda"] is False and base["chunks"] == base["steps"] >= 2
    assert all(o["self_ms_range"][0] <= o["self_ms_range"][1] for o in base["ops"])
    assert {"data_loading", "forward", "backward", "optimizer"} <= set(base["phases"])
    _shares_sum_to_one(base)
    _shares_sum_to_one(head)
    # The per-parameter AdamW loop: hundreds of tiny ops, the largest phase of the step.
    b = analyze.bottleneck(base)
    assert (b["class"], b["rule"]) == ("launch/framework overhead", "optimizer launch overhead"), b
    assert any("ops per optimizer step" in e for e in b["evidence"])
    # fused=True removes that loop; what remains of a ~2 ms step is per-op overhead: ~500 ops,
    # nine in ten under 10 µs (the pre-batched DataLoader is ~2% of the step).
    h = analyze.bottleneck(head)
    assert (h["class"], h["rule"]) == ("launch/framework overhead", "framework overhead"), h
    assert head["phase_shares"]["data_loading"] < 0.05
    assert head["phase_shares"]["optimizer"] < base["phase_shares"]["optimizer"]
    # The ops themselves changed, whatever the timing noise: one fused kernel, no per-tensor lerp_.
    base_ops, head_ops = {o["name"] for o in base["ops"]}, {o["name"] for o in head["ops"]}
    assert "aten::_fused_adamw_" in head_ops - base_ops
    assert "aten::lerp_" in base_ops - head_ops
    diff = {d["name"]: d for d in analyze.hot_diff(base, head, top=100)}
    assert diff["aten::lerp_"]["head_ms"] < diff["aten::lerp_"]["base_ms"]


def test_llm_infer_phases_kv_growth_and_same_output(tmp_path, machine_balance):
    params = {"batch": 2, "prompt_len": 16, "new_tokens": 8, "d": 64, "heads": 2, "layers": 2}
    sides, digests = {}, {}
    for tuned in (False, True):
        module = load("llm_infer", "generate.py", tuned)
        step = module.make_step(**params)
        sides[tuned] = capture.capture(step, "torch", steps=2, trace_dir=None, name="gen",
                                       machines={"torch": machine_balance, "numpy": machine_balance})
        digests[tuned] = _digest_of(step)
    base, head = sides[False], sides[True]
    assert base["trace_path"] is None
    assert {"prefill", "decode", "sampling", "kv_cache"} <= set(base["phases"])
    _shares_sum_to_one(base)
    assert digests[False] == digests[True]
    # torch.cat grows the cache by one token's K and V per layer and decode step (2·layers·batch·d
    # floats); the preallocated cache does not grow: only the 16-byte list of output ids does.
    grow = base["memory"]["decode_growth"]["host"]
    flat = head["memory"]["decode_growth"]["host"]
    per_token_mb = 2 * params["layers"] * params["batch"] * params["d"] * 4 / 2**20
    assert grow["r"] > 0.9 and grow["mb_per_span"] == pytest.approx(per_token_mb, rel=0.1), grow
    assert flat["mb_per_span"] < per_token_mb / 50, flat
    # A d=64 model decoding one token at a time: thousands of sub-10 µs ops per step.
    for side in (base, head):
        b = analyze.bottleneck(side)
        assert (b["class"], b["rule"]) == ("launch/framework overhead", "framework overhead"), b
    assert base["counters"]["flops_per_step"] > 0


def _digest_of(step) -> str:
    from profopt_ci.harness import timing as harness

    m = harness.measure(step, warmup=0, values=1, loops=1)
    return m.quality["output_digest"]


def test_python_func_cprofile_interpreter_loop_vs_numpy(tmp_path, machine_balance):
    base_step = load("python_func", "neighbors.py").make_step(n=150)
    head_step = load("python_func", "neighbors.py", tuned=True).make_step(n=150)
    base = capture.capture(base_step, "cprofile", steps=2, trace_dir=tmp_path, name="pairs",
                           machines={"torch": machine_balance, "numpy": machine_balance})
    head = capture.capture(head_step, "cprofile", steps=2, trace_dir=None, name="pairs",
                           machines={"torch": machine_balance, "numpy": machine_balance})
    assert base["kind"] == "cprofile" and Path(base["trace_path"]).is_file()
    assert base["ops"][0]["name"].endswith("(count_close_pairs)")
    assert base["counters"]["python_share"] > 0.8
    assert base["counters"]["py_lines_per_ms"] > 1000
    b = analyze.bottleneck(base)
    assert (b["class"], b["rule"]) == ("interpreter overhead", "interpreter overhead"), b
    # numpy: a handful of lines per ms; cProfile cannot tell what the C code is bound by.
    assert head["counters"]["py_lines_per_ms"] < 100
    h = analyze.bottleneck(head)
    assert h["class"] is None and h["evidence"][0] == "no clear bottleneck", h
    assert head["step_time_ms"] < base["step_time_ms"]
    # the step got faster and the head names nothing: the note is what limited the base, the next
    # action the head's, and neither speaks of torch or CUDA (the demo, issue 40)
    faster = {"step_time_ms": {"base": base["step_time_ms"], "head": head["step_time_ms"], "verdict": "improved"}}
    note = analyze.bottleneck(head, faster, base)
    assert (note["class"], note["side"]) == ("interpreter overhead", "base"), note
    assert not {"torch", "CUDA", "PYTORCH_CUDA_ALLOC_CONF"} & set(note["next_action"].replace("(", " ").split())
    assert base["cuda"] is False and head["cuda"] is False


def test_cprofile_takes_its_steps_in_chunks_and_gives_each_functions_spread(machine_balance):
    """More than one profiled step, in chunks of a profiler each: each function's self time per step
    has a least and a most, and the hot-op diff tells a real change from that spread."""
    assert capture.profiled_steps(5, 1.0) == (5, 20)  # 0.1 s of a 1 ms step: 100 steps
    assert capture.profiled_steps(5, 13.0) == (5, 1)  # a 13 ms step: the 5 asked for
    assert capture.profiled_steps(5, 0.001) == (5, 200)  # at most 1000
    assert capture.profiled_steps(5, 1000.0) == (5, 1) and capture.profiled_steps(1, 1000.0) == (1, 1)
    base_step = load("python_func", "neighbors.py").make_step(n=120)
    head_step = load("python_func", "neighbors.py", tuned=True).make_step(n=120)
    base = capture.capture(base_step, "cprofile", steps=5, trace_dir=None, name="pairs", machines={})
    head = capture.capture(head_step, "cprofile", steps=5, trace_dir=None, name="pairs", machines={})
    for side in (base, head):
        assert side["chunks"] == 5 and side["steps"] % 5 == 0 and side["steps"] >= 5, side["steps"]
        for op in side["ops"]:
            lo, hi = op["self_ms_range"]
            assert lo <= hi and lo * 0.99 <= op["self_ms"] <= hi * 1.01 + 1e-6, op  # the mean lies inside
    rows = {r["name"]: r for r in analyze.hot_diff(base, head, top=100)}
    loop = next(r for name, r in rows.items() if name.endswith("(count_close_pairs)"))
    assert loop["noise"] is False and loop["delta_ms"] < 0  # the loop the change replaced: beyond any spread


def test_roofline_on_real_ops(machine_balance):
    w, x = torch.randn(512, 512), torch.randn(256, 512)
    a, b, o = torch.randn(16 * 2**20), torch.randn(16 * 2**20), torch.empty(16 * 2**20)  # 64 MB: no cache holds them

    @torch.inference_mode()
    def gemm():
        y = x
        for _ in range(3):
            y = torch.relu(y @ w)

    @torch.inference_mode()
    def elementwise():  # out= tensors: no fresh 64 MB (page faults) per op
        torch.mul(a, b, out=o)
        torch.add(o, a, out=o)

    g = capture.capture(gemm, "torch", steps=3, trace_dir=None, name="g", machines={"torch": machine_balance, "numpy": machine_balance})
    assert g["counters"]["flops_per_step"] == pytest.approx(3 * 2 * 256 * 512 * 512, rel=1e-3)
    bg = analyze.bottleneck(g)
    assert (bg["class"], bg["rule"]) == ("compute", "compute"), bg
    e = capture.capture(elementwise, "torch", steps=3, trace_dir=None, name="e", machines={"torch": machine_balance, "numpy": machine_balance})
    be = analyze.bottleneck(e)
    assert (be["class"], be["rule"]) == ("memory bandwidth", "memory bandwidth"), be
    # a·b, +a: two passes, each reading 2 arrays and writing one: 6 arrays of 64 MB
    assert e["counters"]["bytes_per_step"] == pytest.approx(6 * 64 * 2**20, rel=0.01)
    assert be["evidence"][0].startswith("moves ~")  # the rate it names the class by comes first


def test_auto_is_cprofile_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch")
    assert capture.resolve_mode("auto") == "cprofile"
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert capture.resolve_mode("auto") == "torch"
    assert capture.capture(lambda: None, "off", name="x") == {"kind": "none", "reason": "profile: off"}


def test_capture_command_python_script_and_non_python(tmp_path, machine_balance):
    cli = EXAMPLES / "cli"
    summary = capture_command("python3 wordfreq.py 100000", cwd=cli, env={}, trace_dir=tmp_path,
                                      name="wordfreq", timeout_s=60, machine=machine_balance)
    assert summary["kind"] == "cprofile" and Path(summary["trace_path"]).is_file()
    assert summary["ops"][0]["name"].endswith("(count_words)")  # 100000 words: ~0.1 s, well above a slow read of the imports
    b = analyze.bottleneck(summary)
    assert (b["class"], b["rule"]) == ("interpreter overhead", "interpreter overhead"), b
    code = capture_command([sys.executable, "-c", "sum(i * i for i in range(20000))"], cwd=tmp_path,
                                   env={}, trace_dir=None, name="c", timeout_s=60, machine=machine_balance)
    assert code["kind"] == "cprofile" and any("<genexpr>" in o["name"] for o in code["ops"])
    other = capture_command("sh -c 'sleep 0.01'", cwd=tmp_path, env={}, trace_dir=None, name="s",
                                    timeout_s=60)
    assert other == {"kind": "none", "reason": "not a Python process: no profile taken"}
    failed = capture_command("python3 -c 'raise RuntimeError(42)'", cwd=tmp_path, env={}, trace_dir=None,
                                     name="f", timeout_s=60)
    assert failed["kind"] == "none" and "exit 1" in failed["reason"] and "RuntimeError: 42" in failed["reason"]
