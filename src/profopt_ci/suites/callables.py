"""`benchmarks_from: head` for callables and commands: the head's definitions run on both sides.

In: the `Plan` (both sides attached, set up), the sides, a log. Out: a new plan (the given one is
frozen) whose base spec holds the head's callable and command benchmarks (resolved against the
base's code, in its environment), with `new_causes` for a callable the base cannot build or run once
(new in this PR, with why, never a failure), `base_suite` naming what the base runs (so a base
without a spec still runs them) and a note saying what ran. Callables keep `each` as their default
(the spec's `benchmarks_from` unset): each side runs its own spec's definitions, as before.

A callable's module that is a file of the head's checkout but missing from the base's (a benchmark
module the PR adds with its first profopt.yml) is copied over the base's checkout first, as a suite
file is (`expand.overlay`); a module both sides have is the base's own — it may be the library.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from profopt_ci.measure.processes import Side
from profopt_ci.specfile.plan import Plan
from profopt_ci.suites.expand import first_line
from profopt_ci.words.i18n import message


def expand_callables(plan: Plan, sides: list[Side], log: Callable[[str], None]) -> Plan:
    """With `benchmarks_from: head`: a new plan whose base runs the head's callables and commands
    (see module doc); the given plan when there are none to run."""
    if plan.spec.benchmarks_from != "head":
        return plan
    base, head = sides
    own = [b for b in plan.side_spec("head").benchmarks if b.suite is None and b.name not in plan.failures]
    if not own:
        return plan
    copied = _copy_modules([b.callable for b in own if b.callable], head.root, base.root)
    if copied:
        log(f"profopt: benchmarks_from: head — the head's {', '.join(copied)} copied over the base's checkout")
    from profopt_ci.suites.collect import _collector

    callables = [b for b in own if b.callable and b.command is None]
    data = _collector({"kind": "callable", "probe": [[b.name, b.callable, b.params] for b in callables]},
                      plan.side_spec("base"), base, "running the callables once") if callables else {"probe": {}}
    answers = data.get("probe")
    if answers is None:  # the probe process itself failed: every callable is new, with that cause
        err = (data.get("errors") or [{"error": "no answer"}])[0]["error"]
        answers = {b.name: err for b in callables}
    causes = {**plan.new_causes, **{name: message("cause.cannot_run", error=first_line(why))
                                    for name, why in answers.items() if why}}
    runs = [b for b in own if b.name not in causes]
    suites_on_base = [b for b in plan.side_spec("base").benchmarks if b.suite is not None]
    said = (message("note.callables_from_head_copied", n=len(own), copied=list(copied)) if copied
            else message("note.callables_from_head", n=len(own)))
    return replace(plan, new_causes=MappingProxyType(causes), base_suite=plan.base_suite | {b.name for b in runs},
                   sides=MappingProxyType({**plan.sides, "base": replace(plan.side_spec("base"),
                                                                         benchmarks=[*runs, *suites_on_base])}),
                   notes=(*plan.notes, said), overlaid=(*plan.overlaid, *copied))


def _copy_modules(targets: list[str], head_root: Path, base_root: Path) -> list[str]:
    """Each `module:factory`'s module file that the head's checkout has and the base's lacks, copied."""
    copied = []
    for t in dict.fromkeys(targets):
        module = t.partition(":")[0]
        if not module or "+suite" in module:
            continue
        rel = Path(*module.split("."))
        for cand in (rel.with_suffix(".py"), rel / "__init__.py"):
            src, dst = head_root / cand, base_root / cand
            if src.is_file() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                for parent in cand.parents:  # a package the base lacks gets its __init__.py too
                    init = head_root / parent / "__init__.py"
                    if parent != Path(".") and init.is_file() and not (base_root / parent / "__init__.py").exists():
                        (base_root / parent).mkdir(parents=True, exist_ok=True)
                        shutil.copy2(init, base_root / parent / "__init__.py")
                shutil.copy2(src, dst)
                copied.append(str(cand))
    return copied
