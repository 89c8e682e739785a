"""The tutorial's minimal template: time a function, summarize base vs tuned, print the table.

Kept exactly as the tutorial defines it (docs/getting-started.md, "In a notebook"), because users copy it
into notebooks; the statistics of `profopt compare` are the grown-up version of the same loop.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping


def _sync_cuda() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def benchmark_fn(fn: Callable[[], object], warmup: int = 3, iters: int = 10) -> float:
    """Mean milliseconds per call of `fn` over `iters` timed calls after `warmup` untimed ones."""
    if iters < 1:
        raise ValueError("iters must be at least 1")
    for _ in range(warmup):
        fn()
    _sync_cuda()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    _sync_cuda()
    return (time.perf_counter() - start) * 1000.0 / iters


def summarize_optimization_result(base: Mapping[str, float], tuned: Mapping[str, float]) -> dict:
    """Deltas between a base and a tuned run; positive means the tuned side is better."""
    step = round(base["step_time_ms"] - tuned["step_time_ms"], 2)
    mem = round(base["peak_mem_mb"] - tuned["peak_mem_mb"], 2)
    thr = round(tuned["throughput"] - base["throughput"], 2)
    return {
        "step_time_delta_ms": step,
        "peak_mem_delta_mb": mem,
        "throughput_delta": thr,
        "time_improved": step > 0,
        "memory_improved": mem > 0,
        "throughput_improved": thr > 0,
    }


_TEXT = {
    "zh": {
        "header": "| 指标 | 变化 | 判断 |",
        "rows": ("单步时间", "峰值显存", "吞吐"),
        "yes": "改善",
        "no": "未改善",
        "closing": "瓶颈判断：{bottleneck}。下一步：{next_action}。",
    },
    "en": {
        "header": "| Metric | Change | Verdict |",
        "rows": ("Step time", "Peak memory", "Throughput"),
        "yes": "improved",
        "no": "not improved",
        "closing": "Bottleneck: {bottleneck}. Next step: {next_action}.",
    },
}


def format_optimization_report(summary: Mapping, bottleneck: str, next_action: str, lang: str = "zh") -> str:
    """A Markdown table of the summary's three deltas and a closing bottleneck / next-step line."""
    if lang not in _TEXT:
        raise ValueError(f"lang must be one of {sorted(_TEXT)}, not {lang!r}")
    t = _TEXT[lang]
    step_row, mem_row, thr_row = t["rows"]

    def verdict(flag: bool) -> str:
        return t["yes"] if flag else t["no"]

    lines = [
        t["header"],
        "| --- | --- | --- |",
        f"| {step_row} | {summary['step_time_delta_ms']:+.2f} ms | {verdict(summary['time_improved'])} |",
        f"| {mem_row} | {summary['peak_mem_delta_mb']:+.2f} MB | {verdict(summary['memory_improved'])} |",
        f"| {thr_row} | {summary['throughput_delta']:+.2f} | {verdict(summary['throughput_improved'])} |",
        "",
        t["closing"].format(bottleneck=bottleneck, next_action=next_action),
    ]
    return "\n".join(lines)
