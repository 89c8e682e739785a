"""`paused()`: no cyclic garbage collection while a big document is parsed or built.

In: nothing. Out: a context manager. Why: loading a spec or a comparison of very many benchmarks
allocates millions of containers that all stay alive; each allocation burst triggers a GC
pass over everything alive so far, which made loading several times slower (quadratic in practice; docs/experiments.md). The
documents hold no reference cycles, so collecting afterwards loses nothing.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
