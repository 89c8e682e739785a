"""One side at a time: while a value of one side is timed, the other side's worker is held.

In: each side's live worker as a `Channel` (value, hold, release: measure/live_worker.py). Out:
`Turns`, which lets one side run and holds the rest; lockstep.callable_round takes each value in its turn.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Channel(Protocol):
    """One side's live worker as the scheduler sees it."""

    def value_ns(self) -> int: ...

    def hold(self) -> None: ...

    def release(self) -> None: ...


class Turns:
    """Only one side's worker runs at a time: the other is held (SIGSTOP on its process group: every
    thread of it, and what its step started) until its own turn.

    Why: a worker that has just answered is not idle. An OpenMP pool (libgomp, Intel OpenMP) spins
    after each parallel region before its threads sleep, a step's own threads may still run, and
    on a set of N CPUs a 2-thread step timed beside them reads its time far too high. Held, the other
    side takes no CPU time at all while a value is timed (docs/accuracy.md has the switch's cost)."""

    def __init__(self, channels: Mapping[str, Channel]) -> None:
        self.channels = channels
        self.running: set[str] = set(channels)

    def to(self, name: str | None) -> None:
        """Let `name` run and hold every other side (None: hold them all)."""
        for other in sorted(self.running - {name}):
            self.channels[other].hold()
            self.running.discard(other)
        if name is not None and name not in self.running:
            self.channels[name].release()
            self.running.add(name)

    def all(self) -> None:
        """Every side runs again (before it is asked to finish, or killed)."""
        for name in sorted(set(self.channels) - self.running):
            self.channels[name].release()
            self.running.add(name)
