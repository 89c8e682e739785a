"""After the timed rounds: one run per side for the quality pass and the profile, then the bottleneck note.

In: the `Plan`, the benchmarks, the prepared `Side`s and which (benchmark, side) pairs measured ok.
Out: per benchmark and side the profile summary and the quality trace (measure/quality.py); the
bottleneck note is analyze/bottleneck.py's, from these.

Never mixed into the timed samples: this run is its own worker process, taken after the rounds. A
callable's worker first runs the quality pass (`quality_steps` steps from a fresh factory and the
same seeds, for a benchmark with constraints), then profiles that step; a command gets one quality
run beside its profiled one. A profile that fails is recorded as `{"kind": "none", "reason": …}`
and never fails the comparison; a quality pass that fails is a trace with its error, which breaks
the constraints it was for.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from profopt_ci.measure import quality
from profopt_ci.measure.cpus import Placement
from profopt_ci.measure.forked import ForkFrom
from profopt_ci.measure.job_worker import Launch, run_job
from profopt_ci.measure.processes import Side, child_env, failure_of
from profopt_ci.measure.rounds import RoundContext
from profopt_ci.measure.zygote import Zygote, ZygoteFailed
from profopt_ci.specfile.model import Benchmark, Spec

PROFILE_STEPS = 5


@dataclass(frozen=True)
class SidePass:
    """One benchmark's pass on one side: what runs, and where. `machines`: the balance already
    measured on a set of this size, per backend (the profiled worker measures it otherwise, on its own
    CPUs with the step's threads); `zygote`: the side's, when its rounds left one; `cpus`: where it
    runs (None: unpinned)."""

    spec: Spec
    bench: Benchmark
    side: Side
    workdir: Path
    trace_dir: Path | None = None
    machines: dict | None = None
    zygote: Zygote | None = None
    cpus: list[int] | None = None

    @property
    def name(self) -> str:
        return f"{self.bench.name}-{self.side.name}"


def after_side(p: SidePass, *, profile: bool = True) -> tuple[dict, dict | None]:
    """(profile summary, quality trace or None) of one benchmark on one side; never raises for
    anything the benchmark did. `profile=False`: the quality pass alone (`profopt run`). A profile
    forks from the side's zygote when its rounds left one, and so does a quality pass where the
    zygote hashes as the pass must (`forkable`): two fresh interpreters would import a heavy library such
    as torch again, a large share of a compare (docs/experiments.md)."""
    bench = p.bench
    steps = quality.wanted(bench)
    profiled = profile and bench.settings.profile != "off" and bench.settings.timed
    try:
        return _after_side(p, steps, profiled)
    except Exception as exc:  # a corrupt trace, a pstats file the step overwrote: not our verdict to fail
        why = f"{type(exc).__name__}: {str(exc)[:500]}"
        return ({"kind": "none", "reason": f"profiled run failed: {why}"},
                quality.failed("failed", why) if steps else None)


def _job(p: SidePass, mode: str, steps: int) -> dict:
    return {"callable": p.bench.callable, "params": p.bench.params, "mode": "profile", "profile": mode,
            "trace_dir": str(p.trace_dir) if p.trace_dir else None, "name": p.name, "machines": p.machines or {},
            "steps": PROFILE_STEPS, "quality_steps": steps, "seed": quality.SEED}


def _after_side(p: SidePass, steps: int, profiled: bool) -> tuple[dict, dict | None]:
    from profopt_ci.profile.capture_command import capture_command

    bench, side = p.bench, p.side
    mode = bench.settings.profile if bench.settings.timed and profiled else "off"
    env = child_env(p.spec, bench, side)
    if bench.command is not None:
        trace = quality.command_trace(bench, side, env, p.workdir, p.cpus) if steps else None
        if mode == "off":
            return {"kind": "none", "reason": "profile: off"}, trace
        return capture_command(bench.command, cwd=side.root, env=env, trace_dir=p.trace_dir, name=p.name,
                               timeout_s=bench.settings.timeout_s, cpus=p.cpus), trace
    if mode == "off" and not steps:
        return {"kind": "none", "reason": "profile: off"}, None
    fork = ForkFrom(p.zygote) if p.zygote is not None and forkable(p, steps) else None
    try:
        launch = Launch(side, quality.quality_env(env) if steps else env, p.workdir, f"profile-{p.name}",
                        bench.settings.timeout_s, p.cpus)
        res, summary = run_job(_job(p, mode, steps), launch, fork)
    except ZygoteFailed as exc:
        return ({"kind": "none", "reason": f"profiled run failed: {exc}"},
                quality.failed("failed", str(exc)) if steps else None)
    return _answered(p, steps, res, summary)


def _answered(p: SidePass, steps: int, res, answer: dict | None) -> tuple[dict, dict | None]:
    """A pass's worker's answer as (profile summary, quality trace or None), its failure worded."""
    if answer is None:
        failure = failure_of(res, p.bench.settings.timeout_s, f"the profiled run of {p.bench.name}")
        return ({"kind": "none", "reason": failure.message[:2000]},
                quality.failed(failure.status, failure.message) if steps else None)
    trace = answer.pop("quality_trace", None)
    if steps and not isinstance(trace, dict):
        trace = quality.failed("failed", "the quality pass answered without a trace")
    return answer, trace


def forkable(p: SidePass, steps: int) -> bool:
    """Whether the pass may fork from its zygote: always for a profile alone; for a quality pass only
    where the zygote started with the hash seed the pass runs with (set and dict order are work and
    values), which child_env gives every process of a benchmark with constraints."""
    return not steps or (p.zygote is not None and p.zygote.hashseed ==
                         quality.quality_env(child_env(p.spec, p.bench, p.side))["PYTHONHASHSEED"])


def pass_sets(placement: Placement | None, sides: int) -> list[list[int] | None]:
    """Where each side's pass runs: disjoint CPU sets of the measured set's size when the pool holds
    one per side (then the passes run at once), else [the measured set] (one after the other there).
    Unpinned ([None]) for a benchmark that settled no set (pairing: rounds, profopt run)."""
    if placement is None or not placement.cpus:
        return [None]
    need = len(placement.cpus)
    picked = placement.beside(need * (sides - 1)) if sides > 1 else None
    if picked is None:
        return [list(placement.cpus)]
    return [list(placement.cpus), *(picked[i * need:(i + 1) * need] for i in range(sides - 1))]


def has_pass(bench: Benchmark, worth_a_profile: bool = True) -> bool:
    """Whether a pass runs for `bench` after its rounds: its profile (on, timed, and worth one) or its
    quality pass (a constraint to check)."""
    return (bench.settings.profile != "off" and bench.settings.timed and worth_a_profile) or bool(quality.wanted(bench))


SKIPPED = {"kind": "none", "skipped": "unchanged", "reason": "not profiled: its step time and memory did not change"}
NO_TIME = {"kind": "none", "skipped": "budget", "reason": "not profiled: the time budget was spent"}


def profile_all(ctx: RoundContext, benches: list[Benchmark], ok: Callable[[str, str], bool],
                trace_dir: Path | None, *, skip: Callable[[str], dict | None] = lambda _: None,
                ) -> tuple[dict[str, dict[str, dict]], dict[str, dict[str, dict]]]:
    """({benchmark: {side: profile}}, {benchmark: {side: quality trace}}) for every benchmark and side
    that finished its rounds: `ctx` is the rounds' (their plan, sides, zygotes and CPU sets).

    Each side's pass runs as its step ran in the rounds: pinned to the benchmark's CPU set, and
    alone there — the two sides one after the other, unless the pool holds a disjoint set of that
    size for each (`pass_sets`). Two torch passes with two spinning threads each on one 2-CPU set
    took three times as long as the timed rounds, and profiled a step slowed by the other: its
    shares and bottleneck class described the fight, not the step. The machine's balance is
    measured by the first profiled pass on a set of each size, alone, and reused by the rest.

    `skip(name)`, asked at the benchmark's turn: None where its profile is worth its pass, else the
    summary it gets instead (compare: `SKIPPED` where its step time and memory held, `NO_TIME` where
    the time budget has no room left); its quality pass runs all the same."""
    plan, sides, log = ctx.plan, ctx.sides, ctx.log
    zygotes, placements = ctx.state.zygotes, ctx.state.placements
    said: dict[str, dict | None] = {}

    def profiling(b: Benchmark) -> bool:
        if b.settings.profile == "off" or not b.settings.timed:
            return False
        if b.name not in said:
            said[b.name] = skip(b.name)
        return said[b.name] is None

    wanted = [b for b in benches if has_pass(b)]
    profiles: dict[str, dict[str, dict]] = {}
    traces: dict[str, dict[str, dict]] = {}
    machines: dict[int, dict] = {}  # CPU-set size → {backend: balance}
    for bench in wanted:
        todo = [side for side in sides if ok(bench.name, side.name)]
        if not profiling(bench) and not quality.wanted(bench):
            continue
        for side in todo:
            own = plan.bench(side.name, bench.name)
            steps = quality.wanted(own)
            what = " and ".join(x for x in (f"quality pass ({steps} steps)" if steps else "",
                                            "profile" if profiling(own) else "") if x)
            log(f"profopt: {bench.name} [{side.name}]: {what}")
        live = zygotes.current(bench.name)
        sets = pass_sets(placements.get(bench.name), len(todo))
        size = len(sets[0] or ())
        known = machines.setdefault(size, {})

        def one(side: Side, cpus: list[int] | None, bench: Benchmark = bench, live: dict | None = live,
                known: dict = known) -> tuple[dict, dict | None]:
            out = after_side(SidePass(plan.side_spec(side.name), plan.bench(side.name, bench.name), side, ctx.workdir,
                                      trace_dir, dict(known), (live or {}).get(side.name), cpus),
                             profile=profiling(bench))
            balance = out[0].get("machine") if isinstance(out[0], dict) else None
            if isinstance(balance, dict) and balance.get("backend"):
                known.setdefault(str(balance["backend"]), balance)
            return out

        done: dict[str, tuple[dict, dict | None]] = {}
        queue = list(todo)
        if len(sets) > 1 and not known and queue:  # the balance is measured alone, by the first pass
            first = queue.pop(0)
            done[first.name] = one(first, sets[0])
        if len(sets) > 1:
            with ThreadPoolExecutor(max_workers=max(1, len(queue))) as pool:
                done.update(zip([s.name for s in queue], pool.map(one, queue, sets[:len(queue)]), strict=True))
        else:
            for side in queue:
                done[side.name] = one(side, sets[0])
        for side_name, (summary, trace) in done.items():
            own = plan.bench(side_name, bench.name)
            if profiling(own):
                profiles.setdefault(bench.name, {})[side_name] = summary
            if trace is not None:
                traces.setdefault(bench.name, {})[side_name] = trace
    skipped = {b.name: {side.name: dict(said[b.name]) for side in sides if ok(b.name, side.name)}
               for b in benches if said.get(b.name) is not None}
    return {**skipped, **profiles}, traces
