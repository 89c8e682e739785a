"""`profopt run`: the spec on the current tree — setup once, rounds, results@1 written as it goes."""
from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from profopt_ci.errors import EXIT_INFRA, EXIT_OK, InfraError
from profopt_ci.gitutil import commit_info
from profopt_ci.plan import Plan
from profopt_ci.results import new_entry, new_results, save_json
from profopt_ci.rounds import RoundState, run_rounds, stderr_log
from profopt_ci.runner import Side, fingerprint, run_setup, summarize
from profopt_ci.spec import Benchmark


def fill_results(results: dict, benches: list[Benchmark], state: RoundState, side: str) -> None:
    for bench in benches:
        track = state.track(bench.name, side)
        entry = results["benchmarks"].setdefault(bench.name, new_entry(bench))
        entry.update(status=track.status, error=track.error, samples=track.samples, summary=summarize(track.samples))


def run_tree(
    plan: Plan,
    root: Path,
    *,
    only: list[str] | None = None,
    out: Path,
    log: Callable[[str], None] = stderr_log,
    side: Side | None = None,
    fp: dict | None = None,
) -> tuple[int, dict]:
    """Measure the selected benchmarks; write `out` after every round. Returns (exit code, results).

    `side` runs the tree with another interpreter (a worktree's own venv); default this one. The
    plan gives the spec that side runs (`--rounds` and the hardware label already in it).
    `fp` is the side's fingerprint when the caller already took it (it costs a process).
    """
    side = side or Side(name="tree", root=root)
    spec = plan.side_spec(side.name)
    benches = spec.select(only)
    n = max(b.settings.rounds for b in benches)
    commit, dirty = commit_info(root)
    results = new_results(spec, commit=commit, dirty=dirty, fingerprint=fp or fingerprint(side, spec), rounds=n)
    state = RoundState()
    try:
        run_setup(spec, side, log)
    except InfraError as exc:
        for bench in benches:
            state.track(bench.name, side.name).status = "failed"
            state.track(bench.name, side.name).error = str(exc)
        fill_results(results, benches, state, side.name)
        save_json(results, out)
        raise
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**32)
    results["seed"] = seed

    def checkpoint(_: int) -> None:
        fill_results(results, benches, state, side.name)
        save_json(results, out)

    with tempfile.TemporaryDirectory(prefix="profopt-run-") as work:
        try:
            run_rounds(plan, benches, [side], state, Path(work), start=0, stop=n, total=n,
                       rng=random.Random(seed), log=log, after_round=checkpoint)
        finally:
            checkpoint(-1)
    failed = [b.name for b in benches if state.track(b.name, side.name).status != "ok"]
    for name in failed:
        log(f"profopt: {name} {state.track(name, side.name).status}: see `error` in {out}")
    return (EXIT_INFRA if failed else EXIT_OK), results
