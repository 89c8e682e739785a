"""What a compare measures: the benchmarks whose code the change reaches (`measure: changed`).

In: the plan (both sides attached, suites collected), the prepared sides, the compared benchmarks,
the repository and the spec's path in it, a work directory, a log. Out: `Gate` — per benchmark its
`reach` block ({measured, changed, why}: the entry's), the comparison's `reach` summary and note.

A benchmark is measured when its definition in the spec changed, when what builds the environment
changed (reach/environment.py), when its reach record (reach/record.py: the code units it ran, the
files it read, the directories it listed, where its imports looked — made on the base, or kept from
an earlier run whose tree the base changes nothing of) holds something the head changes, or when its
reach cannot be known (a process that may run the repository's code, native code built there, a
failed record run). Otherwise it runs on the head as on the base: it is not measured, and its entry
says why ("none of the 41 code units in 5 files it runs changed").
"""
from __future__ import annotations

import posixpath
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.gitutil import toplevel
from profopt_ci.measure.processes import Side
from profopt_ci.measure.tree_env import cache_root
from profopt_ci.reach import cache
from profopt_ci.reach import record as reach_record
from profopt_ci.reach.environment import changed_env, env_files
from profopt_ci.reach.runs import record_all, required_steps
from profopt_ci.reach.trees import Tree
from profopt_ci.specfile.load import Benchmark, Spec
from profopt_ci.specfile.model import Suite
from profopt_ci.specfile.plan import Plan
from profopt_ci.suites.collect import key, label
from profopt_ci.words.i18n import message

SHOWN = 8  # changed units named in a reason (the entry's `changed` lists them all)


@dataclass(frozen=True)
class Gate:
    reach: dict[str, dict] = field(default_factory=dict)  # benchmark → {measured, changed, why}
    summary: dict | None = None  # the comparison's `reach`
    note: dict | None = None

    def measured(self, name: str) -> bool:
        got = self.reach.get(name)
        return got is None or got["measured"]

    @property
    def reached(self) -> frozenset[str]:
        """The benchmarks the change reaches: their rounds go first under a time budget."""
        return frozenset(n for n, r in self.reach.items() if r["changed"])


def everything(benches: list[Benchmark], why: str) -> Gate:
    """Every benchmark measured (`measure: all`, an A/A), each entry saying why."""
    reach = {b.name: {"measured": True, "changed": [], "why": message(why)} for b in benches}
    return Gate(reach=reach, summary={"mode": "all", "measured": len(benches), "not_measured": 0})


def definition(bench: Benchmark) -> dict:
    """What of a benchmark's definition decides what its process runs."""
    return {"kind": bench.kind, "callable": bench.callable, "command": bench.command, "params": bench.params,
            "env": bench.env, "suite": bench.suite, "required_steps": required_steps(bench)}


def _judging(bench: Benchmark) -> dict:
    """What of its definition decides how it is judged (a change there is measured too)."""
    return {"constraints": [vars(c) for c in bench.constraints], "goal": vars(bench.goal) if bench.goal else None,
            "items_per_iteration": bench.items_per_iteration, "unit": bench.unit, "judged": bench.judged}


def gate(plan: Plan, sides: list[Side], benches: list[Benchmark], *, repo: Path, rel_spec: Path, workdir: Path,
         log: Callable[[str], None]) -> Gate:
    """The reach of every compared benchmark (see module doc): records made on the base where no
    kept one holds, then each one checked against the head's tree."""
    base, head = sides
    spec_dir = rel_spec.parent.as_posix().strip(".").strip("/")
    overlays = [(posixpath.normpath(posixpath.join(spec_dir, p)), head.commit) for p in plan.overlaid]
    base_tree, head_tree = Tree(repo, base.commit, overlays), Tree(repo, head.commit)
    bspec, hspec = plan.side_spec("base"), plan.side_spec("head")
    env_b = env_files(base_tree, bspec.setup, spec_dir)
    env_changed = changed_env(env_b, env_files(head_tree, hspec.setup, spec_dir))
    spec_keys = [k for k in ("setup", "env", "benchmarks_from") if getattr(bspec, k) != getattr(hspec, k)]
    root = cache_root()
    records: dict[str, reach_record.Record] = {}
    idents = {}
    for b in benches:
        idents[b.name] = cache.identity(definition(plan.bench("base", b.name)), bspec.setup, bspec.env)
        kept = valid(cache.kept(root, idents[b.name]), base_tree, env_b)
        if kept is not None:
            records[b.name] = kept
    missing = [b for b in benches if b.name not in records]
    started = time.perf_counter()
    if missing:
        log(f"profopt: reach: recording what {len(missing)} benchmark(s) run on the base"
            + (f" ({len(records)} kept from an earlier run)" if records else ""))
        top = Path(toplevel(base.root) or base.root)
        for name, (raw, seconds) in record_all(plan, missing, base, top, workdir).items():
            rec = reach_record.build(raw, benchmark=name, identity=idents[name], tree=base_tree, top=top,
                                     venv=venv_of(base), env=env_b, seconds=seconds)
            records[name] = rec
            cache.keep(root, rec)
    _keep_collections(plan, base_tree, base, env_b, root)
    spent = time.perf_counter() - started
    reach = {b.name: reach_of(plan, b, records[b.name], head_tree, base_tree, env_changed, spec_keys)
             for b in benches}
    measured = sum(r["measured"] for r in reach.values())
    summary = {"mode": "changed", "measured": measured, "not_measured": len(benches) - measured,
               "recorded": len(missing), "reused": len(benches) - len(missing), "seconds": round(spent, 2)}
    _say(reach, log)
    note = (message("note.reach", measured=measured, n=len(benches), skipped=len(benches) - measured)
            if measured < len(benches) else None)
    return Gate(reach=reach, summary=summary, note=note)


def collect_identity(suite: Suite, spec: Spec) -> str:
    """What a kept collection is a collection of: the suite item, the setup and env (the tree it ran
    on, the head's suite laid over the base or not, is the record's to check)."""
    return cache.identity({"collect": suite.item, "kind": suite.kind, "path": suite.path, "select": suite.select},
                          spec.setup, spec.env)


def _keep_collections(plan: Plan, tree: Tree, side: Side, env: dict, root: Path) -> None:
    """A side's suite collections, each kept with its reach record and its answer: a later compare
    whose trees change nothing of it takes the answer without collecting (pipeline/reach_kept.py)."""
    spec = plan.side_spec(side.name)
    by_key = {key(s): s for s in (spec.suites or plan.spec.suites)}
    top = Path(toplevel(side.root) or side.root)
    for name, answer in plan.collected.items():
        suite, raw = by_key.get(name), answer.get("reach")
        if suite is None or not isinstance(raw, dict) or answer.get("errors"):
            continue
        rec = reach_record.build(raw, benchmark=f"collect:{label(suite)}", identity=collect_identity(suite, spec),
                                 tree=tree, top=top, venv=venv_of(side), env=env, seconds=0.0,
                                 answer={k: v for k, v in answer.items() if k != "reach"})
        cache.keep(root, rec)


def venv_of(side: Side) -> str:
    """Where a side's installed packages are: its own venv, or profopt's environment (a setup without
    a venv of its own installs there: `profopt run`, the nightly)."""
    return side.env.get("VIRTUAL_ENV") or sys.prefix


def keep_tree_records(plan: Plan, side: Side, *, repo: Path, rel_spec: Path, commit: str, workdir: Path,
                      log: Callable[[str], None]) -> int:
    """The nightly's records: every benchmark of a clean tree recorded where no kept record holds,
    and its suites' collections, kept for the compares of the PRs based on it (the action keeps the
    cache directory between jobs). Returns how many were recorded."""
    spec = plan.side_spec(side.name)
    spec_dir = rel_spec.parent.as_posix().strip(".").strip("/")
    tree, root = Tree(repo, commit), cache_root()
    env = env_files(tree, spec.setup, spec_dir)
    benches = [b for b in spec.benchmarks if b.name not in plan.failures]
    todo = []
    for b in benches:
        ident = cache.identity(definition(plan.bench(side.name, b.name)), spec.setup, spec.env)
        if valid(cache.kept(root, ident), tree, env) is None:
            todo.append((b, ident))
    top = Path(toplevel(side.root) or side.root)
    raws = record_all(plan, [b for b, _ in todo], side, top, workdir) if todo else {}
    for b, ident in todo:
        raw, seconds = raws[b.name]
        cache.keep(root, reach_record.build(raw, benchmark=b.name, identity=ident, tree=tree, top=top,
                                            venv=venv_of(side), env=env, seconds=seconds))
    _keep_collections(plan, tree, side, env, root)
    log(f"profopt: reach: {len(todo)} benchmark record(s) made, {len(benches) - len(todo)} kept, in {cache.where(root)}")
    return len(todo)


def valid(kept: list[reach_record.Record], tree: Tree, env: dict) -> reach_record.Record | None:
    """The newest kept record the base's tree runs as its own did (its environment's files the same)."""
    for rec in kept:
        if rec.env != env:
            continue
        if rec.untracked and (rec.commit, [tuple(o) for o in rec.overlays]) != (tree.commit, list(tree.overlays)):
            continue  # files the setup made: only the same tree makes them the same
        if not reach_record.changes(rec, tree):
            return rec
    return None


def reach_of(plan: Plan, bench: Benchmark, rec: reach_record.Record, head_tree: Tree, base_tree: Tree,
             env_changed: list[str], spec_keys: list[str]) -> dict:
    """What the change reaches of one benchmark, from its record on the base: measured (and why), or
    not (what it runs and reads is unchanged)."""
    spec = plan.spec.path.name
    if rec.unknown:
        return _measured([], _unknown(rec))
    if spec_keys:
        return _measured([], message("reach.spec_all", spec=spec, keys=spec_keys))
    if env_changed:
        return _measured(env_changed, message("reach.env", files=env_changed[:SHOWN]))
    b, h = plan.bench("base", bench.name), plan.bench("head", bench.name)
    keys = [k for k, v in {**definition(b), **_judging(b)}.items() if v != {**definition(h), **_judging(h)}[k]]
    if keys:
        return _measured([], message("reach.spec", spec=spec, keys=keys))
    changed = reach_record.changes(rec, head_tree)
    if changed:
        return _measured(changed, message("reach.changed", n=len(changed), changed=changed[:SHOWN]))
    if rec.untracked and base_tree.changed(head_tree):
        return _measured([], message("reach.untracked", files=rec.untracked[:SHOWN]))
    units = sum(len(f.units) + (f.module is not None) for f in rec.code.values())
    read = len(rec.opened)
    why = (message("reach.unchanged_read", units=units, files=len(rec.code), read=read) if read
           else message("reach.unchanged", units=units, files=len(rec.code)))
    return {"measured": False, "changed": [], "why": why}


def _measured(changed: list[str], why: dict) -> dict:
    return {"measured": True, "changed": changed, "why": why}


def _unknown(rec: reach_record.Record) -> dict:
    cause, _, what = (rec.unknown or "failed").partition(":")
    if cause == "failed":
        what = (rec.failed or "").strip().splitlines()[0][:200] if rec.failed else "?"
    if cause not in ("command", "process", "fork", "native", "profiler", "failed"):
        cause, what = "failed", rec.unknown or "?"
    return message(f"reach.unknown.{cause}", what=what) if cause in ("process", "native", "failed") \
        else message(f"reach.unknown.{cause}")


def _say(reach: dict[str, dict], log: Callable[[str], None]) -> None:
    """At once, on the terminal: how many benchmarks will be measured, and why."""
    measured = {n: r for n, r in reach.items() if r["measured"]}
    log(f"profopt: reach: {len(measured)} of {len(reach)} benchmark(s) measured"
        + (f", {len(reach) - len(measured)} not: the change reaches none of their code" if len(measured) < len(reach)
           else ""))
    for name, r in measured.items():
        log(f"profopt: reach: {name}: {r['why']['text']}")


def unmeasured_entry(bench: Benchmark, reach: dict) -> Entry:
    """The entry of a benchmark the change does not reach: no rounds, `no-change` by construction."""
    return comparison_doc.entry({
        "name": bench.name, "unit": bench.unit, "goal": None, "status": {"base": "ok", "head": "ok"},
        "error": None, "rounds": 0, "outlier_rounds": 0, "metrics": {}, "constraints": [], "bottleneck": None,
        "profile": None, "samples": {"base": [], "head": []}, "reach": reach, "decision": "no-change",
        "reason": reach["why"]["text"], "reason_msg": reach["why"]})
