"""`profopt validate`: check a spec, and (unless --no-import) that every callable imports.

In: `--spec` (default ./profopt.yml), `--no-import`, `--no-setup`. With `setup`, the callables are
imported and the suites collected where compare will run them: in the tree's setup environment
(measure/tree_env.py: built as compare builds a side's, the suites' runners added, cached by the
setup and the files it reads), and each collected benchmark is run once, as compare does before
its rounds (not with `--no-import`, which says so); `--no-setup` keeps the fast check in profopt's
own environment and says that it is one. Out: the suites' runners (and whether profopt added them),
what each suite collected and one `ok` line on stdout, exit 0; or a `SpecError` listing every problem as
FILE:LINE:COL with the collector's own last lines (main() prints it; exit 2); a setup that fails is
exit 3 with its output.
"""
from __future__ import annotations

import argparse

from profopt_ci.cli.options import SPEC_HELP, load, suite_flag
from profopt_ci.errors import EXIT_OK, SpecError


def register(sub) -> None:
    v = sub.add_parser("validate", help="check a spec, print what is wrong and where")
    v.add_argument("--spec", help=SPEC_HELP)
    suite_flag(v)
    v.add_argument("--no-import", action="store_true",
                   help="only check the spec; do not import each callable in a worker of the spec's environment")
    v.add_argument("--no-setup", action="store_true",
                   help="do not build the setup environment: import and collect with profopt's own interpreter "
                        "and packages (fast; compare runs in the setup environment)")
    v.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    spec = load(args.spec, args.suite)
    side = _environment(spec, args) if spec.setup and not args.no_setup and (spec.suites or not args.no_import) else None
    if not args.no_import:
        from profopt_ci.measure.import_check import check_imports

        problems = check_imports(spec, args.spec or spec.path.name, side)
        if problems:
            raise SpecError(problems)
    if side is not None:
        _runners(side)
    if spec.suites:
        try:
            _suites(spec, side, probe=not args.no_import)
        except SpecError as exc:
            if spec.setup and args.no_setup:  # the collector ran in profopt's environment: say so
                raise SpecError([*exc.problems, f"{spec.path}:1: (--no-setup: collected with profopt's own "
                                 "interpreter and packages; without it validate collects in the setup environment, "
                                 "as compare does)"]) from None
            raise
    names = ", ".join(b.name for b in spec.benchmarks[:20]) + (", …" if len(spec.benchmarks) > 20 else "")
    checked = "" if args.no_import else ", every callable imports"
    suites = f", {len(spec.suites)} suite(s)" if spec.suites else ""
    if spec.suites:
        suites += (" (their benchmarks not run: --no-import)" if args.no_import
                   else ", each of their benchmarks ran once")
    print(f"{spec.path}: ok — version {spec.version}, label {spec.hardware_label}, "
          f"{len(spec.benchmarks)} benchmark(s){': ' + names if names else ''}{suites}{checked}{_where(spec, side, args)}")
    return EXIT_OK


def _environment(spec, args):
    """The tree's setup environment, built or reused (setup's own lines go to stderr)."""
    import sys

    from profopt_ci.measure.tree_env import tree_environment

    return tree_environment(spec, spec.path.resolve().parent, lambda line: print(line, file=sys.stderr))


def _where(spec, side, args) -> str:
    if side is not None:
        return f"; checked in the setup environment ({side.python})"
    if spec.setup and args.no_setup:
        return ("; --no-setup: checked with profopt's own interpreter and packages, not in the setup "
                "environment compare uses")
    return ""


def _runners(side) -> None:
    """The suites' runners in the setup environment, and whether profopt added them."""
    from profopt_ci.measure.suite_runner import read
    from profopt_ci.words.i18n import message, say

    record = read(side)
    for name, runner in (record.get("runners") or {}).items():
        also = [f"{k} {v}" for k, v in (record.get("added") or {}).items() if k != name] if runner.get("added") else []
        said = "runner.setup" if not runner.get("added") else "runner.added_with" if also else "runner.added"
        print(say("en", message(said, name=name, version=runner.get("version"), also=also)))


def _suites(spec, side=None, *, probe: bool = True) -> None:
    """What each suite collected (name, kind, params) and what it skipped, with file:line, then each
    benchmark run once as compare does before its rounds (`probe`); a suite that cannot be collected,
    or a benchmark that cannot run, is a spec error (exit 2) naming where."""
    from profopt_ci.measure.processes import Side
    from profopt_ci.suites.collect import collect
    from profopt_ci.words.i18n import say

    side = side or Side(name="tree", root=spec.path.resolve().parent)
    col = collect(spec, spec.suites, side)
    for e in col.entries:
        kind = e.get("style") or e.get("asv_type") or e.get("pyperf") or ""
        params = ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items())
        print(f"{e['suite']}: {e['name']} ({kind}{'; ' + params if params else ''}) at {e.get('file')}:{e.get('line')}"
              + (f" — ignored asv attributes: {', '.join(e['ignored'])}" if e.get("ignored") else ""))
    for s in col.skipped:
        print(f"{s['suite']}: skipped {s.get('name')} at {s.get('file')}:{s.get('line')} — {s.get('why')}")
    for note in col.notes:
        print(say("en", note))
    problems = [f"{e.get('file') or e['suite']}:{e.get('line') or 1}: {e['suite']}: {e['error']}" for e in col.errors]
    broken = {e["suite"] for e in col.errors}  # a suite that did not collect cleanly is its error, not each benchmark's
    if probe and any(e["suite"] not in broken for e in col.entries):
        problems += _probed(spec, col, side, broken)
    if problems:
        raise SpecError(problems)


def _probed(spec, col, side, broken: set[str]) -> list[str]:
    """Each collected benchmark run once in the environment compare runs it in: a problem, at its
    file:line, for each that cannot run (an import only its test body makes, a failing assertion)."""
    from profopt_ci.errors import cause_lines
    from profopt_ci.suites.collect import probe

    where = {e["name"]: e for e in col.entries}
    cant = probe(spec, [b for b in col.benchmarks if where.get(b.name, {}).get("suite") not in broken], side)
    out = []
    for name, why in cant.items():
        e = where.get(name, {})
        first = cause_lines(why.split("\n", 1)[0], 1)
        lines = [*first, *(ln for ln in cause_lines(why, 4) if ln not in first)]
        out.append("\n".join([f"{e.get('file') or '?'}:{e.get('line') or 1}: {e.get('suite', '?')}: {name} cannot run "
                              f"(run once, as compare runs each benchmark before its rounds):",
                              *(f"    {ln}" for ln in lines)]))
    return out
