"""After the timed rounds: one profiled run per side, then the bottleneck note.

In: the `Plan`, the benchmarks, the prepared `Side`s and which (benchmark, side) pairs measured ok.
Out: each comparison entry annotated with `profile` (per side: the summary; `hot_diff`) and
`bottleneck` (class, evidence, next action: analyze/bottleneck.py).

Never mixed into the timed samples: a profiled run is its own worker process, taken after the
rounds, and its figures only feed the phase breakdown, the hot-op diff and the rule engine. A
profile that fails is recorded as `{"kind": "none", "reason": …}`; it never fails the comparison.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from profopt_ci.measure.processes import Side, child_env, failure_of, run_worker
from profopt_ci.spec.model import Benchmark, Spec
from profopt_ci.spec.plan import Plan

PROFILE_STEPS = 5


def machine_balance() -> dict:
    """The CPU ridge point of this runner, measured once per run (~1 s)."""
    from profopt_ci.profile import machine

    return machine.probe()


def profile_side(spec: Spec, bench: Benchmark, side: Side, workdir: Path, trace_dir: Path | None,
                 machine: dict) -> dict:
    """The profile summary of one benchmark on one side (docs/data-model.md); never raises for
    anything the benchmark did: a profile that fails is `{"kind": "none", "reason": …}`."""
    try:
        return _profile_side(spec, bench, side, workdir, trace_dir, machine)
    except Exception as exc:  # a corrupt trace, a pstats file the step overwrote: not our verdict to fail
        return {"kind": "none", "reason": f"profiled run failed: {type(exc).__name__}: {str(exc)[:500]}"}


def _profile_side(spec: Spec, bench: Benchmark, side: Side, workdir: Path, trace_dir: Path | None,
                  machine: dict) -> dict:
    from profopt_ci.profile import capture as profile

    mode = bench.settings.profile
    if mode == "off":
        return {"kind": "none", "reason": "profile: off"}
    name = f"{bench.name}-{side.name}"
    env = child_env(spec, bench, side)
    if bench.command is not None:
        return profile.capture_command(bench.command, cwd=side.root, env=env, trace_dir=trace_dir, name=name,
                                       timeout_s=bench.settings.timeout_s, machine=machine)
    job = {"callable": bench.callable, "params": bench.params, "mode": "profile", "profile": mode,
           "trace_dir": str(trace_dir) if trace_dir else None, "name": name, "machine": machine,
           "steps": PROFILE_STEPS}
    res, summary = run_worker(job, side, env, workdir, f"profile-{name}", bench.settings.timeout_s)
    if summary is None:
        failure = failure_of(res, bench.settings.timeout_s, f"the profiled run of {bench.name}")
        return {"kind": "none", "reason": failure.message[:2000]}
    return summary


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
                workdir: Path, trace_dir: Path | None, log: Callable[[str], None]) -> dict[str, dict[str, dict]]:
    """{benchmark: {side: profile}} for every benchmark and side that finished its rounds."""
    wanted = [b for b in benches if b.settings.profile != "off"]
    if not wanted:
        return {}
    machine = machine_balance()
    out: dict[str, dict[str, dict]] = {}
    for bench in wanted:
        for side in sides:
            if not ok(bench.name, side.name):
                continue
            log(f"profopt: profiling {bench.name} [{side.name}]")
            own_spec, own_bench = plan.side_spec(side.name), plan.bench(side.name, bench.name)
            out.setdefault(bench.name, {})[side.name] = profile_side(own_spec, own_bench, side, workdir, trace_dir, machine)
    return out
