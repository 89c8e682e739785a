"""profopt: profiling-driven optimization as a CI loop.

The names a benchmark author uses live here: `phase` and `record` inside a step function, and the
tutorial's minimal template (`benchmark_fn`, `summarize_optimization_result`,
`format_optimization_report`). The harness they come from imports only the standard library, so a
worker process stays light.
"""
from __future__ import annotations

__version__ = "0.1.0"

from profopt_ci.harness.timing import phase, record

_TUTORIAL = ("benchmark_fn", "format_optimization_report", "summarize_optimization_result")


def __getattr__(name: str):
    # the tutorial's names on first use: a worker process imports this package, and pays for no more
    if name in _TUTORIAL:
        from profopt_ci import tutorial

        return getattr(tutorial, name)
    raise AttributeError(f"module 'profopt_ci' has no attribute {name!r}")

__all__ = [
    "__version__",
    "benchmark_fn",
    "format_optimization_report",
    "phase",
    "record",
    "summarize_optimization_result",
]
