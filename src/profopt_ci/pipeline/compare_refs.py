"""`profopt compare`: a plan and two refs in, a `profopt/comparison@1` out (docs/data-model.md).

In: the `Plan` (spec + overrides; each side's own spec is attached to it here), the base and head
refs (or a workspace prepared by `--phase setup`), and callbacks for the log and for a partial
comparison after Ctrl-C. Out: the comparison document (None after `--phase setup`).

Both checkouts are prepared and set up before any measurement; then paired rounds — lockstep (both
workers live, pinned to one CPU set, value by value) or RMIT (base and head once each per round,
fresh processes, seeded random order), per the plan — look by look (`sequential`); then profiles
and counted instructions. The state of one run is a `CompareRun`; `comparison(run, notes)` turns
what it has measured so far into the document. `profopt diff` is `pipeline/diff_results.py`.
"""
from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from profopt_ci.analyze.judge import ALPHA, look, worth_profiling
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.gitutil import toplevel
from profopt_ci.measure import instruction_runs, runner
from profopt_ci.measure.checkouts import (
    load_state,
    open_workspace,
    prepare_sides,
    resolve_refs,
)
from profopt_ci.measure.cpus import parent_home
from profopt_ci.measure.processes import Side, fingerprint
from profopt_ci.measure.proctree import interrupt_safe
from profopt_ci.measure.rounds import RoundContext, RoundState, stderr_log
from profopt_ci.measure.side_pass import NO_TIME, SKIPPED, profile_all
from profopt_ci.measure.suite_runner import kinds_of, set_up
from profopt_ci.pipeline import confirm
from profopt_ci.pipeline.budget import Budget
from profopt_ci.pipeline.compare_notes import other_load_notes, pairing_notes
from profopt_ci.pipeline.compare_run import CompareRun, comparison, entries_of
from profopt_ci.pipeline.entries import compile_notes, gpu_notes, track_dict
from profopt_ci.pipeline.guards import mark_failures, measure_new, new_note, tree_dirty
from profopt_ci.pipeline.reach_gate import everything, gate
from profopt_ci.pipeline.reach_kept import kept_decision
from profopt_ci.pipeline.reuse import Labels
from profopt_ci.pipeline.sequential import sequential_rounds
from profopt_ci.pipeline.stored import Nightly
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan
from profopt_ci.store.stored_baselines import runner_history
from profopt_ci.suites.callables import expand_callables
from profopt_ci.suites.expand import expand_compare
from profopt_ci.words.i18n import message, say


def _setup_sides(sides: list[Side], plan: Plan, log) -> dict[str, str]:
    """Run each side's setup and add its suites' runners, the sides at once (each in its own
    worktree and venv; nothing is timed yet, and a suite's project installed twice one after the other
    doubles the wait); returns {side: error} for the sides whose setup failed."""
    kinds = kinds_of([plan.spec, plan.side_spec("base"), plan.side_spec("head")])  # the head's suites run on the base too

    def one(side: Side) -> str | None:
        try:
            set_up(plan.side_spec(side.name), side, log, kinds)
        except InfraError as exc:
            log(f"profopt: {exc}")
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=max(1, len(sides))) as pool:
        errors = dict(zip([s.name for s in sides], pool.map(one, sides), strict=True))
    return {name: why for name, why in errors.items() if why is not None}


def _mark_failed(state: RoundState, benches: list[Benchmark], failures: dict[str, str]) -> None:
    for side, error in failures.items():
        for b in benches:
            t = state.track(b.name, side)
            t.status, t.error = "failed", error


def _before_rounds(run: CompareRun, work: Path, log) -> RoundContext:
    """Each side's fingerprint, and the rounds' context (the plan, both sides, the state, the seed)."""
    for side in run.sides:
        run.fps[side.name] = fingerprint(side, run.plan.side_spec(side.name))
    return RoundContext(run.plan, run.sides, run.state, work, random.Random(run.seed), log)


def _after_rounds(run: CompareRun, ctx: RoundContext, trace_dir: Path | None) -> None:
    """What the rounds' values say (other load, GPU clocks, graph breaks), the PR's new benchmarks on
    head, then the passes: a profile of each side where it is worth one, the quality pass."""
    plan, sides, state, log = run.plan, run.sides, run.state, ctx.log
    timed = [b for b in run.benches if b.settings.timed]
    for line in other_load_notes(run.benches, state.placements):
        log(f"profopt: warning: {say('en', line)}")
    measured = [{"name": b.name, "samples": {s.name: state.track(b.name, s.name).samples for s in sides}}
                for b in timed]
    for line in [*gpu_notes(measured), *compile_notes(measured)]:  # said now, and in the report
        log(f"profopt: warning: {say('en', line)}")
    measure_new(plan, [b for b in run.new if b.settings.timed], sides[1], state, ctx.workdir,
                random.Random(run.seed), log)
    state.drop_ahead()  # the rounds are over: no worker started ahead waits beside the passes
    state.zygotes.drop_next()  # and nothing imports there
    finished = {b.name: b for b in run.benches}

    def ok(bench: str, side: str) -> bool:  # rounds done (instructions-only: nothing failed so far)
        return state.measured(bench, side) if finished[bench].settings.timed else state.track(bench, side).status == "ok"

    run.profiles, traces = profile_all(ctx, run.benches, ok, trace_dir, skip=_skip_profile(run))
    for name, per_side in traces.items():
        for side_name, trace in per_side.items():
            state.track(name, side_name).quality = trace


def _skip_profile(run: CompareRun) -> Callable[[str], dict | None]:
    """Whose profile is worth its pass (`entries.worth_profiling`), while the time budget leaves room
    for it."""
    def skip(name: str) -> dict | None:
        bench = run.plan.judged(name)
        sides = [track_dict(run.state, bench, s) for s in ("base", "head")]
        entry = run.state.looked.get(name)  # its last look's, where nothing was measured since
        if entry is None or entry["status"] != {"base": sides[0]["status"], "head": sides[1]["status"]} \
                or entry["rounds"] != min(len(d["samples"]) for d in sides):
            entry = look(bench, *sides, alpha=run.alphas.get(name, ALPHA))
        if not worth_profiling(entry):
            return SKIPPED
        return None if run.budget.pass_fits(name) else NO_TIME
    return skip


def _confirm(run: CompareRun, work: Path, log) -> None:
    """`confirm`: the flagged benchmarks measured again — new processes, the reverse order, a new seed."""
    names = confirm.flagged(entries_of(run), {b.name: run.plan.judged(b.name) for b in run.benches})
    if not names:
        return
    if run.budget.rounds_left([]) < sum(run.budget.first_round_s.get(n, 0.0) for n in names) * 4:
        log(f"profopt: confirm: not run — the time budget leaves {max(0.0, run.budget.left()):.0f} s")
        return
    benches = [b for b in reversed(run.benches) if b.name in names]
    second = CompareRun(plan=run.plan, sides=run.sides, benches=benches, new=[], seed=confirm.second_seed(run.seed),
                        dirty=run.dirty, notes=[])
    log(f"profopt: confirm: measuring {', '.join(names)} again in an independent run (seed {second.seed})")
    try:
        ctx = RoundContext(run.plan, run.sides, second.state, work, random.Random(second.seed), log)
        second.alphas = sequential_rounds(ctx, [b for b in benches if b.settings.timed])
    finally:
        second.state.close()
    run.second = second


def _sides(ws, plan: Plan, repo: Path, rel_spec: Path, phase: str, refs: tuple[str | None, str | None], log) -> list[Side]:
    """Both checkouts: prepared now, or loaded from an earlier `--phase setup`."""
    if phase == "measure":
        sides = load_state(ws, plan.spec, rel_spec)
    else:
        resolved = resolve_refs(repo, *refs)
        log(f"profopt: base {resolved['base'][0]} = {resolved['base'][1][:12]}, "
            f"head {resolved['head'][0]} = {resolved['head'][1][:12]}")
        sides = prepare_sides(ws, plan.spec, rel_spec, resolved)
    if sides[0].commit == sides[1].commit:
        log(f"profopt: {AA_LOG} — base and head are the same commit {sides[1].commit[:12]}")
    return sides


def _setup(ws, sides: list[Side], plan: Plan, phase: str, log) -> bool:
    """Run the setups unless this is `--phase measure`; True when this was `--phase setup` (stop here)."""
    if phase == "measure":
        return False
    ws.setup_failures = _setup_sides(sides, plan, log)
    if phase != "setup":
        return False
    ws.save_state()  # failures included: the measure phase reports them as failed sides
    if ws.setup_failures:
        raise InfraError(f"setup failed on {', '.join(ws.setup_failures)}; prepared state saved in "
                         f"{ws.root} — `--phase measure` reports it and measures the other side")
    return True


def _repo_of(plan: Plan) -> tuple[Path, Path]:
    """The repository holding the spec, and the spec's path inside it."""
    spec_path = plan.spec.path.resolve()
    repo = toplevel(spec_path.parent)
    if repo is None:
        raise UsageError(f"{plan.spec.path} is not inside a git repository — compare needs git history (use `profopt run`)")
    return repo, spec_path.relative_to(repo.resolve())


@dataclass(frozen=True)
class CompareOptions:
    """What a compare is asked for beyond its plan, as the verb (or a bisection's probe, or the demo)
    gives it once. `store`: where the label's nightly runs are, for the runner probe's history
    (default git:profopt-data); `fail_on`: the policy; `nightly` (--baseline both): the base's drift
    and history; `alone` False: a benchmark one side cannot run is not measured on the other alone
    (a bisection's probe, which only reads that it failed); `measure`: changed (only what the change
    reaches) or all, None: the spec's `measure`; `time_budget`: the seconds it may take (None: the spec's);
    `labels`: the accept label as the event has it (a failing policy passes where the pull request
    carries it)."""

    base_ref: str | None
    head_ref: str | None
    workdir: Path | None = None
    phase: str = "all"
    trace_dir: Path | None = None
    store: str | None = None
    fail_on: str | None = None
    nightly: Nightly | None = None
    alone: bool = True
    measure: str | None = None
    time_budget: float | None = None
    labels: Labels | None = None


def run_compare(plan: Plan, options: CompareOptions, *, log: Callable[[str], None] = stderr_log,
                on_partial: Callable[[Comparison], None] | None = None) -> Comparison | None:
    """Measure base and head as `options` asks; returns the comparison (None after `--phase setup`).
    `on_partial`: where the comparison so far goes when the compare is interrupted."""
    base_ref, head_ref, workdir, phase, trace_dir = (options.base_ref, options.head_ref, options.workdir,
                                                     options.phase, options.trace_dir)
    store, fail_on, nightly, alone, measure, time_budget = (options.store, options.fail_on, options.nightly,
                                                            options.alone, options.measure, options.time_budget)
    labels = options.labels or Labels()
    budget = Budget(seconds=time_budget or plan.spec.time_budget_s)
    repo, rel_spec = _repo_of(plan)
    dirty = tree_dirty(repo, log)
    instruction_runs.preflight(plan.spec, plan.spec.benchmarks)  # no valgrind: exit 2 before anything is set up
    mode = measure or plan.spec.measure
    if phase == "all" and mode == "changed":
        kept = _kept(plan, options, repo, rel_spec, dirty, log)
        if kept is not None:
            return kept
    with open_workspace(repo, workdir) as ws:
        sides = _sides(ws, plan, repo, rel_spec, phase, (base_ref, head_ref), log)
        for side in sides:
            plan = plan.attach(side.name, side.spec, side.spec_note)
        if _setup(ws, sides, plan, phase, log):
            return None
        # suites: collected in each side's environment, after its setup (with measure: changed, what the
        # base's collectors run and read is recorded, so a later compare may take their answers)
        plan = expand_compare(plan, sides, log, reach=mode == "changed" and sides[0].commit != sides[1].commit)
        if "base" not in ws.setup_failures:  # a base whose setup failed is a failed side, not "new in this PR"
            plan = expand_callables(plan, sides, log)  # benchmarks_from: head — the head's callables on the base
        seed = plan.spec.seed if plan.spec.seed is not None else random.SystemRandom().randrange(2**32)
        benches, new = _split_new(plan.spec.benchmarks, plan, sides[0])
        plan = _base_without_spec(plan, sides[0])
        run = CompareRun(plan=plan, sides=sides, benches=benches, new=new, seed=seed, dirty=dirty,
                         notes=new_note(new, plan.new_causes) + pairing_notes(plan, benches, log),
                         fail_on=fail_on, nightly=nightly, alone=alone, budget=budget, accept=labels.accept)
        _mark_failed(run.state, plan.spec.benchmarks, ws.setup_failures)
        mark_failures(run.state, plan.failures)
        with parent_home(), tempfile.TemporaryDirectory(prefix="profopt-work-") as work:
            run = _gated(run, repo, rel_spec, Path(work), measure, log)
            probed = runner.probe()
            try:
                ctx = _before_rounds(run, Path(work), log)
                try:  # the walltime rounds, look by look (sequential.py), and the passes after them
                    run.alphas = sequential_rounds(ctx, [b for b in run.benches if b.settings.timed], alone=run.alone,
                                                   budget=run.budget, first=run.gate.reached)
                    _after_rounds(run, ctx, trace_dir)
                finally:
                    run.state.close()
                # instrument: instructions, after the walltime rounds (instruction_runs.py)
                run.instr = instruction_runs.measure_instructions(
                    plan.spec, run.benches, sides, lambda b, s: run.state.track(b, s).status == "ok", Path(work), log)
                _confirm(run, Path(work), log)
                _check_runner(run, runner.combine(probed, runner.probe()), store, log)
            except KeyboardInterrupt:
                if on_partial is not None:
                    with interrupt_safe():  # a second Ctrl-C must not cut the partial file short
                        on_partial(comparison(run, [message("note.partial"), *run.notes], partial=True))  # says so first
                raise
        return comparison(run, run.notes, store=store)


def _kept(plan: Plan, options: CompareOptions, repo: Path, rel_spec: Path, dirty: bool, log) -> Comparison | None:
    """The comparison of a PR that reaches no benchmark, decided from kept reach records before
    anything is checked out (pipeline/reach_kept.py); None: the whole compare decides."""
    resolved = resolve_refs(repo, options.base_ref, options.head_ref)
    (base_label, base), (head_label, head) = resolved["base"], resolved["head"]
    if base == head:
        return None
    found = kept_decision(plan, repo=repo, rel_spec=rel_spec, base=base, head=head, log=log)
    if found is None:
        return None
    log(f"profopt: base {base_label} = {base[:12]}, head {head_label} = {head[:12]}")
    kept_plan, found_gate = found
    sides = [Side(name=name, root=kept_plan.spec.path.parent, ref=ref, commit=commit)
             for name, ref, commit in (("base", base_label, base), ("head", head_label, head))]
    seed = kept_plan.spec.seed if kept_plan.spec.seed is not None else random.SystemRandom().randrange(2**32)
    run = CompareRun(plan=kept_plan, sides=sides, benches=[], new=[], seed=seed, dirty=dirty, notes=[],
                     gate=found_gate, skipped=list(kept_plan.spec.benchmarks), fail_on=options.fail_on,
                     accept=(options.labels or Labels()).accept)
    return comparison(run, [], store=options.store)


def _gated(run: CompareRun, repo: Path, rel_spec: Path, work: Path, measure: str | None, log) -> CompareRun:
    """The run with only the benchmarks the change reaches left to measure (measure: changed; an
    A/A and `measure: all` measure everything)."""
    if (measure or run.plan.spec.measure) == "all":
        return replace(run, gate=everything(run.benches, "reach.all"))
    if run.same_commit:
        return replace(run, gate=everything(run.benches, "reach.aa"))
    # what failed before any round (a suite not collected, a side whose setup failed) is reported as
    # it failed, not recorded
    ready = [b for b in run.benches if b.name not in run.plan.failures and run.state.ok(b.name, run.sides)]
    if not ready:
        return run
    found = gate(run.plan, run.sides, ready, repo=repo, rel_spec=rel_spec, workdir=work, log=log)
    return replace(run, gate=found, benches=[b for b in run.benches if found.measured(b.name)],
                   skipped=[b for b in run.benches if not found.measured(b.name)])


def _check_runner(run: CompareRun, record: dict | None, store: str | None, log) -> None:
    """This run's probe against the label's stored nightly runs; said at once when it is off."""
    if record is None:
        return
    history = runner_history(run.plan.spec, store, record)
    run.runner, run.runner_note = runner.check(record, history, run.plan.hardware_label)
    if run.runner_note:
        log(f"profopt: warning: {say('en', run.runner_note)}")


AA_LOG = "A/A: this measures noise only"  # the terminal line; the note is note.aa


def _base_without_spec(plan: Plan, base: Side) -> Plan:
    """A base with no spec (the PR adds it) ran only the head's suites, not the passed spec's
    callables: a new plan whose notes say so first, instead of plan.attach's fallback wording."""
    if not (base.spec is None and base.spec_missing):
        return plan
    fallback = ("note.own_spec_unused", "note.own_spec_missing")
    if plan.spec.benchmarks_from == "head" and plan.base_suite:  # callables too (suites/callables.py)
        said = "note.base_no_spec_head"
    else:
        said = "note.base_no_spec_suites" if plan.base_suite else "note.base_no_spec"
    kept = [n for n in plan.notes if not (isinstance(n, dict) and n["id"] in fallback and n["args"]["side"] == "base")]
    return replace(plan, notes=(message(said, spec=plan.spec.path.name), *kept))


def _split_new(benches: list[Benchmark], plan: Plan, base: Side) -> tuple[list[Benchmark], list[Benchmark]]:
    """A pull request that adds a benchmark (or the spec itself) has nothing to compare it with: those
    are measured on head only (`new_in_pr`)."""
    known = {b.name for b in plan.side_spec("base").benchmarks}
    if base.spec is None and base.spec_missing:  # suites from head still run on the base's code
        known = set(plan.base_suite)
    return [b for b in benches if b.name in known], [b for b in benches if b.name not in known]
