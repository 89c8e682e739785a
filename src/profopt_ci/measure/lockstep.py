"""Lockstep pairing: one round of base vs head, the two sides measured value by value, alternately.

In: each side's benchmark (the plan's settings), its environment, the two `Side`s, the CPU set both
share, a seeded rng. Out: {side: sample} with the keys of docs/data-model.md — `step_time_ms` is
the median of the side's values this round, `values_ms` the values, `pairs` how many — or
`RoundFailed` naming the side, the cause and its stderr tail.

Why: on a shared VM the CPU changes speed within tens of milliseconds, so two fresh processes
measured hundreds of ms apart are not really paired (docs/accuracy.md). Two live workers pinned
to the same CPUs and asked for one ~2 ms value each, in an order drawn per pair, see the same
machine state; a fresh pair of processes each round keeps process-level effects (layout, hash seed,
allocator) in the round-to-round spread, where the paired statistics account for them.

A callable runs in `profopt_ci.measure.worker --serve` (protocol in worker.py) over a private pipe pair,
never stdout; a command alternates whole processes (COMMAND_PAIRS pairs a round). Each worker is
pinned (sched_setaffinity in its preexec) and dies with us (PR_SET_PDEATHSIG); both are killed
when the round ends, however it ends.
"""
from __future__ import annotations

import contextlib
import json
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from random import Random

from profopt_ci.figures import per_step, sig
from profopt_ci.measure import gpu, other_load
from profopt_ci.measure.cpus import Placement
from profopt_ci.measure.forked import ForkFrom
from profopt_ci.measure.live_worker import RoundFailed, WorkerProcess, kill_workers, lead_steps
from profopt_ci.measure.processes import (
    Side,
    _throughput,
    command_argv,
    failure_of,
    parse_metrics,
    run_command,
)
from profopt_ci.measure.turns import Channel, Turns
from profopt_ci.measure.zygote import Zygote, shared
from profopt_ci.specfile.keys import SHORT_STEP_MS
from profopt_ci.specfile.load import Benchmark, Settings

Quiet = Callable[[], contextlib.AbstractContextManager]  # what holds profopt's background work while timing

MIN_PAIRS = 10
MAX_PAIRS = 2000
COMMAND_PAIRS = 3


@dataclass(frozen=True)
class Round:
    """One lockstep round of one benchmark, built once by its caller (rounds.measure_round) and read
    by every step of it: each side's benchmark (the plan's settings) and child environment, the
    sides, the work directory, the round's index, the seeded rng and the CPU set both sides share.
    `zygotes`: what the workers fork from (None: fresh processes); `quiet()`: held from the first
    probe to the last value (what profopt runs in the background waits there). A callable's round
    also reads `ready`, `ahead` and `loops` (see callable_round)."""

    benches: Mapping[str, Benchmark]
    envs: Mapping[str, dict[str, str]]
    sides: list[Side]
    workdir: Path
    round_index: int
    rng: Random
    placement: Placement
    zygotes: Mapping[str, Zygote] | None = None
    quiet: Quiet = contextlib.nullcontext
    ready: Mapping[str, WorkerProcess] | None = None
    ahead: Callable[[], None] | None = None
    loops: int | None = None

    @property
    def settings(self) -> Settings:
        """Both sides' round settings are the first side's: one round length, one pair count."""
        return self.benches[self.sides[0].name].settings

    @property
    def of_command(self) -> bool:
        return self.benches[self.sides[0].name].command is not None


@dataclass(frozen=True)
class Drawn:
    """A round's paired values: {side: values (ns)}, who went first in each pair, the steps a value holds."""

    values: Mapping[str, list[int]]
    first: list[str]
    loops: int


def round_length(settings: Settings, warm_ns: Mapping[str, int], loops: int) -> float:
    """The round's ms: `short_round_ms` when every side's step is under SHORT_STEP_MS, else `round_ms`."""
    short = max(warm_ns.values()) < SHORT_STEP_MS * 1e6 * loops
    return settings.short_round_ms if short else settings.round_ms


def pair_count(round_ms: float, value_ns: Mapping[str, int]) -> int:
    """Pairs that fill about `round_ms`, given one value's duration per side."""
    per_pair = max(sum(value_ns.values()), 1)
    return max(MIN_PAIRS, min(MAX_PAIRS, int(round_ms * 1e6 / per_pair)))


def energy_blocks(channels: Mapping[str, Channel], turns: Turns, reads: gpu.RoundReads, rng: Random,
                  steps_per_value: int) -> dict[str, dict]:
    """Each side alone for one block of values, in a drawn order, the energy counter read just before
    and just after it: {side: {energy_mj, energy_steps, energy_ms, energy_period_ms, energy_values}}.

    Why blocks and not the paired values: NVML's counter moves in steps of its own period (tens of
    ms on many boards), far longer than a ~2 ms value, so a delta read around one value credits a
    side with whatever update fell inside it — on average its share of the round's time at the
    round's mean power, whichever side drew the power. A block that spans several of the counter's
    own updates (gpu.ENERGY_PERIODS, read every gpu.ENERGY_READ_NS between its values; within
    gpu.ENERGY_BLOCK_MS) is the side's own energy, off by about one period's worth at each end."""
    low, high = (ms * 1e6 for ms in gpu.ENERGY_BLOCK_MS)
    order = sorted(channels)
    rng.shuffle(order)
    out = {}
    for name in order:
        turns.to(name)
        reads.take(name)
        start = reads.reads[name][-1]
        if start["energy_mj"] is None:
            continue
        values, moved, last_mj, last_ns = 0, 0, start["energy_mj"], start["t_ns"]
        while True:
            channels[name].value_ns()
            values += 1
            now = time.perf_counter_ns()
            if now - start["t_ns"] >= high:
                break
            if now - last_ns >= gpu.ENERGY_READ_NS:
                mj, last_ns = reads.device.energy_mj(), now
                moved, last_mj = moved + (mj != last_mj), mj
            if values >= 3 and moved > gpu.ENERGY_PERIODS and now - start["t_ns"] >= low:
                break
        reads.take(name)
        end = reads.reads[name][-1]
        if end["energy_mj"] is None:
            continue
        span_ms = (end["t_ns"] - start["t_ns"]) / 1e6
        out[name] = {"energy_mj": end["energy_mj"] - start["energy_mj"], "energy_steps": values * steps_per_value,
                     "energy_ms": sig(span_ms, 6),
                     "energy_period_ms": sig(span_ms / moved, 4) if moved else None, "energy_values": values}
    return out


def start_workers(rnd: Round, cpus: list[int] | None = None) -> dict[str, WorkerProcess]:
    """A round's two workers, started at once (in sides' order); they build while the caller goes on.
    `cpus`: where forked ones start (see WorkerProcess), else unpinned."""
    workers: dict[str, WorkerProcess] = {}
    zygotes = rnd.zygotes or {}
    pad = bool(zygotes) and not shared(zygotes)  # per-side zygotes: each child draws its own layout
    started = list(rnd.sides)
    rnd.rng.shuffle(started)  # forked from one zygote, neither side may always be its first child
    try:
        for side in started:  # start-up is not measured
            zygote = zygotes.get(side.name)
            workers[side.name] = WorkerProcess.start(side, rnd.benches[side.name], rnd.envs[side.name], rnd.workdir,
                                               rnd.round_index, ForkFrom(zygote, pad, cpus) if zygote is not None else None)
    except RoundFailed:
        close_workers(workers.values())
        raise
    return {side.name: workers[side.name] for side in rnd.sides}


def close_workers(workers) -> None:
    workers = list(workers)
    kill_workers(workers)
    for w in workers:
        w.close()


def callable_round(rnd: Round) -> dict[str, dict]:
    """One lockstep round of a callable benchmark: {side name: sample}. The first round (no CPU set
    settled yet) probes both steps before they are pinned; every sample says what its worker could
    preload (`preload`: the zygote's packages for the next rounds). `quiet()` is held from the probe to
    the last value: what profopt runs in the background (a zygote importing) waits there, and goes on
    while the workers start and build.

    `rnd.ready`: this round's workers, started ahead (already built or building, off the measured CPUs).
    `rnd.ahead()` is called once this round's workers are pinned, before anything is timed: it may start
    the next round's workers on the CPUs this round leaves spare, so their start and build (a pytest
    session, for a suite) overlap this round's values instead of adding to the wall. Not where
    this round's step initialized a GPU: a build beside it might use the device being timed.

    `rnd.loops`: the loop count of the benchmark's earlier rounds; none given, each side calibrates
    alone and both take the smaller count. Kept from round to round, a value holds the same number
    of steps in every round (and a round does not pay to find it again)."""
    placement, rng, loops = rnd.placement, rnd.rng, rnd.loops
    workers: dict[str, WorkerProcess] = dict(rnd.ready or {})
    try:
        if not workers:
            workers = start_workers(rnd)
        built = {name: w.answer("built") for name, w in workers.items()}  # both build at once, untimed
        with rnd.quiet():
            turns = Turns(workers)
            if placement.cpus is None:  # one at a time: each probe sees the pool to itself
                placement.settle({name: _alone(turns, name, lambda w: w.answer("threads", "p"))
                                  for name in workers}, rnd.benches[rnd.sides[0].name].name)
            if placement.cpus:
                for name in workers:
                    _alone(turns, name, lambda w: w.pin(placement.cpus))
            if rnd.ahead is not None and not any(b.get("cuda") for b in built.values()):
                rnd.ahead()  # not beside a GPU step: a build there could allocate and run on the timed device
            # One at a time, so each calibration sees the CPU to itself; then one loop count for both:
            # values of unequal length would meet a competing process's time slices unequally.
            if loops is None:
                loops = min(_alone(turns, name, lambda w: _int(w, w.expect("loops", w.ask("c"))))
                            for name in workers)
            warm = {name: _alone(turns, name, lambda w: _int(w, w.expect("ready", w.ask(f"w {loops}"))))
                    for name in workers}
            lead = lead_steps()  # the untimed steps before each value take round time too
            per_value = {n: ns * (loops + lead) // loops for n, ns in warm.items()}
            pairs = pair_count(round_length(rnd.settings, warm, loops), per_value)
            reads = _gpu_reads(built, rnd.envs, list(workers))
            names = sorted(workers)
            values: dict[str, list[int]] = {n: [] for n in names}
            first: list[str] = []
            with other_load.window(placement.cpus, [w.proc.pid for w in workers.values()]) as window:
                # The values: each pair in an order drawn afresh, each value while the other side is held.
                for _ in range(pairs):
                    order = names[:]
                    rng.shuffle(order)
                    first.append(order[0])
                    for n in order:
                        turns.to(n)
                        values[n].append(workers[n].value_ns())
                        if isinstance(reads, gpu.RoundReads):
                            reads.after_value(n)  # the GPU's telemetry between values
                energy = energy_blocks(workers, turns, reads, rng, loops + lead) \
                    if isinstance(reads, gpu.RoundReads) else {}
            placement.loaded(window)
        turns.all()
        for w in workers.values():  # asked at once: the first round's answers list packages, slow to gather
            w.send("q")
        finals = {}
        for name, w in workers.items():
            try:
                finals[name] = json.loads(w.expect("done", w.reply()))
            except json.JSONDecodeError:
                raise w.lost("sent a corrupt final answer") from None
    finally:
        close_workers(workers.values())
    out = {}
    throttled = isinstance(reads, gpu.RoundReads) and reads.throttled()
    drawn = Drawn(values, first, loops)
    for side in rnd.sides:
        block = energy.get(side.name, {})
        sample = _sample(rnd.benches[side.name], rnd.round_index, side.name, drawn, finals[side.name],
                         block.get("energy_values", 0))
        if isinstance(reads, gpu.RoundReads):
            sample["gpu"] = reads.block(side.name, {k: v for k, v in block.items() if k != "energy_values"},
                                        throttled)
            steps = block.get("energy_steps")
            sample["energy_per_step_j"] = sig(block["energy_mj"] / 1000.0 / steps, 6) \
                if steps and block.get("energy_mj") is not None and block["energy_mj"] > 0 else None
        elif isinstance(reads, str):
            sample["gpu"] = {"reads": 0, "unavailable": reads}
        sample["forked"] = workers[side.name].forked
        sample["ahead"] = bool(rnd.ready)
        preload = built[side.name].get("preload")
        if isinstance(preload, list):
            sample["preload"] = [str(p) for p in preload][:20000]
        if isinstance(finals[side.name].get("packages"), dict):  # the first round's: the side's environment
            sample["packages"] = finals[side.name]["packages"]
        out[side.name] = sample
    return out


def _gpu_reads(built: Mapping[str, dict], envs: Mapping[str, dict[str, str]],
               names: list[str]) -> gpu.RoundReads | str | None:
    """The round's GPU telemetry where its step initialized CUDA: reads on the device the step uses,
    or why NVML cannot be read (a string); None for a step that did not use a GPU."""
    used = [n for n in names if built[n].get("cuda")]
    if not used:
        return None
    device = gpu.open_device(built[used[0]].get("gpu"), envs[used[0]])
    if device is None:
        return gpu.unavailable() or "NVML has no handle for the device the step used"
    return gpu.RoundReads(device, names)


def _alone(turns: Turns, name: str, ask):
    """`ask(worker)` while every other side is held."""
    turns.to(name)
    return ask(turns.channels[name])


def _int(w: WorkerProcess, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise w.lost(f"answered {text[:80]!r} instead of a number") from None


def _sample(bench: Benchmark, round_index: int, side: str, drawn: Drawn, final: dict, more_values: int = 0) -> dict:
    """A side's sample of the round; `more_values`: values its worker timed besides the paired ones
    (its energy block), whose steps count in its page faults too."""
    first, loops = drawn.first, drawn.loops
    ms = [sig(ns / loops / 1e6, 6) for ns in drawn.values[side]]
    step = statistics.median(ms)
    hwm = final.get("vm_hwm_kb")
    sample = {
        "round": round_index, "order": 0 if first and first[0] == side else 1, "pairing": "lockstep",
        "pairs": len(ms), "first_share": sig(first.count(side) / len(first), 6) if first else None,
        "step_time_ms": step, "values_ms": ms, "loops": loops, "throughput": _throughput(bench, step),
        "peak_memory_mb": hwm / 1024.0 if hwm else None, "cpu_time_ms": None,
        "faults_per_step": per_step(final.get("page_faults"), loops * (len(ms) + more_values)),
        "cuda_max_allocated_mb": final.get("cuda_max_allocated_mb"),
        "cuda_max_reserved_mb": final.get("cuda_max_reserved_mb"),
        "phases_ms": final.get("phases_ms") or {}, "quality": final.get("quality") or {},
    }
    if isinstance(final.get("compile"), dict):
        sample["compile"] = final["compile"]
    return sample


def command_round(rnd: Round, pairs: int = COMMAND_PAIRS) -> dict[str, dict]:
    """One round of a command benchmark: whole processes alternated base/head, `pairs` pairs (on the
    CPU set its warm-up runs settled: rounds.measure_round), all of it within `quiet()`."""
    with rnd.quiet():
        return _command_round(rnd, pairs)


def _command_round(rnd: Round, pairs: int) -> dict[str, dict]:
    sides = rnd.sides
    runs: dict[str, list] = {s.name: [] for s in sides}
    first: list[str] = []
    for _ in range(pairs):
        order = list(sides)
        rnd.rng.shuffle(order)
        first.append(order[0].name)
        for side in order:
            b = rnd.benches[side.name]
            res = run_command(command_argv(b.command), cwd=side.root, env=dict(rnd.envs[side.name]),
                              timeout_s=b.settings.timeout_s, workdir=rnd.workdir, cpus=rnd.placement.cpus)
            if res.timed_out or res.returncode != 0:
                exc = failure_of(res, b.settings.timeout_s, f"the command of {b.name} on {side.name}")
                raise RoundFailed(side.name, exc.status, exc.message)
            runs[side.name].append(res)
    out = {}
    for side in sides:
        res, b = runs[side.name], rnd.benches[side.name]
        walls = [sig(r.wall_ns / 1e6, 6) for r in res]
        step = statistics.median(walls)
        out[side.name] = {
            "round": rnd.round_index, "order": 0 if first[0] == side.name else 1, "pairing": "lockstep",
            "pairs": pairs, "step_time_ms": step, "values_ms": walls, "loops": 1,
            "throughput": _throughput(b, step), "peak_memory_mb": max(r.maxrss_kb for r in res) / 1024.0,
            "cpu_time_ms": statistics.median(r.cpu_s for r in res) * 1000.0, "cuda_max_allocated_mb": None,
            "cuda_max_reserved_mb": None, "phases_ms": {}, "quality": parse_metrics(res[-1].stdout),
        }
    return out
