"""The plan's suites become benchmarks: collected in each side after its setup, before any round.

In: the frozen `Plan`, the sides (prepared and set up), a log. Out: a new plan with every collected
benchmark in its specs, `failures` (a suite not collected, a benchmark that cannot run on head: failed
entries with their cause), `new_causes` (a benchmark the base cannot collect or run: new in this PR,
with why), `base_suite` (what the base runs) and notes saying what ran.

`benchmarks_from: head` (the suites' default): the head's suite files are laid over the base's
checkout at the same paths (`overlay`), so the base's worker runs the head's benchmarks against
the base's code — its imports resolve to the base's tree, its conftest.py files above the suite
are the base's own. `each`: every side runs its own suite.
"""
from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from profopt_ci.errors import cause_lines
from profopt_ci.gitutil import toplevel
from profopt_ci.harness.suite_targets import target
from profopt_ci.measure.processes import Side
from profopt_ci.specfile.model import Benchmark, Spec, Suite, resolve_settings
from profopt_ci.specfile.plan import Plan
from profopt_ci.suites.collect import Collection, collect, label, probe
from profopt_ci.words.i18n import message


def suites_of(plan: Plan, side: str) -> list[Suite]:
    return plan.side_spec(side).suites or plan.spec.suites


def _placeholder(plan: Plan, suite: str) -> Benchmark:
    """A suite that could not be collected stays in the report as one failed benchmark named after
    it (`asv:benchmarks/asv.conf.json`); it fails on every side before any round, so no worker
    ever runs it (its name holds `/`: file names made from it are escaped all the same)."""
    spec = plan.spec
    settings = resolve_settings(spec.raw.get("defaults") or {}, plan.overrides.settings())
    kind = suite.partition(":")[0]
    return Benchmark(name=suite, callable=target(kind, suite.partition(":")[2] or "?"), command=None, params={},
                     items_per_iteration=None, unit="items", goal=None, constraints=[], env={},
                     settings=settings, suite=kind)


def _error_text(err: dict) -> str:
    where = f"{err.get('file')}:{err['line']}: " if err.get("line") else (f"{err.get('file')}: " if err.get("file") else "")
    return f"{where}{err['error']}"


def _suite_errors(col: Collection) -> dict[str, str]:
    """Each suite that could not be collected: all its errors, each with its file:line."""
    out: dict[str, list[str]] = {}
    for e in col.errors:
        out.setdefault(e["suite"], []).append(_error_text(e))
    return {suite: "\n".join(texts) for suite, texts in out.items()}


def _add(spec: Spec, benches: list[Benchmark]) -> Spec:
    return replace(spec, benchmarks=[*spec.benchmarks, *benches])


def expand_tree(plan: Plan, side: Side, log: Callable[[str], None], *, reach: bool = False) -> Plan:
    """`profopt run`: the tree's suites collected and probed in it, once per plan; a new plan whose
    spec (and that side's, when attached) has the benchmarks, with their failures and the suites' notes.
    `reach` (the nightly): each collector's reach recorded too (the plan's `collected`)."""
    own = plan.side_spec(side.name)
    if not (plan.spec.suites and own.suites) or any(b.suite for b in own.benchmarks):
        return plan
    where = {"repo": str(toplevel(side.root) or side.root), "venv": side.env.get("VIRTUAL_ENV") or sys.prefix} \
        if reach else None
    col = collect(plan.spec, plan.spec.suites, side, plan.overrides.settings(), reach=where)
    _say(col, side.name, log)
    cant = probe(plan.spec, col.benchmarks, side)
    errors = _suite_errors(col)
    places = [_placeholder(plan, suite) for suite in errors]
    failures = {**plan.failures, **{b.name: {side.name: errors[b.name]} for b in places},
                **{name: {side.name: f"it cannot run here: {why}"} for name, why in cant.items()}}
    found = [*col.benchmarks, *places]
    sides = {**plan.sides, side.name: _add(plan.sides[side.name], found)} if side.name in plan.sides else plan.sides
    return replace(plan, spec=_add(plan.spec, found), sides=MappingProxyType(sides),
                   failures=MappingProxyType(failures), notes=(*plan.notes, *col.notes),
                   collected=MappingProxyType(col.answers) if reach else plan.collected)


def expand_compare(plan: Plan, sides: list[Side], log: Callable[[str], None], *, reach: bool = False) -> Plan:
    """Both sides' suites collected (the head's laid over the base with benchmarks_from: head): a new
    plan with them in its specs, their failures, why each one the base lacks is new, and notes.
    `reach`: the base's collectors record what they run and read (the plan's `collected`), so a
    later compare can take their answers without collecting (pipeline/reach_kept.py)."""
    base, head = sides
    suites = suites_of(plan, "head")
    if not suites:
        return plan
    settings = plan.overrides.settings()
    head_col = collect(plan.side_spec("head"), suites, head, settings, plan.spec.raw.get("defaults") or {})
    _say(head_col, "head", log)
    shared = (plan.spec.benchmarks_from or "head") == "head" and overlay(suites, head.root, base.root, log)
    base_suites = suites if shared else suites_of(plan, "base")
    where = {"repo": str(toplevel(base.root) or base.root), "venv": base.env.get("VIRTUAL_ENV") or sys.prefix} \
        if reach else None
    base_col = collect(plan.side_spec("base"), base_suites, base, settings, plan.spec.raw.get("defaults") or {},
                       reach=where)
    _say(base_col, "base", log)
    head_errors, base_errors = _suite_errors(head_col), _suite_errors(base_col)
    places = [_placeholder(plan, suite) for suite in head_errors]
    failures = dict(plan.failures)
    for b in places:  # failed on both sides: nothing of it runs, not even on the base alone
        failures[b.name] = {"head": head_errors[b.name], "base": base_errors.get(b.name)
                            or f"not measured: the head's suite could not be collected — {head_errors[b.name]}"}
    for name, why in probe(plan.side_spec("head"), head_col.benchmarks, head).items():
        failures[name] = {"head": f"it cannot run on head: {why}"}
    base_names = base_col.names() & head_col.names()
    base_cant = probe(plan.side_spec("base"), [b for b in base_col.benchmarks if b.name in base_names], base)
    causes = dict(plan.new_causes)
    for b in head_col.benchmarks:
        if b.name in failures:
            continue
        suite_label = _suite_label(b, suites)
        if b.name in base_cant:
            causes[b.name] = message("cause.cannot_run", error=first_line(base_cant[b.name]))
        elif b.name not in base_names:
            causes[b.name] = (message("cause.cannot_collect", error=first_line(base_errors[suite_label]))
                              if suite_label in base_errors else message("cause.no_such"))
    on_base = [*(b for b in base_col.benchmarks if b.name in base_names and b.name not in causes), *places]
    found = [*head_col.benchmarks, *places]
    said = message("note.suites_from_head" if shared else "note.suites_each", suites=[label(s) for s in suites],
                   n=len(head_col.benchmarks))
    sides = {**plan.sides, "head": _add(plan.side_spec("head"), found), "base": _add(plan.side_spec("base"), on_base)}
    return replace(plan, spec=_add(plan.spec, found), sides=MappingProxyType(sides), failures=MappingProxyType(failures),
                   new_causes=MappingProxyType(causes), base_suite=frozenset(b.name for b in on_base),
                   overlaid=tuple(s.path for s in suites) if shared else (),
                   collected=MappingProxyType(base_col.answers) if reach else plan.collected,
                   notes=(*plan.notes, said, *{n["text"]: n for n in head_col.notes}.values()))  # each wording once


def first_line(text: str) -> str:
    """An error's cause in one line: its first non-blank line (the exception, not the traceback)."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), text)[:300]


def _suite_label(bench: Benchmark, suites: list[Suite]) -> str:
    for s in suites:
        if s.kind == bench.suite:
            return label(s)
    return ""


def _say(col: Collection, side: str, log: Callable[[str], None]) -> None:
    log(f"profopt: suites [{side}]: {len(col.benchmarks)} benchmark(s) collected"
        + (f", {len(col.skipped)} skipped" if col.skipped else "") + (f", {len(col.errors)} error(s)" if col.errors else ""))
    for e in col.errors:
        log(f"profopt: suites [{side}]: {e['suite']}: {cause_lines(_error_text(e), 1)[0]}")


def overlay(suites: list[Suite], head_root: Path, base_root: Path, log: Callable[[str], None]) -> bool:
    """The head's suite paths copied over the base's checkout (the base's own files there removed
    first), so the base runs the head's suite; False (each side runs its own) when a suite path is
    the checkout itself, which would lay the head's code over the base's."""
    for s in suites:
        rel = Path(s.path)
        src, dst = (head_root / rel).resolve(), base_root / rel
        if src == head_root.resolve() or head_root.resolve() not in src.parents:
            log(f"profopt: {label(s)} is not a directory or file inside the checkout: each side runs its own suite")
            return False
    for s in suites:
        rel = Path(s.path)
        src, dst = head_root / rel, base_root / rel
        kind = _file_kind(src)  # a path the head lacks is not copied: each side's collector says so
        if kind == "dir":
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".asv"))
        elif kind == "file":
            dst.parent.mkdir(parents=True, exist_ok=True)
            if s.kind == "asv" and src.name.endswith(".json"):
                _copy_asv_conf(src, dst)
            shutil.copy2(src, dst)
    return True


def _file_kind(path: Path) -> str | None:
    """"dir", "file", or None: no such path, or one the file system refuses (a name too long)."""
    try:
        return "dir" if path.is_dir() else "file" if path.is_file() else None
    except OSError:
        return None


def _copy_asv_conf(src: Path, dst: Path) -> None:
    """An asv.conf.json item: its benchmark directory travels with it."""
    from profopt_ci.harness.asv_suite import benchmark_dir

    try:
        bdir = benchmark_dir(str(src))
    except (OSError, ValueError):
        return
    target_dir = dst.parent / bdir.relative_to(src.parent)
    shutil.rmtree(target_dir, ignore_errors=True)
    shutil.copytree(bdir, target_dir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
