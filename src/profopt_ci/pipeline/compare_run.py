"""One compare's state (`CompareRun`) and the comparison@1 document made from it (`comparison`):
what `pipeline/compare_refs.py` has measured so far in, the document out (docs/data-model.md).

In: the run — its plan, sides, round state, the α each benchmark's last look spent, the profiles
and the counted instructions, the gate's reach, the budget's cuts, a confirming second run. Out: one
decided entry per compared benchmark (`entries_of`), and the document, built last: nothing edits it
afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from profopt_ci.analyze import instruction_entries
from profopt_ci.analyze.bottleneck import annotate
from profopt_ci.analyze.decide import decided
from profopt_ci.analyze.judge import ALPHA, build_entry, finish
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.measure import instruction_runs
from profopt_ci.measure.cpus import format_cpuset
from profopt_ci.measure.processes import Side, own_environment
from profopt_ci.measure.rounds import RoundState
from profopt_ci.measure.suite_runner import environment_record
from profopt_ci.pipeline import confirm
from profopt_ci.pipeline.budget import Budget
from profopt_ci.pipeline.compare_notes import placement_notes
from profopt_ci.pipeline.entries import (
    accepted_note,
    compile_notes,
    differences,
    fault_notes,
    gpu_notes,
    outlier_notes,
    policy,
    track_dict,
    verdict,
)
from profopt_ci.pipeline.guards import new_entries
from profopt_ci.pipeline.reach_gate import Gate, unmeasured_entry
from profopt_ci.pipeline.stored import Nightly, base_nightly
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan
from profopt_ci.store.stored_baselines import nightly_step_times
from profopt_ci.words.i18n import Note, message


@dataclass
class CompareRun:
    """One compare's state, from the prepared sides to the comparison document."""

    plan: Plan
    sides: list[Side]
    benches: list[Benchmark]  # compared: both sides have them
    new: list[Benchmark]  # new in the PR: measured on head only
    seed: int
    dirty: bool
    notes: list[Note]  # said before measuring (pairing, new in the PR)
    state: RoundState = field(default_factory=RoundState)
    fps: dict[str, dict] = field(default_factory=dict)
    alphas: dict[str, float] = field(default_factory=dict)
    profiles: dict[str, dict[str, dict]] = field(default_factory=dict)
    instr: dict[str, dict[str, dict]] = field(default_factory=dict)
    runner: dict | None = None  # the runner probe against the label's history (measure/runner.py)
    runner_note: dict | None = None
    second: CompareRun | None = None  # confirm: the flagged benchmarks measured again, independently
    fail_on: str | None = None  # the policy (--fail-on); None: no policy section
    nightly: Nightly | None = None  # --baseline both: the base's nightly runs, for drift and history
    alone: bool = True  # a side that failed first: the other still measured alone, its results kept
    gate: Gate = field(default_factory=Gate)  # measure: changed — what the change reaches
    skipped: list[Benchmark] = field(default_factory=list)  # compared, but the change reaches none of their code
    budget: Budget = field(default_factory=Budget)  # time_budget: the wall time the compare may take
    accept: str | None = None  # the accept label the pull request carries: a failing policy passes

    @property
    def same_commit(self) -> bool:
        return self.sides[0].commit == self.sides[1].commit



def _side_meta(side: Side, fp: dict | None, plan: Plan, state: RoundState | None = None) -> dict:
    env = dict(plan.side_spec(side.name).env)
    meta = {"ref": side.ref, "commit": side.commit, "fingerprint": fp or {}, "env": env}
    if state is not None:
        meta["environment"] = side_environment(side, state)
    return meta



def side_environment(side: Side, state: RoundState) -> dict:
    """The interpreter a side ran, whether in its own setup venv, and what its steps imported."""
    packages: dict[str, str] = {}
    for (_, name), track in sorted(state.tracks.items()):
        if name == side.name and track.packages:
            packages.update(track.packages)
    return {"python": side.python, "own": own_environment(side), "packages": dict(sorted(packages.items())),
            **environment_record(side)}



def entries_of(run: CompareRun) -> list[dict]:
    """One decided entry per compared benchmark, at the α its last look spent."""
    entries = []
    for b in run.benches:
        judged = run.plan.judged(b.name)
        entry = build_entry(judged, track_dict(run.state, b, "base"), track_dict(run.state, b, "head"),
                            paired=True, alpha=run.alphas.get(b.name, ALPHA))
        entries.append(instruction_entries.merge(_pairing_of(entry, run, b), judged,
                                                 run.instr.get(b.name)))  # instrument: instructions
    entries = instruction_entries.mark_failures(finish(entries, {b.name: run.plan.judged(b.name) for b in run.benches}))
    entries = [annotate(e, run.profiles[e["name"]]) if e["name"] in run.profiles and e["decision"] != "failed" else e
               for e in entries]
    entries = [_cut_short(e, run.state.cut[e["name"]]) if e["name"] in run.state.cut else e for e in entries]
    return [comparison_doc.revised(e, reach=run.gate.reach[e["name"]]) if e["name"] in run.gate.reach else e
            for e in entries]



def _cut_short(entry, rounds: int):
    """A benchmark the time budget stopped: undecided, it is inconclusive and says so; one that got no
    round at all is inconclusive too, not failed."""
    if rounds == 0:
        return decided(entry, "inconclusive", message("reason.budget_none"), error=None)
    if entry["decision"] == "inconclusive":
        return decided(entry, "inconclusive", message("reason.budget", rounds=rounds))
    return entry



def _with_skipped(run: CompareRun, entries: list, store: str | None = None) -> list:
    """The measured entries and those of the benchmarks the change does not reach, in the spec's
    order; each of those with its step time in the newest nightly, where the store has one."""
    if not run.skipped:
        return entries
    order = {b.name: i for i, b in enumerate(run.plan.spec.benchmarks)}
    figures, commit = nightly_step_times(run.plan.spec, store, run.sides[0].commit) if run.sides[0].commit else ({}, None)
    skipped = [unmeasured_entry(b, {**run.gate.reach[b.name], **({"nightly_ms": figures[b.name],
                                                                  "nightly_commit": str(commit)[:12]}
                                                                 if b.name in figures and commit else {})})
               for b in run.skipped]
    return sorted([*entries, *skipped], key=lambda e: order.get(e["name"], len(order)))



def comparison(run: CompareRun, notes: list[Note], *, partial: bool = False, store: str | None = None) -> Comparison:
    """The comparison@1 document of what `run` has measured so far (all of it, or a `partial` one,
    which leaves the nightly runs out), built last: nothing edits it afterwards."""
    entries = entries_of(run)
    if run.second is not None:
        entries, unconfirmed = confirm.apply(entries, entries_of(run.second),
                                             {b.name: run.plan.judged(b.name) for b in run.benches}, run.second.seed)
        notes = [*notes, *unconfirmed]
    entries = _with_skipped(run, entries, store)
    if run.gate.note is not None:
        notes = [*notes, run.gate.note]
    if instruction_runs.wanted(run.benches):
        notes = [*notes, message("instr.what")]
    if run.same_commit:
        notes = [message("note.aa"), *notes]
    plan = run.plan
    base_meta, head_meta = (_side_meta(s, run.fps.get(s.name), plan, run.state) for s in run.sides)
    pairs = [(plan.bench("base", b.name), plan.bench("head", b.name)) for b in run.benches]
    threshold = plan.spec.benchmarks[0].settings.threshold
    judged = policy(entries, run.fail_on, run.accept)
    notes = [*accepted_note(judged), *notes]
    nightly, nightly_notes = ({}, []) if run.nightly is None or partial else base_nightly(
        run.nightly, plan.spec, entries, base_meta, head_meta["commit"], threshold)
    return comparison_doc.build(
        mode="paired", hardware_label=plan.hardware_label, entries=entries, verdict=verdict(entries),
        base=base_meta, head=head_meta, diffs=[*differences(pairs, base_meta, head_meta), *plan.differences],
        seed=run.seed, notes=[*plan.notes, *notes, *placement_notes(run.benches, run.state.placements), *outlier_notes(entries),
                              *fault_notes(entries), *gpu_notes(entries), *compile_notes(entries),
                              *([run.runner_note] if run.runner_note else []), *nightly_notes],
        threshold_pct=threshold, confidence=1 - ALPHA, policy=judged, **nightly,
        pairing=_overall_pairing(entries), dirty=run.dirty, new_in_pr=new_entries(run.new, run.state, run.plan.new_causes),
        runner=run.runner, reach=run.gate.summary)



def _pairing_of(entry: dict, run: CompareRun, bench: Benchmark) -> dict:
    """The entry with how its rounds were paired, and where a lockstep pair ran."""
    p = run.state.placements.get(bench.name)
    lockstep = bench.settings.pairing == "lockstep" and p is not None and p.cpus is not None
    return {**entry, "pairing": bench.settings.pairing, "cpuset": format_cpuset(p.cpus) if lockstep else None,
            **({"threads": p.record()} if lockstep else {})}



def _overall_pairing(entries: list[dict]) -> dict | None:
    kinds = sorted({e["pairing"] for e in entries if "pairing" in e})
    if not kinds:  # nothing was measured
        return None
    sets = sorted({e["cpuset"] for e in entries if e.get("cpuset")})
    return {"kind": kinds[0] if len(kinds) == 1 else "mixed", "cpuset": sets[0] if len(sets) == 1 else (sets or None)}
