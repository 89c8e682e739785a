"""How much the harness adds to a measurement, and whether it agrees with timeit.

Prints (1) the harness's overhead per value against a bare perf_counter_ns loop timing the same
empty step (goal < 1 µs), and (2) the per-call time the harness measures for a ~10 µs and a ~10 ms
function next to `timeit`'s figure for the same function, taken side by side in one run (goal:
within 5%). Medians of repeated interleaved trials; this machine's speed drifts.

    python bench/harness_overhead.py
"""
from __future__ import annotations

import statistics
import time
import timeit

from profopt_ci.harness import timing as harness


def busy(us: float):
    ns = int(us * 1000)

    def step():
        end = time.perf_counter_ns() + ns
        while time.perf_counter_ns() < end:
            pass

    return step


def noop():
    return None


def bare_value_ns(step, loops: int) -> int:
    start = time.perf_counter_ns()
    for _ in range(loops):
        step()
    return time.perf_counter_ns() - start


def overhead_per_value(trials: int = 101, values: int = 200, loops: int = 100) -> tuple[float, float]:
    """Median ns per value: harness.measure(values=N) vs N bare timed loops, same step and loops."""
    harness_ns, bare_ns = [], []
    for _ in range(trials):
        t0 = time.perf_counter_ns()
        harness.measure(noop, warmup=0, values=values, loops=loops)
        harness_ns.append((time.perf_counter_ns() - t0) / values)
        t0 = time.perf_counter_ns()
        [bare_value_ns(noop, loops) / loops for _ in range(values)]
        bare_ns.append((time.perf_counter_ns() - t0) / values)
    return statistics.median(harness_ns), statistics.median(bare_ns)


def agreement(us: float, trials: int) -> tuple[float, float]:
    step = busy(us)
    h, t = [], []
    for _ in range(trials):
        m = harness.measure(step, warmup=1, values=5, min_time_ms=100)
        h.append(statistics.median(m.values_ms))
        timer = timeit.Timer(step)
        number, _ = timer.autorange()
        number = max(number, int(0.1 / (us / 1e6)))  # ≥ 100 ms per timeit value, like the harness
        t.append(min(timer.repeat(repeat=5, number=number)) / number * 1000)
    return statistics.median(h), statistics.median(t)


def main() -> None:
    h, b = overhead_per_value()
    print(f"overhead per value: harness {h / 1000:.2f} µs, bare loop {b / 1000:.2f} µs, "
          f"added {(h - b) / 1000:.2f} µs per value (goal < 1 µs)")
    for us, trials in ((10, 7), (10_000, 5)):
        hm, tm = agreement(us, trials)
        print(f"~{us:g} µs function: harness {hm * 1000:.2f} µs, timeit {tm * 1000:.2f} µs, "
              f"difference {100 * (hm / tm - 1):+.2f}% (goal within 5%)")


if __name__ == "__main__":
    main()
