"""The in-process harness and the tutorial template, with real steps."""
from __future__ import annotations

import sys
import time

import pytest

import profopt_ci
from profopt_ci.harness import timing as harness
from profopt_ci.harness.cuda_device import CudaDevice, detect_device
from profopt_ci.tutorial import benchmark_fn, format_optimization_report, summarize_optimization_result


def busy(us: float):
    def step():
        end = time.perf_counter_ns() + us * 1000
        while time.perf_counter_ns() < end:
            pass
    return step


def test_calibration_reaches_min_time():
    loops = harness.calibrate(busy(50), min_time_ms=5)
    assert 64 <= loops <= 256  # 5 ms / 50 µs = 100 → the next power of two is 128


def test_measure_values_phases_and_quality():
    def step():
        with profopt_ci.phase("inner"):
            busy(200)()
        busy(100)()
        profopt_ci.record(loss=1.25, n=3)

    m = harness.measure(step, warmup=1, values=4, min_time_ms=5)
    assert len(m.values_ms) == 4
    # lower bounds are exact (busy-waits cannot finish early); upper bounds allow a loaded machine
    assert all(0.29 < v < 50 for v in m.values_ms)
    assert 0.19 < m.phases_ms["inner"] < 50
    # the phase runs inside every step, so its mean per step cannot exceed the mean step time
    assert m.phases_ms["inner"] < sum(m.values_ms) / len(m.values_ms)
    assert m.quality == {"loss": 1.25, "n": 3}


def test_record_turns_scalars_into_plain_values():
    np = pytest.importorskip("numpy")
    profopt_ci.record(loss=np.float32(0.5), tag=object)
    assert harness._state.quality["loss"] == 0.5 and isinstance(harness._state.quality["loss"], float)
    assert harness._state.quality["tag"] == str(object)


class CountingDevice(CudaDevice):
    """Stands in for a GPU (none here): the harness must sync around every clock read."""

    def __init__(self):
        self.syncs = 0
        self.resets = 0

    def synchronize(self):
        self.syncs += 1

    def reset_peaks(self):
        self.resets += 1

    def peaks_mb(self):
        return {"cuda_max_allocated_mb": 10.0, "cuda_max_reserved_mb": 12.0}


def test_device_path_synchronizes_before_every_clock_read(monkeypatch):
    # a step without torch.compile: dynamo, loaded by another test in this process, is not the step's
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    dev = CountingDevice()
    calls = []

    def step():
        with profopt_ci.phase("fwd"):
            calls.append(1)

    m = harness.measure(step, warmup=2, values=3, min_time_ms=0.001, device=dev, loops=4)
    values_and_warmup = 2 + 3
    # two syncs per timed value (start and stop) plus two per phase block
    assert dev.syncs == 2 * values_and_warmup + 2 * len(calls)
    assert dev.resets == 1
    assert m.device_peaks == {"cuda_max_allocated_mb": 10.0, "cuda_max_reserved_mb": 12.0}


def test_detect_device_is_none_without_cuda():
    assert detect_device() is None


def test_benchmark_fn_mean_ms():
    calls = []

    def fn():
        calls.append(1)
        busy(500)()

    ms = benchmark_fn(fn, warmup=2, iters=5)
    assert len(calls) == 7
    assert 0.45 < ms < 3.0
    with pytest.raises(ValueError):
        benchmark_fn(fn, iters=0)


def test_summarize_optimization_result():
    base = {"step_time_ms": 12.345, "peak_mem_mb": 1000.0, "throughput": 80.0}
    tuned = {"step_time_ms": 10.0, "peak_mem_mb": 1100.004, "throughput": 96.5}
    s = summarize_optimization_result(base, tuned)
    assert s == {
        "step_time_delta_ms": 2.35,
        "peak_mem_delta_mb": -100.0,
        "throughput_delta": 16.5,
        "time_improved": True,
        "memory_improved": False,
        "throughput_improved": True,
    }


def test_format_optimization_report_zh_and_en():
    s = summarize_optimization_result(
        {"step_time_ms": 10, "peak_mem_mb": 500, "throughput": 100},
        {"step_time_ms": 8, "peak_mem_mb": 500, "throughput": 125},
    )
    zh = format_optimization_report(s, "数据加载", "把 num_workers 设为 4")
    lines = zh.splitlines()
    assert lines[0] == "| 指标 | 变化 | 判断 |"
    verdicts = [line.strip("|").split("|")[-1].strip() for line in lines[2:5]]
    assert verdicts == ["改善", "未改善", "改善"]
    assert lines[-1] == "瓶颈判断：数据加载。下一步：把 num_workers 设为 4。"
    en = format_optimization_report(s, "data loading", "set num_workers=4", lang="en")
    assert en.splitlines()[0] == "| Metric | Change | Verdict |"
    assert "not improved" in en.splitlines()[3]
    assert en.splitlines()[-1] == "Bottleneck: data loading. Next step: set num_workers=4."
    with pytest.raises(ValueError):
        format_optimization_report(s, "x", "y", lang="fr")


def test_public_names_importable():
    for name in ("benchmark_fn", "summarize_optimization_result", "format_optimization_report", "phase", "record"):
        assert callable(getattr(profopt_ci, name))


def test_lockstep_stepper_closes_every_value_with_a_device_sync():
    """The lockstep worker's path on a GPU (stand-in device: no GPU here): sync at both ends of a value."""
    dev = CountingDevice()
    steps = []
    stepper = harness.Stepper(lambda: steps.append(1), value_ms=0.001, warmup=2, warmup_ms=0.0, device=dev)
    loops = stepper.calibrate()
    stepper.warm(loops)
    before, warm_steps = dev.syncs, len(steps)
    values = [stepper.value_ns() for _ in range(5)]
    assert all(v > 0 for v in values) and dev.syncs - before == 2 * 5 and dev.resets == 1
    assert len(steps) - warm_steps == 5 * loops
    out = stepper.finish()
    assert out["loops"] == loops and out["cuda_max_allocated_mb"] == 10.0 and out["cuda_max_reserved_mb"] == 12.0
