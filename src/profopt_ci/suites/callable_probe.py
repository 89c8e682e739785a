"""In the side's process (suites/collector.py): the head's callables built and run once on the base.

In: [name, module:factory, params] items. Out: {name: None, or why not}. Standard library and the
worker only: it runs in the side's own environment (suites/callables.py is the parent's half).
"""
from __future__ import annotations

import traceback


def probe(items: list) -> dict[str, str | None]:
    """In the side's process (suites/collector.py): each [name, target, params] built and run once —
    {name: None, or why not, with the traceback's last lines}."""
    from profopt_ci.measure.worker import build_step

    out: dict[str, str | None] = {}
    for name, target, params in items:
        try:
            build_step(target, params or {})()
            out[name] = None
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc().splitlines(True)[-3:])
    return out
