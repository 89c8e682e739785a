"""Suites written for another tool — pytest-benchmark / pytest-codspeed, asv, pyperf — run unchanged.

A `suites:` item (or `--suite KIND:PATH`) is collected by the tool's own discovery (pytest's
collection, asv_runner's discovery, the script's own pyperf.Runner calls) in a process of the
side's environment (`collector.py`, driven by `collect.py`), and every collected benchmark
becomes an ordinary `Benchmark` whose `callable` is a suite target (`target`). The worker builds
its step through `harness.suite_run.run`: the pytest test, the asv method or the pyperf function is the
step, driven by profopt's own pairing (lockstep pairs, instructions, profiles — all unchanged).

Which side's suite runs (`benchmarks_from`, default head for suites): the head's suite files are
laid over the base's checkout at the same paths (`expand.overlay`), so the base runs the head's
benchmarks against its own code, as asv does; what the base cannot collect is new in the PR.
"""
