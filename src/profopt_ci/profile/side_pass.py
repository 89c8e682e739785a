"""After the timed rounds: one run per side for the quality pass and the profile, then the bottleneck note.

In: the `Plan`, the benchmarks, the prepared `Side`s and which (benchmark, side) pairs measured ok.
Out: per benchmark and side the profile summary and the quality trace (measure/quality.py); each
comparison entry annotated with `profile` (per side: the summary; `hot_diff`) and `bottleneck`
(class, evidence, next action: analyze/bottleneck.py).

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
from pathlib import Path

from profopt_ci.measure import quality
from profopt_ci.measure.processes import Side, child_env, failure_of, run_worker
from profopt_ci.measure.zygote import Zygote, ZygoteFailed, ZygotePool, forked_worker
from profopt_ci.specfile.model import Benchmark, Spec
from profopt_ci.specfile.plan import Plan

PROFILE_STEPS = 5


def machine_balance() -> dict:
    """The CPU ridge point of this runner, measured once per run (~1 s)."""
    from profopt_ci.profile import machine

    return machine.probe()


def after_side(spec: Spec, bench: Benchmark, side: Side, workdir: Path, trace_dir: Path | None,
               machine: dict | None, *, profile: bool = True, zygote: Zygote | None = None) -> tuple[dict, dict | None]:
    """(profile summary, quality trace or None) of one benchmark on one side; never raises for
    anything the benchmark did. `profile=False`: the quality pass alone (`profopt run`). A profile
    without a quality pass forks from the side's `zygote` when its rounds left one (the quality
    pass needs a fresh interpreter: PYTHONHASHSEED=0 on both sides)."""
    steps = quality.wanted(bench)
    try:
        if zygote is not None and not steps and bench.callable and profile and bench.settings.profile != "off":
            return _forked_profile(spec, bench, side, workdir, trace_dir, machine, zygote), None
        return _after_side(spec, bench, side, workdir, trace_dir, machine, steps, profile)
    except Exception as exc:  # a corrupt trace, a pstats file the step overwrote: not our verdict to fail
        why = f"{type(exc).__name__}: {str(exc)[:500]}"
        return ({"kind": "none", "reason": f"profiled run failed: {why}"},
                quality.failed("failed", why) if steps else None)


def _after_side(spec: Spec, bench: Benchmark, side: Side, workdir: Path, trace_dir: Path | None,
                machine: dict | None, steps: int, profiled: bool) -> tuple[dict, dict | None]:
    from profopt_ci.profile import capture

    mode = bench.settings.profile if bench.settings.timed and profiled else "off"
    name = f"{bench.name}-{side.name}"
    env = child_env(spec, bench, side)
    if bench.command is not None:
        trace = quality.command_trace(bench, side, env, workdir) if steps else None
        if mode == "off":
            return {"kind": "none", "reason": "profile: off"}, trace
        return capture.capture_command(bench.command, cwd=side.root, env=env, trace_dir=trace_dir, name=name,
                                       timeout_s=bench.settings.timeout_s, machine=machine), trace
    if mode == "off" and not steps:
        return {"kind": "none", "reason": "profile: off"}, None
    job = {"callable": bench.callable, "params": bench.params, "mode": "profile", "profile": mode,
           "trace_dir": str(trace_dir) if trace_dir else None, "name": name, "machine": machine,
           "steps": PROFILE_STEPS, "quality_steps": steps, "seed": quality.SEED}
    res, summary = run_worker(job, side, quality.quality_env(env) if steps else env, workdir, f"profile-{name}",
                              bench.settings.timeout_s)
    if summary is None:
        failure = failure_of(res, bench.settings.timeout_s, f"the profiled run of {bench.name}")
        return ({"kind": "none", "reason": failure.message[:2000]},
                quality.failed(failure.status, failure.message) if steps else None)
    trace = summary.pop("quality_trace", None)
    if steps and not isinstance(trace, dict):
        trace = quality.failed("failed", "the quality pass answered without a trace")
    return summary, trace


def _forked_profile(spec: Spec, bench: Benchmark, side: Side, workdir: Path, trace_dir: Path | None,
                    machine: dict | None, zygote: Zygote) -> dict:
    env = child_env(spec, bench, side)
    name = f"{bench.name}-{side.name}"
    job = {"callable": bench.callable, "params": bench.params, "mode": "profile", "profile": bench.settings.profile,
           "trace_dir": str(trace_dir) if trace_dir else None, "name": name, "machine": machine,
           "steps": PROFILE_STEPS}
    try:
        res, data = forked_worker(zygote, job, side, env, workdir, f"profile-{name}", bench.settings.timeout_s)
    except ZygoteFailed as exc:
        return {"kind": "none", "reason": f"profiled run failed: {exc}"}
    if data is None:
        failure = failure_of(res, bench.settings.timeout_s, f"the profiled run of {bench.name}")
        return {"kind": "none", "reason": failure.message[:2000]}
    return data


def annotate(entry: dict, profiles: dict[str, dict]) -> None:
    """Attach both profiles, the hot-op diff and the head's bottleneck note to a comparison entry."""
    from profopt_ci.analyze import bottleneck as analyze

    base, head = profiles.get("base"), profiles.get("head")
    try:
        entry["profile"] = {"base": base, "head": head, "hot_diff": analyze.hot_diff(base, head)}
        entry["bottleneck"] = analyze.bottleneck(head, entry.get("metrics"), base)
    except Exception as exc:  # a profile answer the step tampered with: drop it, keep the comparison
        reason = f"profile unusable: {type(exc).__name__}: {str(exc)[:300]}"
        none = {"kind": "none", "reason": reason}
        entry["profile"] = {"base": none, "head": none, "hot_diff": []}
        entry["bottleneck"] = None


def profile_all(plan: Plan, benches: list[Benchmark], sides: list[Side], ok: Callable[[str, str], bool],
                workdir: Path, trace_dir: Path | None, log: Callable[[str], None], zygotes: ZygotePool | None = None
                ) -> tuple[dict[str, dict[str, dict]], dict[str, dict[str, dict]]]:
    """({benchmark: {side: profile}}, {benchmark: {side: quality trace}}) for every benchmark and side
    that finished its rounds."""
    wanted = [b for b in benches if (b.settings.profile != "off" and b.settings.timed) or quality.wanted(b)]
    if not wanted:
        return {}, {}
    machine = machine_balance() if any(b.settings.profile != "off" and b.settings.timed for b in wanted) else None
    profiles: dict[str, dict[str, dict]] = {}
    traces: dict[str, dict[str, dict]] = {}
    for bench in wanted:
        todo = [side for side in sides if ok(bench.name, side.name)]
        for side in todo:
            own = plan.bench(side.name, bench.name)
            steps = quality.wanted(own)
            what = " and ".join(x for x in (f"quality pass ({steps} steps)" if steps else "",
                                            "profile" if own.settings.profile != "off" else "") if x)
            log(f"profopt: {bench.name} [{side.name}]: {what}")
        live = zygotes.current(bench.name) if zygotes is not None else None

        def one(side: Side, bench: Benchmark = bench, live: dict | None = live) -> tuple[dict, dict | None]:
            return after_side(plan.side_spec(side.name), plan.bench(side.name, bench.name), side, workdir,
                              trace_dir, machine, zygote=(live or {}).get(side.name))

        # Both sides at once: neither run is timed (the profile's figures are shares of its own step),
        # and a torch import per side is most of each run's time.
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            done = dict(zip([s.name for s in todo], pool.map(one, todo), strict=True))
        for side_name, (summary, trace) in done.items():
            own = plan.bench(side_name, bench.name)
            if own.settings.profile != "off" and own.settings.timed:
                profiles.setdefault(bench.name, {})[side_name] = summary
            if trace is not None:
                traces.setdefault(bench.name, {})[side_name] = trace
    return profiles, traces
