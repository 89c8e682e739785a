"""A compare decided from kept reach records alone: no checkout, no setup, no process.

In: the plan, the repository and the spec's path in it, the resolved base and head commits, a log.
Out: for a PR that reaches no benchmark's code, the plan with every benchmark and a gate that
measures none of them (compare makes its comparison@1 of them), or None whenever anything must be looked at on a checkout: a side's spec that is missing
or invalid, a change to what builds the environment or to the spec's setup and env, a benchmark or
suite collection with no kept record its base's tree runs as it did, a benchmark the change reaches,
one new in the PR, a suite that does not collect. Then compare goes the whole way (pipeline/
compare_refs.py), which uses the same records and the same rules (pipeline/reach_gate.py): this
only decides sooner what that would decide.

The records come from an earlier compare or nightly on this machine (`$PROFOPT_CACHE_DIR/reach/`;
the action keeps that directory between jobs): each holds the blob ids and unit fingerprints of what
its benchmark (or its suite's collector) ran and read, so it is checked against the base's and the
head's trees read from git's object store.
"""
from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from profopt_ci.errors import SpecError, UsageError
from profopt_ci.gitutil import run_git
from profopt_ci.measure.tree_env import cache_root
from profopt_ci.pipeline.reach_gate import Gate, collect_identity, definition, reach_of, valid
from profopt_ci.reach import cache
from profopt_ci.reach import record as reach_record
from profopt_ci.reach.environment import changed_env, env_files
from profopt_ci.reach.trees import Tree
from profopt_ci.specfile.load import Benchmark, Spec, parse_spec
from profopt_ci.specfile.plan import Plan
from profopt_ci.suites.collect import collection, key, label
from profopt_ci.words.i18n import message


def spec_at(repo: Path, commit: str, rel_spec: Path) -> Spec | None:
    """The spec as a commit has it (None: missing, or it does not load: the checkout says why)."""
    got = run_git(["show", f"{commit}:{rel_spec.as_posix()}"], repo, check=False)
    if got.returncode != 0:
        return None
    try:
        return parse_spec(got.stdout.decode("utf-8"), f"{rel_spec} (at {commit[:12]})", path=repo / rel_spec)
    except (SpecError, UsageError, UnicodeDecodeError):
        return None


def kept_decision(plan: Plan, *, repo: Path, rel_spec: Path, base: str, head: str,
                  log: Callable[[str], None]) -> tuple[Plan, Gate] | None:
    """For a PR that reaches nothing, from kept records: the plan as suite expansion would leave it
    and the gate (nothing measured); None otherwise (module doc)."""
    bspec, hspec = spec_at(repo, base, rel_spec), spec_at(repo, head, rel_spec)
    if bspec is None or hspec is None or plan.spec.benchmarks_from == "head" and any(
            b.suite is None for b in hspec.benchmarks):  # the head's callables on the base: the checkout decides
        return None
    plan = plan.attach("base", bspec).attach("head", hspec)
    spec_dir = rel_spec.parent.as_posix().strip(".").strip("/")
    suites = plan.side_spec("head").suites or plan.spec.suites
    shared = bool(suites) and (plan.spec.benchmarks_from or "head") == "head" and all(
        _inside(posixpath.join(spec_dir, s.path)) for s in suites)
    overlays = [(posixpath.normpath(posixpath.join(spec_dir, s.path)), head) for s in suites] if shared else []
    base_tree, head_tree = Tree(repo, base, overlays), Tree(repo, head)
    bspec, hspec = plan.side_spec("base"), plan.side_spec("head")
    env_b = env_files(base_tree, bspec.setup, spec_dir)
    if changed_env(env_b, env_files(head_tree, hspec.setup, spec_dir)) or any(
            getattr(bspec, k) != getattr(hspec, k) for k in ("setup", "env", "benchmarks_from")):
        return None
    root = cache_root()
    answers = {}
    for suite in suites:
        rec = valid(cache.kept(root, collect_identity(suite, bspec)), base_tree, env_b)
        if rec is None or rec.answer is None or reach_record.changes(rec, head_tree):
            return None  # collected anew: the head's suite may collect other benchmarks
        answers[key(suite)] = rec.answer
    found = collection(bspec, suites, answers, plan.overrides.settings(), plan.spec.raw.get("defaults") or {})
    if found.errors:
        return None
    if {b.name for b in hspec.benchmarks} != {b.name for b in bspec.benchmarks}:
        return None  # a benchmark new in the PR (or gone): measured, or said, by the whole compare
    plan = _with_suites(plan, found.benchmarks, shared, suites)
    reach = {}
    for b in plan.spec.benchmarks:
        ident = cache.identity(definition(plan.bench("base", b.name)), bspec.setup, bspec.env)
        rec = valid(cache.kept(root, ident), base_tree, env_b)
        if rec is None:
            return None
        reach[b.name] = reach_of(plan, b, rec, head_tree, base_tree, [], [])
        if reach[b.name]["measured"]:
            return None
    n = len(reach)
    log(f"profopt: reach: 0 of {n} benchmark(s) measured: the change reaches none of their code (kept records; "
        "nothing checked out)")
    gate = Gate(reach=reach, summary={"mode": "changed", "measured": 0, "not_measured": n, "recorded": 0,
                                      "reused": n, "seconds": 0.0},
                note=message("note.reach", measured=0, n=n, skipped=n))
    return plan, gate


def _inside(path: str) -> bool:
    p = posixpath.normpath(path)
    return p not in (".", "") and not p.startswith("..")


def _with_suites(plan: Plan, found: list[Benchmark], shared: bool, suites) -> Plan:
    """The plan as suite expansion would leave it: the collected benchmarks in every spec, the note."""
    said = message("note.suites_from_head" if shared else "note.suites_each", suites=[label(s) for s in suites],
                   n=len(found)) if suites else None
    sides = {name: replace(plan.side_spec(name), benchmarks=[*plan.side_spec(name).benchmarks, *found])
             for name in ("base", "head")}
    return replace(plan, spec=replace(plan.spec, benchmarks=[*plan.spec.benchmarks, *found]),
                   sides=MappingProxyType(sides), notes=(*plan.notes, *([said] if said else ())),
                   base_suite=frozenset(b.name for b in found))
