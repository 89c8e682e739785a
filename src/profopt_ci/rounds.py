"""Rounds: every benchmark on every side once per round, in fresh processes, in a seeded order.

With one side this is `profopt run`; with base and head it is the RMIT design of compare: the order
of the sides is drawn anew each round, so neither side always runs first or in the same machine
state, and each round's pair is close in time.
"""
from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.runner import BenchmarkFailed, Side, progress_line, run_sample, warm_command
from profopt_ci.spec import Benchmark, Spec


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Track:
    """What one benchmark measured on one side so far."""

    status: str = "ok"
    error: str | None = None
    samples: list[dict] = field(default_factory=list)
    warmed: bool = False


@dataclass
class RoundState:
    tracks: dict[tuple[str, str], Track] = field(default_factory=dict)

    def track(self, bench: str, side: str) -> Track:
        return self.tracks.setdefault((bench, side), Track())

    def measured(self, bench: str, side: str) -> bool:
        """The side finished its rounds of this benchmark without failing."""
        t = self.track(bench, side)
        return t.status == "ok" and bool(t.samples)

    def ok(self, bench: str, sides: list[Side]) -> bool:
        return all(self.track(bench, s.name).status == "ok" for s in sides)


def run_rounds(
    spec: Spec,
    benches: list[Benchmark],
    sides: list[Side],
    state: RoundState,
    workdir: Path,
    *,
    start: int,
    stop: int,
    total: int,
    rng: random.Random,
    log: Callable[[str], None] = stderr_log,
    after_round: Callable[[int], None] | None = None,
) -> None:
    """Rounds start..stop-1 of every benchmark whose sides are all still ok."""
    for r in range(start, stop):
        for bench in benches:
            if not state.ok(bench.name, sides):
                continue
            order = list(sides)
            if len(order) > 1:
                rng.shuffle(order)
            for pos, side in enumerate(order):
                track = state.track(bench.name, side.name)
                label = side.name if len(sides) > 1 else None
                own_spec, own_bench = side.spec or spec, side.bench(bench)
                try:
                    if not track.warmed:
                        warm_command(own_spec, own_bench, side)
                        track.warmed = True
                    sample = run_sample(own_spec, own_bench, side, workdir, round_index=r, order=pos)
                except BenchmarkFailed as exc:
                    track.status, track.error = exc.status, exc.message
                    log(progress_line(bench.name, label, r, total, None, f"{exc.status}: {exc.message.splitlines()[0]}"))
                    break
                track.samples.append(sample)
                log(progress_line(bench.name, label, r, total, sample))
        if after_round is not None:
            after_round(r)
