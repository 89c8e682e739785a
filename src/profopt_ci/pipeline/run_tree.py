"""`profopt run`: the spec on the current tree — setup once, rounds, results@1 written as it goes.

In: the plan (its spec for the side run, overrides applied), the tree's root, which benchmarks,
where to write. Out: `out` (profopt/results@1, rewritten after every round, so an interrupted run
keeps what it measured) and (exit code: 0, or 3 when a benchmark failed; the results document;
the plan it ran: the tree's suites collected into it by `expand_tree`).
"""
from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profopt_ci.analyze import instruction_entries
from profopt_ci.documents.read import view
from profopt_ci.documents.results import build as build_results
from profopt_ci.documents.results import new_entry, new_results, save_json
from profopt_ci.documents.types import Results
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, InfraError, cause_lines
from profopt_ci.gitutil import commit_info
from profopt_ci.measure import instruction_runs, quality, runner
from profopt_ci.measure.processes import Side, fingerprint, summarize
from profopt_ci.measure.proctree import interrupt_safe
from profopt_ci.measure.rounds import RoundContext, RoundState, run_rounds, stderr_log
from profopt_ci.measure.side_pass import SidePass, after_side
from profopt_ci.measure.suite_runner import kinds_of, set_up
from profopt_ci.pipeline.guards import mark_failures
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan
from profopt_ci.suites.expand import expand_tree


def results_of(meta: dict, benches: list[Benchmark], state: RoundState, side: str,
               counted: dict[str, dict[str, dict]] | None = None, **more: Any) -> Results:
    """The results@1 of what the run has measured so far, made afresh from its tracks (and, once
    counted, the instruction runs): `meta` is `new_results`, `more` what became known since (seed,
    runner). Nothing edits a results document: each checkpoint builds a new one."""
    entries = {}
    for bench in benches:
        track = state.track(bench.name, side)
        entry = {**new_entry(bench), "status": track.status, "error": track.error, "samples": track.samples,
                 "summary": summarize(track.samples)}
        if track.quality is not None:
            entry["quality"] = track.quality
        if bench.settings.timed and track.status == "ok" and not track.samples:
            # 0 samples is never ok (interrupted before round 1); instructions-only has none by design
            entry.update(status="failed", error=track.error or "no samples were measured")
        count = (counted or {}).get(bench.name, {}).get(side)
        entries[bench.name] = entry if count is None else instruction_entries.results_entry(entry, count)
    return build_results({**meta, **more, "benchmarks": entries})


def _setup_or_record(spec, benches: list[Benchmark], side: Side, state: RoundState, meta: dict, out: Path,
                     log: Callable[[str], None]) -> None:
    """Run the setup; when it fails, every benchmark is written as failed before the error goes up."""
    try:
        set_up(spec, side, log, kinds_of([spec]))
    except InfraError as exc:
        for bench in benches:
            state.track(bench.name, side.name).status = "failed"
            state.track(bench.name, side.name).error = str(exc)
        save_json(results_of(meta, benches, state, side.name), out)
        raise


@dataclass(frozen=True)
class TreeSide:
    """The side a tree runs as, where not this interpreter on the tree itself: a worktree's own venv
    (`side`), and its fingerprint when the caller already took it (`fp`: it costs a process)."""

    side: Side
    fp: dict | None = None


@dataclass(frozen=True)
class TreeRun:
    """One `profopt run` as its rounds see it: the benchmarks, the side, the state they fill, the
    seed, and the results file rewritten after every round (`meta`: its new_results)."""

    benches: list[Benchmark]
    side: Side
    state: RoundState
    seed: int
    meta: dict
    out: Path

    def checkpoint(self, _: int = -1) -> None:
        save_json(results_of(self.meta, self.benches, self.state, self.side.name, seed=self.seed), self.out)


def _measure(plan: Plan, run: TreeRun, rounds: int, log: Callable[[str], None]) -> dict[str, dict[str, dict]]:
    """The walltime rounds (results written after each) and the counted instructions."""
    spec, benches, side, state = plan.side_spec(run.side.name), run.benches, run.side, run.state
    with tempfile.TemporaryDirectory(prefix="profopt-run-") as work:
        try:
            timed = [b for b in benches if b.settings.timed]
            try:
                run_rounds(RoundContext(plan, [side], state, Path(work), random.Random(run.seed), log), timed,
                           start=0, stop=rounds, total=rounds, after_round=run.checkpoint)
            finally:
                state.close()  # the zygotes the rounds forked from: nothing after the rounds forks
            quality_pass(spec, benches, side, state, Path(work), log)
            return instruction_runs.measure_instructions(spec, benches, [side], lambda b, s: state.track(b, s).status == "ok",
                                                     Path(work), log)
        finally:
            with interrupt_safe():  # a second Ctrl-C must not cut the results file short
                run.checkpoint()


def quality_pass(spec, benches: list[Benchmark], side: Side, state: RoundState, work: Path,
                 log: Callable[[str], None]) -> None:
    """Each benchmark with constraints: its quality trace (steps from fresh seeds), for `diff`."""
    for bench in benches:
        track = state.track(bench.name, side.name)
        steps = quality.wanted(bench)
        if not steps or track.status != "ok" or (bench.settings.timed and not track.samples):
            continue
        log(f"profopt: {bench.name}: quality pass ({steps} steps)")
        _, track.quality = after_side(SidePass(spec, bench, side, work), profile=False)


def _failures(benches: list[Benchmark], side: Side, state: RoundState, counted: dict, out: Path,
              log: Callable[[str], None]) -> list[str]:
    """The benchmarks that failed (rounds or instructions), each said with the end of its error."""
    failed = [b.name for b in benches if state.track(b.name, side.name).status != "ok"]
    for name, sides in counted.items():
        if sides[side.name]["status"] != "ok":
            failed.append(name)
            log(f"profopt: {name}: instructions {sides[side.name]['status']}: see `instruction_runs.error` in {out}")
    for name in failed:
        track = state.track(name, side.name)
        # The cause is at the end of the stderr tail (the exception); the whole tail is in `out`.
        cause = cause_lines(track.error, 6)
        log("\n".join([f"profopt: {name} {track.status} (the whole error is in {out}):",
                        *(f"profopt:   {ln}" for ln in cause)]))
    return failed


def run_tree(
    plan: Plan,
    root: Path,
    *,
    only: list[str] | None = None,
    out: Path,
    log: Callable[[str], None] = stderr_log,
    reach: bool = False,
    as_side: TreeSide | None = None,
) -> tuple[int, dict, Plan]:
    """Measure the selected benchmarks; write `out` after every round. Returns (exit code, results
    as a reader of `out` gets them, plan).

    `as_side` runs the tree as another side (a worktree's own venv; default this interpreter), with
    its fingerprint when the caller already took it. The plan gives the spec that side runs
    (`--rounds` and the hardware label already in it). `reach` (the nightly): its suites' collectors
    record their reach (the plan's `collected`).
    """
    side = as_side.side if as_side is not None else Side(name="tree", root=root)
    fp = as_side.fp if as_side is not None else None
    plan = expand_tree(plan, side, log, reach=reach)
    spec = plan.side_spec(side.name)
    benches = spec.select(only)
    instruction_runs.preflight(spec, benches)
    n = max(b.settings.rounds for b in benches)
    commit, dirty = commit_info(root)
    meta = new_results(spec, commit=commit, dirty=dirty, fingerprint=fp or fingerprint(side, spec), rounds=n)
    state = RoundState()
    mark_failures(state, {n: f for n, f in plan.failures.items() if n in {b.name for b in benches}})
    _setup_or_record(spec, benches, side, state, meta, out, log)
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**32)
    probed = runner.probe()
    counted = _measure(plan, TreeRun(benches, side, state, seed, meta, out), n, log)
    doc = results_of(meta, benches, state, side.name, counted, seed=seed,
                     runner=runner.combine(probed, runner.probe()))  # the runner: stored with the nightly baselines
    save_json(doc, out)
    failed = _failures(benches, side, state, counted, out, log)
    return (EXIT_INFRA if failed else EXIT_OK), view(doc), plan
