"""What compare says about how it measured: the pairing, each benchmark's CPU set and why, a set
narrower than the step, and other work on the set while it was timed.

In: the plan and the benchmarks; after the rounds, each benchmark's settled `Placement`. Out:
messages for the terminal (said once, as they are known) and for the comparison's notes.
"""
from __future__ import annotations

from profopt_ci.cpulists import format_cpuset, parse_cpuset
from profopt_ci.measure.cpus import Placement, placement_for
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan
from profopt_ci.words.i18n import Note, message, say


def pairing_notes(plan: Plan, benches: list[Benchmark], log) -> list[Note]:
    """How the pairing runs, said once on the terminal now and once in the report (the CPU set of
    each benchmark is settled by its first round: `placement_notes`)."""
    for b in benches:
        placement_for(plan.spec, b)  # a bad cpuset is a usage error before anything runs
    kinds = sorted({b.settings.pairing for b in benches})
    lock = [b for b in benches if b.settings.pairing == "lockstep"]
    lines = []
    if lock:
        s = lock[0].settings
        callables = [b for b in lock if b.command is None]
        commands = len(callables) < len(lock)
        if callables:
            if s.short_round_ms != s.round_ms:
                lines.append(message("note.lockstep_both_short" if commands else "note.lockstep_live_short",
                                     value_ms=s.value_ms, round_ms=s.round_ms, short_round_ms=s.short_round_ms))
            else:
                lines.append(message("note.lockstep_both" if commands else "note.lockstep_live",
                                     value_ms=s.value_ms, round_ms=s.round_ms))
        else:
            lines.append(message("note.lockstep_commands"))
    if "rounds" in kinds:
        r = next(b for b in benches if b.settings.pairing == "rounds").settings
        names = [b.name for b in benches if b.settings.pairing == "rounds"]
        lines.append(message("note.pairing_rounds", names=names, values=r.values, min_time_ms=r.min_time_ms))
    for line in lines:
        log(f"profopt: {say('en', line)}")
    return lines


def placement_notes(benches: list[Benchmark], placements: dict[str, Placement]) -> list[Note]:
    """Each benchmark's settled CPU set and why, once; a warning where it is narrower than the step,
    and where other work took the set while it was timed."""
    sets: dict[str, list[str]] = {}
    whys: dict[str, dict] = {}
    warnings = []
    for b in benches:
        p = placements.get(b.name)
        if p is None or p.cpus is None:
            continue
        sets.setdefault(format_cpuset(p.cpus), []).append(b.name)
        if p.why is not None:
            whys.setdefault(format_cpuset(p.cpus), p.why)
        if p.warning:
            warnings.append(narrow_note(b.name, p))
    warnings = [*(message("note.cpu_why" if len(parse_cpuset(cpus)) == 1 else "note.cpus_why", cpus=cpus,
                          names=sets[cpus], why=why) for cpus, why in whys.items()), *warnings]
    if not sets:
        return warnings
    if len(sets) == 1:
        (cpus, _), = sets.items()
        line = message("note.cpuset", cpus=cpus)
    else:
        line = message("note.cpusets", sets=list(sets.items()))
    return [line, *warnings, *other_load_notes(benches, placements)]


def other_load_notes(benches: list[Benchmark], placements: dict[str, Placement]) -> list[Note]:
    """Where other work took more than a few percent of a benchmark's CPU set while it was timed."""
    out = []
    for b in benches:
        p = placements.get(b.name)
        load = p.load if p is not None else None
        if load is None or not load.noted or not p.cpus:
            continue
        out.append(message("note.other_load_one" if len(p.cpus) == 1 else "note.other_load", name=b.name,
                           cpus=format_cpuset(p.cpus), share=load.share, other_s=load.other_s,
                           capacity_s=load.capacity_s))
    return out


def narrow_note(name: str, p: Placement) -> dict:
    """measure/cpus.Placement.warning as a message: the step needs more CPUs than it was pinned to."""
    sides = [[side, probe.get("busy") or 0, sorted((probe.get("declared") or {}).items())]
             for side, probe in sorted(p.probes.items())]
    return message("note.narrow", name=name, need=p.need, sides=sides, have=len(p.cpus or []),
                   where="the cpuset asked for" if p.requested else "profopt may use", cpus=format_cpuset(p.cpus or []))
