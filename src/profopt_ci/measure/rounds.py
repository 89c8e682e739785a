"""Rounds: every benchmark on every side once per round, in fresh processes, in a seeded order.

In: the plan, benchmarks, sides, a `RoundState` and the round range. Out: samples appended to the
state's tracks (a failed side's track gets its status and error; earlier samples stay).

With one side this is `profopt run`. With base and head it is compare's round, by the benchmark's
`pairing`: `lockstep` (lockstep.py: both workers live at once, pinned to one CPU set, driven value
by value) or `rounds`, the RMIT design — one fresh process per side, the order of the sides drawn
anew each round, so neither side always runs first or in the same machine state. Every stage reads
the `Plan` (plan.py) for each side's spec and benchmark.
"""
from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.measure import lockstep
from profopt_ci.measure.processes import (
    BenchmarkFailed,
    Side,
    child_env,
    progress_line,
    run_sample,
    warm_command,
)
from profopt_ci.spec.load import Benchmark
from profopt_ci.spec.plan import Plan


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
    plan: Plan,
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
            if len(sides) == 2 and bench.settings.pairing == "lockstep":
                lockstep_round(plan, bench, sides, state, workdir, r, total, rng, log)
                continue
            order = list(sides)
            if len(order) > 1:
                rng.shuffle(order)
            for pos, side in enumerate(order):
                track = state.track(bench.name, side.name)
                label = side.name if len(sides) > 1 else None
                own_spec, own_bench = plan.side_spec(side.name), plan.bench(side.name, bench.name)
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


def lockstep_round(plan: Plan, bench: Benchmark, sides: list[Side], state: RoundState, workdir: Path, r: int,
                   total: int, rng: random.Random, log: Callable[[str], None]) -> None:
    """One lockstep round of one benchmark; a failure marks the side that failed, earlier rounds stay."""
    own = {s.name: plan.bench(s.name, bench.name) for s in sides}
    envs = {s.name: child_env(plan.side_spec(s.name), own[s.name], s) for s in sides}
    try:
        for side in sides:
            track = state.track(bench.name, side.name)
            if not track.warmed:
                warm_command(plan.side_spec(side.name), own[side.name], side)
                track.warmed = True
        samples = lockstep.run_round(own, envs, sides, workdir, round_index=r, rng=rng, cpus=plan.cpus(bench))
    except (lockstep.RoundFailed, BenchmarkFailed) as exc:
        side = getattr(exc, "side", None) or next(
            (s.name for s in sides if not state.track(bench.name, s.name).warmed), sides[-1].name)
        track = state.track(bench.name, side)
        track.status, track.error = exc.status, f"round {r + 1} failed: {exc.message}"
        log(progress_line(bench.name, side, r, total, None, f"{exc.status}: {exc.message.splitlines()[0]}"))
        return
    for side in sides:
        state.track(bench.name, side.name).samples.append(samples[side.name])
        log(progress_line(bench.name, side.name, r, total, samples[side.name]))
