"""`profopt baseline refresh` and `profopt compare --baseline stored`: runs against the store.

refresh — in: the plan, a store location; out: the current tree measured by `pipeline.run_tree` and its
`profopt/baseline@1` summary saved in the store (under the plan's hardware label), with the exit
code and the stored path.

compare --baseline stored — in: the plan, a store location, base/head refs; out: a
`profopt/comparison@1` (mode `unpaired`): head measured now against the newest stored baseline of
the label at or before the base commit (the merge-base), with its `baseline`, `history` and
`policy`. It refuses a baseline measured in a materially different environment
(fingerprint.MATERIAL) unless allowed, and says the figures are weaker than a paired compare's.

compare --baseline both — `base_nightly`: for a paired compare, the nightly runs of its base in the
store, their `baseline`, the fresh base's `drift` from them, and the `history`, with their notes.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profopt_ci.analyze import changepoints as history
from profopt_ci.analyze import instruction_entries
from profopt_ci.analyze.judge import ALPHA, build_entry, finish
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.figures import is_measurement
from profopt_ci.gitutil import commit_info, toplevel
from profopt_ci.measure.checkouts import (
    _shallow_hint,
    add_worktree,
    make_venv,
    open_workspace,
    resolve_refs,
    side_spec,
)
from profopt_ci.measure.processes import Side, fingerprint
from profopt_ci.measure.rounds import stderr_log
from profopt_ci.pipeline.diff_results import _bench_from_results
from profopt_ci.pipeline.entries import accepted_note, differences, policy, verdict
from profopt_ci.pipeline.reach_gate import keep_tree_records
from profopt_ci.pipeline.run_tree import TreeSide, run_tree
from profopt_ci.specfile.load import Spec
from profopt_ci.specfile.plan import Plan
from profopt_ci.store.gitstore import GitStore
from profopt_ci.store.layout import SHORT, Store, stderr_warn
from profopt_ci.store.stored_baselines import (
    _age_text,
    _baseline_meta,
    _branch,
    _mismatch_text,
    from_results,
    material_differences,
    samples_from_summary,
)
from profopt_ci.store.stores import age_days, at_or_before, open_store, save
from profopt_ci.words.i18n import Note, message


def refresh(plan: Plan, *, store: str | None, only: list[str] | None = None,
            out: Path | None = None, allow_dirty: bool = False, push: bool = True,
            log: Callable[[str], None] = stderr_log) -> tuple[int, str]:
    """Run the plan on the current tree and store its summary (under the plan's hardware label).
    Returns (exit code, stored path)."""
    spec = plan.spec
    root = spec.path.resolve().parent
    commit, dirty = commit_info(root)
    if commit is None:
        raise UsageError(f"{spec.path}: baseline refresh needs a git commit to file the baseline under — "
                         "run it in a clone of the repository")
    if dirty and not allow_dirty:
        raise UsageError("the working tree has uncommitted changes: a baseline must describe a commit "
                         "(commit or stash them, or pass --allow-dirty)")
    target = open_store(store, toplevel(root), log=stderr_warn, push=push)
    if isinstance(target, GitStore):
        target.fetch(required=push)  # an unreachable store fails before an hour of measuring, not after
    with tempfile.TemporaryDirectory(prefix="profopt-refresh-") as tmp:
        code, results, ran = run_tree(plan, root, only=only, out=out or Path(tmp) / "results.json", log=log,
                                      reach=not dirty)
        if not dirty:  # what each benchmark runs and reads, kept for the PRs based on this commit
            _keep_records(ran, root, commit, Path(tmp), log)
    doc = from_results(results, ref=_branch(root))
    if not doc.benchmarks:
        raise InfraError("every benchmark failed: nothing was stored")
    path = save(target, doc)
    where = target.describe() + ("" if push or not isinstance(target, GitStore) else " (local branch, not pushed)")
    log(f"profopt: baseline stored in {where}: {path}")
    return code, path


def _keep_records(plan: Plan, root: Path, commit: str, work: Path, log: Callable[[str], None]) -> None:
    """The nightly's reach records (pipeline/reach_gate.keep_tree_records); never the nightly's failure."""
    top = toplevel(root)
    try:
        keep_tree_records(plan, Side(name="tree", root=root), repo=top, commit=commit, workdir=work, log=log,
                          rel_spec=plan.spec.path.resolve().relative_to(top.resolve()))
    except (InfraError, OSError, ValueError) as exc:
        log(f"profopt: warning: no reach records kept: {exc}")


def _measure_head(plan: Plan, repo: Path, head: tuple[str, str] | None, workdir: Path | None,
                  allow_env_mismatch: bool, stored_fp: dict, log: Callable[[str], None]) -> tuple[Plan, dict, list[Note]]:
    """Head measured alone (its fingerprint checked first): the current tree, or a worktree of --head
    (`head`: its label and commit; None: no --head given). Returns the plan it ran (head attached, its
    suites collected), head's results and notes."""
    spec = plan.spec
    root = spec.path.resolve().parent
    current, dirty = commit_info(root)
    notes: list[Note] = []

    def check(fp: dict) -> dict:
        diffs = material_differences(stored_fp, fp)
        if not diffs:
            return fp
        if not allow_env_mismatch:
            raise UsageError("the stored baseline was measured in a different environment — "
                             f"{_mismatch_text(diffs)}. Refresh the baseline on this runner, use "
                             "--baseline rerun, or pass --allow-env-mismatch to compare anyway")
        notes.append(message("note.env_mismatch", diffs=[[k, repr(a), repr(b)] for k, a, b in diffs]))
        return fp

    with tempfile.TemporaryDirectory(prefix="profopt-stored-") as tmp:
        if head is None or (current == head[1] and not dirty):
            fp = check(fingerprint(Side(name="tree", root=root), spec))
            if dirty:
                notes.append(message("note.dirty_head"))
            _, results, plan = run_tree(plan, root, out=Path(tmp) / "head.json", log=log,
                                        as_side=TreeSide(Side(name="tree", root=root), fp))
            return plan, results, notes
        head_label, head_commit = head
        rel_spec = spec.path.resolve().relative_to(repo.resolve())
        with open_workspace(repo, workdir) as ws:
            tree = add_worktree(ws, "head", head_commit)
            side_root = tree / rel_spec.parent
            own, problem = side_spec(side_root, Path(rel_spec.name))
            plan = plan.attach("head", own, problem)
            own = plan.side_spec("head")
            python, env = make_venv(ws.root / "venv-head") if own.setup else (sys.executable, {})
            side = Side(name="head", root=side_root, python=python, env=env, ref=head_label, commit=head_commit, spec=own)
            fp = check(fingerprint(side, own))
            _, results, plan = run_tree(plan, side_root, out=Path(tmp) / "head.json", log=log, as_side=TreeSide(side, fp))
            return plan, results, notes


def _newest_stored(plan: Plan, repo: Path, target: Store, base: tuple[str | None, str], history_n: int,
                   log: Callable[[str], None]) -> list[tuple]:
    """The label's stored runs at or before the base commit, newest first (a usage error when none)."""
    spec, (base_label, base_commit) = plan.spec, base
    runs = at_or_before(target, repo, spec.hardware_label, base_commit, limit=max(history_n, 1))
    if not runs:
        raise UsageError(f"{target.describe()}: no stored baseline for label {spec.hardware_label} at or before "
                         f"{base_commit[:SHORT]} ({base_label}) — run `profopt baseline refresh` on the default "
                         "branch first, or use --baseline rerun" + _shallow_hint(repo))
    entry, doc, dist = runs[0]
    log(f"profopt: stored baseline {entry.id} — commit {doc['commit'][:SHORT]}, {_age_text(doc)}, "
        f"{dist} commit(s) before {base_commit[:SHORT]}")
    return runs


def _stored_entries(spec: Spec, doc: dict, results: dict) -> tuple[list[dict], list[tuple], list[str]]:
    """Each benchmark of head's results against its stored summary: (entries, spec pairs, missing)."""
    entries, pairs, missing = [], [], []
    for name, head_entry in results["benchmarks"].items():
        stored = doc["benchmarks"].get(name)
        if stored is None:
            missing.append(name)
            continue
        head_bench = _bench_from_results(name, head_entry, spec)
        pairs.append((_bench_from_results(name, stored, spec), head_bench))
        base_side = {"status": "ok", "error": None, "samples": samples_from_summary(stored),
                     "quality": stored.get("quality_trace")}
        counted = {"base": stored.get("instructions"), "head": head_entry.get("instructions")}
        entries.append(instruction_entries.merge(build_entry(head_bench, base_side, head_entry, paired=False),
                                                 head_bench, counted if all(counted.values()) else None))
    return instruction_entries.mark_failures(finish(entries, {h.name: h for _, h in pairs})), pairs, missing


def _stored_notes(plan: Plan, doc: dict, dist: int, base_commit: str, entries: list[dict], missing: list[str],
                  head_notes: list[Note]) -> list[Note]:
    notes = [
        message("note.stored_baseline", commit=doc["commit"][:SHORT], created=str(doc.get("created"))[:16].replace("T", " "),
                age_days=age_days(doc), distance=dist, base=base_commit[:SHORT]),
        *head_notes,
    ]
    if any(e.get("instructions") for e in entries):
        notes.append(message("instr.what"))
    if doc.get("spec_hash") != plan.spec.hash:
        notes.append(message("note.spec_changed"))
    notes = [*plan.notes, *notes]
    if missing:
        notes.append(message("note.not_in_stored", names=missing))
    return notes


def compare_stored(plan: Plan, *, baseline: Nightly, refs: tuple[str | None, str | None],
                   workdir: Path | None = None, log: Callable[[str], None] = stderr_log,
                   fail_on: str | None = None, accept: str | None = None) -> Comparison:
    """Head measured now vs the newest stored baseline at or before the base commit (unpaired), the
    `baseline` being where the label's nightly runs are, `refs` the base and head as given;
    `fail_on`: the policy (None: no policy section); `accept`: the accept label the pull request
    carries (a failing policy passes)."""
    base_ref, head_ref = refs
    spec = plan.spec
    repo = toplevel(spec.path.resolve().parent)
    if repo is None:
        raise UsageError(f"{spec.path} is not inside a git repository — a stored baseline is found by commit")
    refs = resolve_refs(repo, base_ref, head_ref)
    base_commit = refs["base"][1]
    target = open_store(baseline.store, repo)
    history_n = baseline.history_n
    runs = _newest_stored(plan, repo, target, refs["base"], history_n, log)
    entry, doc, dist = runs[0]
    plan, results, head_notes = _measure_head(plan, repo, refs["head"] if head_ref is not None else None, workdir,
                                              baseline.allow_env_mismatch, doc.get("fingerprint") or {}, log)
    entries, pairs, missing = _stored_entries(spec, doc, results)
    base_meta = {"ref": f"stored baseline ({target.describe()})", "commit": doc["commit"],
                 "fingerprint": doc.get("fingerprint") or {}, "env": doc.get("env") or {}}
    head_meta = {"ref": refs["head"][0] if head_ref else ("working tree" if results.get("dirty") else "HEAD"),
                 "commit": results.get("commit"), "fingerprint": results.get("fingerprint") or {},
                 "env": results.get("env") or {}}
    threshold = pairs[0][1].settings.threshold if pairs else None
    judged = policy(entries, fail_on, accept)
    return comparison_doc.build(
        mode="unpaired", hardware_label=spec.hardware_label, entries=entries, verdict=verdict(entries),
        base=base_meta, head=head_meta, diffs=differences(pairs, base_meta, head_meta), seed=results.get("seed"),
        notes=[*accepted_note(judged), *_stored_notes(plan, doc, dist, base_commit, entries, missing, head_notes)],
        threshold_pct=threshold, confidence=1 - ALPHA, policy=judged,
        baseline=_baseline_meta("stored", target, entry.path, doc, dist, base_commit),
        history=history.build(runs, entries, head_commit=head_meta["commit"], min_pct=threshold) if history_n else None)


@dataclass(frozen=True)
class Nightly:
    """`compare --baseline stored` and `both`: where the label's nightly runs are, whether one measured
    in a materially different environment is compared all the same, and how many runs to show."""

    store: str | None
    allow_env_mismatch: bool = False
    history_n: int = history.DEFAULT_N


def base_nightly(nightly: Nightly, spec: Spec, entries: list[dict], base: dict, head_commit: str | None,
                 threshold_pct: float | None) -> tuple[dict[str, Any], list[Note]]:
    """A paired compare's `baseline`, `drift` and `history` sections from the base's nightly runs,
    and their notes; none outside a repository or without a base commit."""
    repo = toplevel(spec.path.resolve().parent)
    base_commit = base.get("commit")
    if repo is None or not base_commit:
        return {}, []
    target = open_store(nightly.store, repo)
    runs = at_or_before(target, repo, spec.hardware_label, base_commit, limit=max(nightly.history_n, 1))
    base_fp = base.get("fingerprint") or {}
    notes = []
    kept = [r for r in runs
            if nightly.allow_env_mismatch or not material_differences(r[1].get("fingerprint") or {}, base_fp)]
    if len(kept) < len(runs):
        diffs = material_differences(runs[0][1].get("fingerprint") or {}, base_fp) if runs else []
        notes.append(message("note.nightly_env", left_out=len(runs) - len(kept), runs=len(runs),
                             keys=[k for k, _, _ in diffs] or ["fingerprint"]))
    first = kept[0] if kept else (None, None, None)
    sections: dict[str, Any] = {"baseline": _baseline_meta("both", target, first[0].path if first[0] else None,
                                                           first[1], first[2], base_commit)}
    if not kept:
        notes.append(message("note.no_history", label=spec.hardware_label, base=base_commit[:SHORT],
                             store=target.describe()))
        return {**sections, "drift": {}}, notes
    sections["drift"] = _drift(entries, history.series(kept), threshold_pct or 3.0, notes)
    if nightly.history_n:
        sections["history"] = history.build(kept, entries, head_commit=head_commit, min_pct=threshold_pct)
    return sections, notes


def _drift(entries: list[dict], per: dict[str, dict], threshold_pct: float, notes: list[Note]) -> dict[str, dict]:
    """Each benchmark's fresh base median against its nightly series; a note for each that drifted."""
    drift: dict[str, dict] = {}
    for b in entries:
        base_vals = [s["step_time_ms"] for s in (b.get("samples") or {}).get("base") or []
                     if is_measurement(s.get("step_time_ms"))]
        s = per.get(b["name"])
        if not base_vals or not s:
            continue
        d = history.drift(statistics.median(base_vals), s["values"], threshold_pct=threshold_pct)
        d["commits"] = [s["commits"][0], s["commits"][-1]]
        drift[b["name"]] = d
        if d["drifted"]:
            notes.append(history.drift_note(b["name"], d))
    return drift
