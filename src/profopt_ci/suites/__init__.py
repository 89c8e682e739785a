"""Suites written for another tool — pytest-benchmark / pytest-codspeed, asv, pyperf — run unchanged.

A `suites:` item (or `--suite KIND:PATH`) is collected by the tool's own discovery (pytest's
collection, asv_runner's discovery, the script's own pyperf.Runner calls) in a process of the
side's environment (`collector.py`, driven by `collect.py`), and every collected benchmark
becomes an ordinary `Benchmark` whose `callable` is a suite target (`target`). The worker builds
its step through `inworker.run`: the pytest test, the asv method or the pyperf function is the
step, driven by profopt's own pairing (lockstep pairs, instructions, profiles — all unchanged).

Which side's suite runs (`benchmarks_from`, default head for suites): the head's suite files are
laid over the base's checkout at the same paths (`expand.overlay`), so the base runs the head's
benchmarks against its own code, as asv does; what the base cannot collect is new in the PR.
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


# ---- where a suite that cannot be collected failed: the file and line in the checkout --------------

_FRAME_LINES = (r'File "(?P<file>[^"\n]+)", line (?P<line>\d+)',  # Python's traceback, a SyntaxError's
                r"^(?P<file>[^\s:][^:\n]*\.py):(?P<line>\d+): in ")  # pytest's short style


def _own(path: str, root: str) -> str | None:
    """`path` relative to the checkout `root`, or None when it is not the suite's own code (an
    installed package, the standard library, a venv inside the checkout, profopt itself)."""
    import os
    import sys

    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(root) + os.sep) or "-packages" + os.sep in real:
        return None
    if any(real.startswith(os.path.realpath(p) + os.sep) for p in {sys.prefix, sys.base_prefix, os.path.dirname(__file__)}):
        return None
    return os.path.relpath(real, os.path.realpath(root))


def where_raised(exc: BaseException, root: str) -> dict:
    """{"file", "line"} of the innermost frame of `exc` in the checkout's own code (a SyntaxError:
    where the bad line is); {} when none is."""
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename and _own(exc.filename, root):
        return {"file": _own(exc.filename, root), "line": exc.lineno}
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        rel = _own(frame.filename, root)
        if rel:
            return {"file": rel, "line": frame.lineno}
    return {}


def where_in_text(text: str, root: str) -> dict:
    """The same, read from a traceback as text (pytest's collection report): the last frame shown
    in the checkout's own code."""
    import re

    found: list[tuple[int, dict]] = []
    for pattern in _FRAME_LINES:
        for m in re.finditer(pattern, text, re.M):
            rel = _own(m["file"], root)
            if rel:
                found.append((m.start(), {"file": rel, "line": int(m["line"])}))
    return max(found, key=lambda f: f[0])[1] if found else {}
