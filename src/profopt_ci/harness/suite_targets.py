"""A collected suite benchmark's `callable`: its kind and locator in one string no `module:factory`
can be, and a step run once through its kind's runner (what a collector probes with).
"""
from __future__ import annotations

KINDS = ("pytest", "asv", "pyperf")
_MARK = "+suite:"  # not a valid module name, so a suite target is never a `module:factory`


def target(kind: str, locator: str) -> str:
    """The `callable` of a collected benchmark: `pytest+suite:tests/bench/test_x.py::test_a[1]`."""
    return f"{kind}{_MARK}{locator}"


def parse_target(text: str | None) -> tuple[str, str] | None:
    """(kind, locator) of a suite target, None for anything else (a `module:factory`)."""
    if not text or _MARK not in text:
        return None
    kind, _, locator = text.partition(_MARK)
    return (kind, locator) if kind in KINDS else None


def probe_by_running(run, locators: list[str], traceback_lines: int = 0) -> dict[str, str | None]:
    """Each locator's step run once through its kind's `run`: {locator: None, or why not} — with the
    last `traceback_lines` lines of the traceback where a bare message says too little."""
    import traceback

    out: dict[str, str | None] = {}
    for loc in locators:
        try:
            run(loc, lambda step: step())
            out[loc] = None
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            if traceback_lines:
                why += "\n" + "".join(traceback.format_exc().splitlines(True)[-traceback_lines:])
            out[loc] = why
    return out
