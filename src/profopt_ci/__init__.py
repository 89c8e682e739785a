"""profopt: profiling-driven optimization as a CI loop.

The names a benchmark author uses live here: `phase` and `record` inside a step function, and the
tutorial's minimal template (`benchmark_fn`, `summarize_optimization_result`,
`format_optimization_report`). The harness they come from imports only the standard library, so a
worker process stays light.
"""
from __future__ import annotations

__version__ = "0.1.0"

from profopt_ci.measure.harness import phase, record
from profopt_ci.tutorial import benchmark_fn, format_optimization_report, summarize_optimization_result

__all__ = [
    "__version__",
    "benchmark_fn",
    "format_optimization_report",
    "phase",
    "record",
    "summarize_optimization_result",
]
