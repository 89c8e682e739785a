"""profopt: profiling-driven optimization as a CI loop.

The names a benchmark author uses live here: `phase` and `record` inside a step function, and the
tutorial's minimal template (`benchmark_fn`, `summarize_optimization_result`,
`format_optimization_report`). The harness they come from imports only the standard library, so a
worker process stays light.
"""
from __future__ import annotations

__version__ = "0.1.0"
