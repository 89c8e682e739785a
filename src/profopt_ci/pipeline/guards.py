"""What `compare` says about the inputs it did not measure, and the hygiene around its runs.

In: the repository, the sides, the round state. Out: plain values the comparison records.

- `tree_dirty`: uncommitted changes in the working tree are never measured (compare checks out
  commits into worktrees): say so on the terminal, and record `dirty: true` in the comparison.
- `measure_new`: a benchmark the base's spec does not have (or the base has no spec at all) is new
  in the PR; running head's benchmark on base would only fail with ModuleNotFoundError. It is
  measured on head alone and listed under `new_in_pr` with its figures, not compared.
- `interrupt_safe`: while the partial comparison is written after Ctrl-C, a second SIGINT/SIGTERM
  (a double Ctrl-C, a CI cancel after it) is ignored, so the partial file is not lost half-way.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from profopt_ci.documents.statement import put
from profopt_ci.gitutil import is_dirty
from profopt_ci.measure.processes import Side, summarize
from profopt_ci.measure.rounds import RoundContext, RoundState, run_rounds
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan
from profopt_ci.words.i18n import message


def tree_dirty(repo: Path, log: Callable[[str], None]) -> bool:
    dirty = is_dirty(repo)
    if dirty:
        log("profopt: warning: the working tree has uncommitted changes — they are NOT measured "
            "(compare measures commits); commit them to include them")
    return dirty


def measure_new(plan: Plan, new: list[Benchmark], head: Side, state: RoundState, work: Path,
                rng: random.Random, log: Callable[[str], None]) -> list[dict]:
    """Rounds of the PR's new benchmarks on head only; their figures for `new_in_pr`."""
    if not new:
        return []
    log(f"profopt: new in this PR: measured on head only: {', '.join(b.name for b in new)}")
    for b in new:
        run_rounds(RoundContext(plan, [head], state, work, rng, log), [b], start=0, stop=b.settings.rounds,
                   total=b.settings.rounds)
    return new_entries(new, state)


def new_entries(new: list[Benchmark], state: RoundState, causes: dict[str, dict] | None = None) -> list[dict]:
    """Each new benchmark's head figures; `cause`: why the base did not run it, when it has one."""
    out = []
    for b in new:
        t = state.track(b.name, "head")
        status = "failed" if t.status == "ok" and not t.samples else t.status
        entry = {"name": b.name, "status": status, "error": t.error, "rounds": len(t.samples),
                 "head": summarize(t.samples)}
        if (causes or {}).get(b.name):
            put(entry, "cause", causes[b.name])
        out.append(entry)
    return out


def new_note(new: list[Benchmark], causes: dict[str, dict] | None = None) -> list[dict]:
    """What really ran for the new benchmarks: head only, and why the base did not, when known."""
    if not new:
        return []
    lines = [message("note.new_head_only", names=[b.name for b in new])]
    for b in new:
        if (causes or {}).get(b.name):
            lines.append(message("note.new_cause", name=b.name, cause=causes[b.name]))
    return lines


def mark_failures(state: RoundState, failures: dict[str, dict[str, str]]) -> None:
    """What failed before any round (a suite not collected, a benchmark that cannot run): its sides' tracks."""
    for name, sides in failures.items():
        for side, error in sides.items():
            t = state.track(name, side)
            t.status, t.error = "failed", error
