"""In the worker: a suite target's step, with `use(step)` run where the suite's runner wants it.

In: a suite target (harness.suite_targets.target), `use` (the worker's protocol: measure, serve, profile,
instructions) and the quality pass's seed. Out: what `use` returned. pytest runs `use` nested in
the test's benchmark call; asv runs it between the benchmark's setup and teardown; pyperf between
the script's registration of the benchmark and the end.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profopt_ci.harness.suite_targets import parse_target


def runner_owned() -> set[str]:
    """Top-level modules a zygote must leave to the suite's runner (worker.preloadable): for a pytest
    session that ran in this worker, those pytest rewrites on import; none for asv and pyperf."""
    import sys

    suite = sys.modules.get("profopt_ci.harness.pytest_suite")
    return suite.rewritten_tops() if suite is not None else set()


def run(target: str, use: Callable[[Callable[[], object]], Any], seed: int | None = None) -> Any:
    parsed = parse_target(target)
    if parsed is None:
        raise ValueError(f"{target!r} is not a suite target")
    kind, locator = parsed

    def seeded(step):
        if seed is not None:  # after the suite's imports and setup, before the first step
            from profopt_ci.harness import timing as harness

            harness.seed_all(seed)
        return use(step)

    if kind == "pytest":
        from profopt_ci.harness import pytest_suite

        return pytest_suite.run(locator, seeded)
    if kind == "asv":
        from profopt_ci.harness import asv_suite

        return asv_suite.run(locator, seeded)
    from profopt_ci.harness import pyperf_suite

    return pyperf_suite.run(locator, seeded)
