"""Rounds: every benchmark on every side once per round, in a seeded order.

In: a `RoundContext` (the plan, the sides, the `RoundState`, the work directory, the rng, the log),
the benchmarks and the round range. Out: samples appended to the state's tracks (a failed side's track gets its status and error; earlier samples stay).

With one side this is `profopt run`. With base and head it is compare's round, by the benchmark's
`pairing`: `lockstep` (lockstep.py: both workers live at once, pinned to one CPU set, driven value
by value) or `rounds`, the RMIT design — one process per side, the order of the sides drawn anew
each round, so neither side always runs first or in the same machine state. Either way a callable
that imports heavy packages has its workers forked from a zygote after the first round
(zygote.py). Every stage reads the `Plan` (plan.py) for each side's spec and benchmark.
"""
from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from profopt_ci.documents.types import Sample
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.measure import lockstep
from profopt_ci.measure.cpus import Placement, describe, format_cpuset, placement_for
from profopt_ci.measure.live_worker import WorkerProcess
from profopt_ci.measure.processes import (
    BenchmarkFailed,
    Side,
    child_env,
    progress_line,
    run_sample,
    warm_command,
)
from profopt_ci.measure.progress import Progress, progress_of
from profopt_ci.measure.zygote import NotReady, Zygote, ZygoteFailed, ZygotePool, ZygoteRecipe
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan

stderr_log = Progress()  # permanent lines on stderr, and live per-benchmark lines on a terminal


@dataclass
class Track:
    """What one benchmark measured on one side so far."""

    status: str = "ok"
    error: str | None = None
    samples: list[Sample] = field(default_factory=list)  # each a round's record (`recorded`)
    warmed: bool = False
    quality: dict | None = None  # the quality pass's trace (analyze/quality.py), when one ran
    packages: dict | None = None  # {distribution: version} its first worker imported (worker.imported_packages)


@dataclass
class Ahead:
    """A lockstep round's workers, started while the round before it measured (`start_ahead`)."""

    round: int
    zygotes: dict[str, Zygote]
    workers: dict[str, WorkerProcess]


@dataclass
class RoundState:
    tracks: dict[tuple[str, str], Track] = field(default_factory=dict)
    placements: dict[str, Placement] = field(default_factory=dict)  # lockstep: each benchmark's CPU set
    preload: dict[str, list[str]] = field(default_factory=dict)  # what its workers' zygotes import
    zygotes: ZygotePool = field(default_factory=lambda: ZygotePool())
    ahead: dict[str, Ahead] = field(default_factory=dict)  # by benchmark: its next round's workers
    cut: dict[str, int] = field(default_factory=dict)  # time budget spent: each undecided benchmark's rounds
    looked: dict[str, Entry] = field(default_factory=dict)  # each benchmark's Entry at its latest look (sequential)
    # PROFOPT_START_AHEAD=0: every round starts its own workers (to compare, bench/suite_speed.py)
    start_ahead: bool = field(default_factory=lambda: os.environ.get("PROFOPT_START_AHEAD", "").strip() != "0")

    def track(self, bench: str, side: str) -> Track:
        return self.tracks.setdefault((bench, side), Track())

    def loops(self, bench: str, sides: list[Side]) -> int | None:
        """The loop count of the benchmark's last lockstep round (both sides share it), if any."""
        samples = self.track(bench, sides[0].name).samples
        got = samples[-1].get("loops") if samples and samples[-1].get("pairing") == "lockstep" else None
        return got if isinstance(got, int) and got >= 1 else None

    def take_ahead(self, bench: str, r: int) -> Ahead | None:
        """The workers started ahead for round `r` of `bench`; any others are closed."""
        got = self.ahead.pop(bench, None)
        if got is not None and got.round != r:
            lockstep.close_workers(got.workers.values())
            got = None
        return got

    def drop_ahead(self) -> None:
        """Workers started ahead for a round that will not run (the rounds stopped)."""
        for got in self.ahead.values():
            lockstep.close_workers(got.workers.values())
        self.ahead.clear()

    def close(self) -> None:
        """The zygotes still alive (they die with profopt anyway; this is the orderly way)."""
        self.drop_ahead()
        self.zygotes.close()

    def measured(self, bench: str, side: str) -> bool:
        """The side finished its rounds of this benchmark without failing."""
        t = self.track(bench, side)
        return t.status == "ok" and bool(t.samples)

    def ok(self, bench: str, sides: list[Side]) -> bool:
        return all(self.track(bench, s.name).status == "ok" for s in sides)


@dataclass(frozen=True)
class RoundContext:
    """What every round of one measuring run reads, built once by the verb that measures (compare,
    confirm, run) and passed down, so no signature threads it: the plan, the sides measured, the
    state the rounds fill, the work directory, the seeded rng, and where progress is said."""

    plan: Plan
    sides: list[Side]
    state: RoundState
    workdir: Path
    rng: random.Random
    log: Callable[[str], None] = stderr_log

    def on(self, sides: list[Side]) -> RoundContext:
        """The same run, measuring `sides` only."""
        return replace(self, sides=list(sides))

    def envs(self, bench: Benchmark) -> dict[str, dict[str, str]]:
        """Each side's child environment for the benchmark, as its own spec gives it."""
        return {s.name: child_env(self.plan.side_spec(s.name), self.plan.bench(s.name, bench.name), s)
                for s in self.sides}

    def recipe(self, bench: Benchmark, envs: dict[str, dict[str, str]]) -> ZygoteRecipe:
        """What the benchmark's zygotes start from: its preload as the rounds learnt it so far."""
        return ZygoteRecipe(bench.name, self.sides, envs, self.state.preload.get(bench.name), self.workdir, self.log)


def run_rounds(ctx: RoundContext, benches: list[Benchmark], *, start: int, stop: int, total: int,
               after_round: Callable[[int], None] | None = None) -> None:
    """Rounds start..stop-1 of every benchmark whose sides are all still ok (`profopt run`, a PR's new
    benchmarks); each round's workers may start during the round before it."""
    try:
        for r in range(start, stop):
            for i, bench in enumerate(benches):
                measure_round(ctx, bench, r, total,
                              following=lambda r=r, i=i: next_round(benches, ctx.sides, ctx.state, r, i, stop))
            if after_round is not None:
                after_round(r)
    finally:
        ctx.state.drop_ahead()


def next_round(benches: list[Benchmark], sides: list[Side], state: RoundState, r: int, i: int,
               stop: int) -> tuple[Benchmark, int] | None:
    """The round measured after round `r` of `benches[i]`, as things stand now (None: the last)."""
    for j in range(i + 1, len(benches) * (stop - r)):
        bench, rj = benches[j % len(benches)], r + j // len(benches)
        if state.ok(bench.name, sides):
            return bench, rj
    return None


def sampled_round(ctx: RoundContext, bench: Benchmark, r: int, total: int) -> None:
    """One round of one benchmark, a sample per side in a shuffled order (`profopt run`, pairing:
    rounds). A callable whose first samples imported heavy packages forks its later samples from a
    zygote per side (zygote.py): a fresh interpreter per sample paid `import torch` every round."""
    plan, sides, state, workdir, log = ctx.plan, ctx.sides, ctx.state, ctx.workdir, ctx.log
    order = list(sides)
    if len(order) > 1:
        ctx.rng.shuffle(order)
    zygotes = None
    if bench.callable and state.preload.get(bench.name):
        zygotes = state.zygotes.for_round(ctx.recipe(bench, ctx.envs(bench)), rounds_left=total - r)
    reported = []
    for pos, side in enumerate(order):
        track = state.track(bench.name, side.name)
        label = side.name if len(sides) > 1 else None
        own_spec, own_bench = plan.side_spec(side.name), plan.bench(side.name, bench.name)
        zygote = zygotes.get(side.name) if zygotes else None
        try:
            if not track.warmed:
                warm_command(own_spec, own_bench, side)
                track.warmed = True
            try:
                with state.zygotes.held_beside(None):  # a next generation importing waits while a sample runs
                    sample = run_sample(own_spec, own_bench, side, workdir, round_index=r, order=pos, zygote=zygote)
            except ZygoteFailed as exc:
                state.zygotes.give_up(bench.name, exc, log)
                sample = run_sample(own_spec, own_bench, side, workdir, round_index=r, order=pos)
        except BenchmarkFailed as exc:
            track.status, track.error = exc.status, exc.message
            log(progress_line(bench.name, label, r, total, None, f"{exc.status}: {exc.message.splitlines()[0]}"))
            state.zygotes.close(bench.name)
            return
        reported.append(sample.pop("preload", None))
        keep_packages(track, sample)
        track.samples.append(recorded(sample))
        log(progress_line(bench.name, label, r, total, sample))
    learn_preload(state, bench.name, reported)


def recorded(sample: dict) -> Sample:
    """A round's sample as its record, built once when the round is done: the frozen `Sample` every
    later reader (the judge, the notes, the documents) reads, each key checked against the model."""
    return msgspec.convert(sample, Sample)


def learn_preload(state: RoundState, bench: str, reported: list) -> bool:
    """The packages a zygote preloads for the benchmark, once every side's first worker reported
    what it imported (worker.preloadable): packages before their submodules. True when learnt now."""
    if bench in state.preload or not reported or not all(isinstance(r, list) for r in reported):
        return False
    state.preload[bench] = sorted({m for mods in reported for m in mods}, key=lambda m: (m.count("."), m))
    return True


def keep_packages(track: Track, sample: dict) -> None:
    """The packages a sample's worker reported (its first round's) go to the track, not the sample."""
    packages = sample.pop("packages", None)
    if isinstance(packages, dict) and track.packages is None:
        track.packages = packages


def measure_round(ctx: RoundContext, bench: Benchmark, r: int, total: int,
                  following: Callable[[], tuple[Benchmark, int] | None] = lambda: None) -> None:
    """Round `r` of one benchmark, where its sides are all still ok; a failure marks the side that
    failed, earlier rounds stay. Lockstep (both sides' workers live on one CPU set, value by value),
    else a sample per side (`sampled_round`: pairing rounds, or one side). `following()`: the round
    measured after this one, as things stand while this one runs (its workers may start during it).

    The benchmark's CPU set is settled in its first round (a command's: from its unpinned warm-up
    runs); from the second round on, a callable whose workers import heavy packages forks them from
    a zygote per side (zygote.py), replaced every FORK_ROUNDS rounds (FORK_ROUNDS_NO_SPARE where the
    next generation would import on the measured CPUs)."""
    plan, sides, state, log = ctx.plan, ctx.sides, ctx.state, ctx.log
    if not state.ok(bench.name, sides):
        return
    if len(sides) != 2 or bench.settings.pairing != "lockstep":
        sampled_round(ctx, bench, r, total)
        return
    own = {s.name: plan.bench(s.name, bench.name) for s in sides}
    envs = ctx.envs(bench)
    placement = state.placements.setdefault(bench.name, placement_for(plan.spec, bench))
    unsettled = placement.cpus is None
    try:
        probes = {}
        for side in sides:
            track = state.track(bench.name, side.name)
            if not track.warmed:
                probe = warm_command(plan.side_spec(side.name), own[side.name], side)
                track.warmed = True
                if probe is not None:
                    probes[side.name] = probe
        if placement.cpus is None and bench.command is not None:
            placement.settle(probes, bench.name)
        got = state.take_ahead(bench.name, r)
        zygotes = got.zygotes if got is not None else state.zygotes.for_round(
            ctx.recipe(bench, envs), spare=placement.spare(), rounds_left=bench.settings.max_rounds - r)
        pairs = process_pairs(bench, zygotes, state)
        parts = []
        for k in range(pairs):  # more than one pair of processes: each round sees as many process states
            rnd = lockstep.Round(
                _shorter(own, pairs), envs, sides, ctx.workdir, round_index=r, rng=ctx.rng, placement=placement,
                zygotes=zygotes, quiet=lambda: state.zygotes.held_beside(placement.cpus),
                ready=got.workers if got is not None and k == 0 else None,
                ahead=(lambda: start_ahead(ctx, bench, placement, following())) if k == pairs - 1 else None,
                loops=state.loops(bench.name, sides))
            parts.append(lockstep.command_round(rnd) if rnd.of_command else lockstep.callable_round(rnd))
        samples = {side.name: _pooled([p[side.name] for p in parts]) for side in sides}
    except (lockstep.RoundFailed, BenchmarkFailed) as exc:
        side = getattr(exc, "side", None) or next(
            (s.name for s in sides if not state.track(bench.name, s.name).warmed), sides[-1].name)
        track = state.track(bench.name, side)
        track.status, track.error = exc.status, f"round {r + 1} failed: {exc.message}"
        log(progress_line(bench.name, side, r, total, None, f"{exc.status}: {exc.message.splitlines()[0]}"))
        state.zygotes.close(bench.name)
        return
    reported = [samples[side.name].pop("preload", None) for side in sides]
    if learn_preload(state, bench.name, reported):
        state.zygotes.prepare(ctx.recipe(bench, envs), placement.spare())
    for side in sides:
        keep_packages(state.track(bench.name, side.name), samples[side.name])
        state.track(bench.name, side.name).samples.append(recorded(samples[side.name]))
    if unsettled and placement.cpus is not None and (placement.warning or (placement.need or 1) > 1):
        log(placement.warning and f"profopt: warning: {placement.warning}" or
            f"profopt: {bench.name}: CPU set {format_cpuset(placement.cpus)} — the step needs {placement.need} "
            f"({'; '.join(f'{k}: {describe(v)}' for k, v in sorted(placement.probes.items()))})")
    progress_of(log).round(bench.name, ratios(state, bench.name, sides), r, total)


FAULTING = 20.0  # page faults a step (a side's median over its rounds so far) of a step whose process state matters
FAULTING_PAIRS = 2
NUMERIC = frozenset({"torch", "numpy", "scipy", "jax", "tensorflow", "sklearn"})


def process_pairs(bench: Benchmark, zygotes, state: RoundState) -> int:
    """Pairs of worker processes a lockstep round of a callable forked from its zygotes takes its
    values from, each for its share of the round. A step that hands memory back to the kernel and
    faults it in again (≥ FAULTING a step), or a tensor library's, runs at a speed its process's
    history sets: two pairs a round put two draws of each side's state in every round — where each
    pair's share of the round still holds lockstep.MIN_PAIRS values a side. Where it does not (a
    step of tens of ms), the split stretched the round to twice its length and paid a second
    build and warm-up for values no less exchangeable (docs/accuracy.md). PROFOPT_ROUND_PAIRS=N sets
    N for every forked round."""
    if not zygotes or bench.command is not None:
        return 1
    text = os.environ.get("PROFOPT_ROUND_PAIRS", "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    mine = [track for (name, _), track in state.tracks.items() if name == bench.name]
    faults = [sorted(s["faults_per_step"] for s in t.samples if s.get("faults_per_step") is not None) for t in mine]
    if not any(p.partition(".")[0] in NUMERIC for p in state.preload.get(bench.name) or ()) \
            and not any(f and f[len(f) // 2] >= FAULTING for f in faults):
        return 1
    # the values a side's round held: split in two, each share must still hold MIN_PAIRS
    held = min((t.samples[-1].get("pairs") or 0 for t in mine if t.samples), default=0)
    return FAULTING_PAIRS if held > FAULTING_PAIRS * lockstep.MIN_PAIRS else 1


def _shorter(own: dict[str, Benchmark], pairs: int) -> dict[str, Benchmark]:
    """Each side's benchmark with its round split between `pairs` pairs of processes."""
    if pairs == 1:
        return own
    return {name: replace(b, settings=msgspec.structs.replace(b.settings, round_ms=b.settings.round_ms / pairs,
                                                              short_round_ms=b.settings.short_round_ms / pairs))
            for name, b in own.items()}


def _pooled(parts: list[dict]) -> dict:
    """One round's sample of a side from its pairs of processes: their values pooled (pair by pair,
    so the round's ratio stays the median of its pairs' ratios), the step time their median."""
    if len(parts) == 1:
        return parts[0]
    import statistics

    first = dict(parts[0])
    values = [v for p in parts for v in p["values_ms"]]
    step = statistics.median(values)
    faults = [p["faults_per_step"] for p in parts if p.get("faults_per_step") is not None]
    peaks = {k: max((p[k] for p in parts if p.get(k) is not None), default=None)
             for k in ("peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb")}
    first.update(values_ms=values, pairs=sum(p["pairs"] for p in parts), step_time_ms=step,
                 throughput=first["throughput"] and first["throughput"] * first["step_time_ms"] / step,
                 faults_per_step=sum(faults) / len(faults) if faults else None, **peaks,
                 process_pairs=len(parts))
    return first


def start_ahead(ctx: RoundContext, current: Benchmark, placement: Placement,
                upcoming: tuple[Benchmark, int] | None) -> None:
    """Start the next round's workers now, on the CPUs this round leaves spare, so their start and
    build overlap this round's values. Only a forked callable round on this round's own CPU set
    qualifies (its zygotes ready: nothing waits, and its next generation imports on the same spare
    CPUs); anything else starts at its own round, as before."""
    state = ctx.state
    if upcoming is None or not may_start_ahead(state, *upcoming, placement):
        return
    bench, r = upcoming
    own = {s.name: ctx.plan.bench(s.name, bench.name) for s in ctx.sides}
    envs = ctx.envs(bench)
    theirs = state.placements[bench.name]
    try:
        zygotes = state.zygotes.for_round(ctx.recipe(bench, envs), spare=theirs.spare(),
                                          rounds_left=bench.settings.max_rounds - r,
                                          wait=False, turnover=bench.name != current.name)
    except NotReady:
        return
    if not zygotes:
        return
    try:
        workers = lockstep.start_workers(lockstep.Round(own, envs, ctx.sides, ctx.workdir, round_index=r, rng=ctx.rng,
                                                        placement=theirs, zygotes=zygotes), cpus=placement.spare())
    except lockstep.RoundFailed:
        # a zygote that did not answer may answer late and out of turn: its round starts new ones
        # (and says what goes wrong, if it does again)
        state.zygotes.close(bench.name)
        return
    state.ahead[bench.name] = Ahead(r, dict(zygotes), workers)


def may_start_ahead(state: RoundState, bench: Benchmark, r: int, placement: Placement) -> bool:
    """Whether round `r` of `bench` may start its workers during a round on `placement`, where a CPU
    is spare: a later round of a callable, forked from its zygote, on the same CPU set. Not a first
    round: its two fresh interpreters would start and build one after the other on the spare CPU,
    which took longer than both starting at once in their own round (docs/experiments.md). Not
    during a round whose step uses a GPU: lockstep.callable_round does not call for it there."""
    theirs = state.placements.get(bench.name)
    return (state.start_ahead and r >= 1 and bool(placement.spare()) and bench.command is None
            and bench.settings.pairing == "lockstep" and bench.name not in state.ahead
            and theirs is not None and theirs.cpus == placement.cpus and bool(state.preload.get(bench.name)))


def ratios(state: RoundState, bench: str, sides: list[Side]) -> list[float]:
    """Head/base step time per round both sides finished (the live line's estimate)."""
    b = {s["round"]: s["step_time_ms"] for s in state.track(bench, sides[0].name).samples}
    h = {s["round"]: s["step_time_ms"] for s in state.track(bench, sides[-1].name).samples}
    return [h[r] / b[r] for r in sorted(b.keys() & h.keys()) if b[r]]
