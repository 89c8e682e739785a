"""Where a suite that cannot be collected failed: the file and line in the side's checkout, from the
exception (asv's discovery, the collector) or from pytest's collection report as text.
"""
from __future__ import annotations

import os
import re
import sys
import traceback

_FRAME_LINES = (r'File "(?P<file>[^"\n]+)", line (?P<line>\d+)',  # Python's traceback, a SyntaxError's
                r"^(?P<file>[^\s:][^:\n]*\.py):(?P<line>\d+): in ")  # pytest's short style


def _own(path: str, root: str) -> str | None:
    """`path` relative to the checkout `root`, or None when it is not the suite's own code (an
    installed package, the standard library, a venv inside the checkout, profopt itself)."""
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(root) + os.sep) or "-packages" + os.sep in real:
        return None
    if any(real.startswith(os.path.realpath(p) + os.sep) for p in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(__file__))}):
        return None
    return os.path.relpath(real, os.path.realpath(root))


def where_raised(exc: BaseException, root: str) -> dict:
    """{"file", "line"} of the innermost frame of `exc` in the checkout's own code (a SyntaxError:
    where the bad line is); {} when none is."""
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
    found: list[tuple[int, dict]] = []
    for pattern in _FRAME_LINES:
        for m in re.finditer(pattern, text, re.M):
            rel = _own(m["file"], root)
            if rel:
                found.append((m.start(), {"file": rel, "line": int(m["line"])}))
    return max(found, key=lambda f: f[0])[1] if found else {}
