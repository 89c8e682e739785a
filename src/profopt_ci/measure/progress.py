"""What a running compare prints while it measures: few lines in CI logs, one live line per benchmark on a terminal.

In: permanent lines (`progress("…")`, the `log` every stage takes; the sequential looks write one
per benchmark per look), and from the rounds each finished lockstep round (`round`). Out: text on
stderr. On a terminal each benchmark has one line rewritten after every round — round, look,
current estimate, time left — below the permanent lines; in a log (CI) only the permanent lines
appear: one per benchmark per look, not one per side per round. PROFOPT_PROGRESS=rounds adds a
permanent line per round (for a log that must show each round), =looks drops the live lines.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import threading
import time
from typing import Any


class Progress:
    """The `log` callable of a compare, with live per-benchmark lines when stderr is a terminal."""

    def __init__(self, stream: Any = None, live: bool | None = None) -> None:
        self._stream, self._live = stream, live
        self.lines: dict[str, str] = {}
        self.started: dict[str, float] = {}
        self.rounds_done: dict[str, int] = {}
        self.looks: dict[str, str] = {}  # bench → "2/5": the look its rounds are heading for
        self._drawn = 0
        self._lock = threading.Lock()  # the sides' setups log at once (compare_refs._setup_sides)

    @property
    def stream(self) -> Any:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def live(self) -> bool:
        if self._live is not None:
            return self._live
        if os.environ.get("PROFOPT_PROGRESS") in ("rounds", "looks"):
            return False
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __call__(self, line: str) -> None:
        with self._lock:
            self._clear()
            print(line, file=self.stream, flush=True)
            self._draw()

    def heading_for(self, bench: str, look: int, looks: int) -> None:
        """The benchmark's rounds now lead to look `look` of `looks` (pipeline/sequential.py)."""
        self.looks[bench] = f"{look}/{looks}"

    def round(self, bench: str, ratios: list[float], r: int, total: int) -> None:
        """Round `r` (0-based) of `total` in this look is done; `ratios` are head/base per round so far."""
        now = time.monotonic()
        self.started.setdefault(bench, now)
        self.rounds_done[bench] = self.rounds_done.get(bench, 0) + 1
        every = os.environ.get("PROFOPT_PROGRESS") == "rounds"
        if not self.live and not every:
            return
        per_round = (now - self.started[bench]) / max(self.rounds_done[bench], 1)
        left = max(total - (r + 1), 0) * per_round
        est = ""
        usable = [x for x in ratios if x > 0 and math.isfinite(x)]
        if usable:
            est = f" · {(math.exp(statistics.median(math.log(x) for x in usable)) - 1) * 100:+.1f}% so far"
        looked = f" · look {self.looks[bench]}" if bench in self.looks else ""
        text = f"profopt: {bench}: round {r + 1}/{total}{looked}{est} · ~{left:.0f} s left"
        if every:
            self(text)
            return
        self.lines[bench] = text
        self._clear()
        self._draw()

    def done(self, bench: str) -> None:
        if self.lines.pop(bench, None) is not None and self.live:
            self._clear()
            self._draw()

    def _clear(self) -> None:
        if self._drawn and self.live:
            self.stream.write("\x1b[1A\x1b[2K" * self._drawn)
        self._drawn = 0

    def _draw(self) -> None:
        if not self.lines or not self.live:
            return
        width = _width()
        for text in self.lines.values():
            self.stream.write(text[:width - 1] + "\n")
        self.stream.flush()
        self._drawn = len(self.lines)


def _width() -> int:
    import shutil

    return max(40, shutil.get_terminal_size((100, 20)).columns)


class _Quiet:
    def round(self, *args: Any, **kwargs: Any) -> None:
        pass

    def heading_for(self, *args: Any) -> None:
        pass

    def done(self, bench: str) -> None:
        pass


QUIET = _Quiet()


def progress_of(log: Any) -> Progress | _Quiet:
    """The live-line side of a `log`, or a no-op when the log is a plain callable (tests, benches)."""
    return log if isinstance(log, Progress) else QUIET
