"""`profopt validate`: check a spec, and (unless --no-import) that every callable imports.

In: `--spec` (default ./profopt.yml) and `--no-import`. Out: one `ok` line on stdout and exit 0, or
a `SpecError` listing every problem as FILE:LINE:COL (main() prints it; exit 2).
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
    v.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    spec = load(args.spec, args.suite)
    if not args.no_import:
        from profopt_ci.specfile.imports import check_imports

        problems = check_imports(spec, args.spec or spec.path.name)
        if problems:
            raise SpecError(problems)
    if spec.suites:
        _suites(spec)
    names = ", ".join(b.name for b in spec.benchmarks[:20]) + (", …" if len(spec.benchmarks) > 20 else "")
    checked = "" if args.no_import else ", every callable imports"
    suites = f", {len(spec.suites)} suite(s)" if spec.suites else ""
    print(f"{spec.path}: ok — version {spec.version}, label {spec.hardware_label}, "
          f"{len(spec.benchmarks)} benchmark(s){': ' + names if names else ''}{suites}{checked}")
    return EXIT_OK


def _suites(spec) -> None:
    """What each suite collected (name, kind, params) and what it skipped, with file:line; a suite
    that cannot be collected is a spec error (exit 2) naming where."""
    from profopt_ci.measure.processes import Side
    from profopt_ci.suites.collect import collect

    col = collect(spec, spec.suites, Side(name="tree", root=spec.path.resolve().parent))
    for e in col.entries:
        kind = e.get("style") or e.get("asv_type") or e.get("pyperf") or ""
        params = ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items())
        print(f"{e['suite']}: {e['name']} ({kind}{'; ' + params if params else ''}) at {e.get('file')}:{e.get('line')}"
              + (f" — ignored asv attributes: {', '.join(e['ignored'])}" if e.get("ignored") else ""))
    for s in col.skipped:
        print(f"{s['suite']}: skipped {s.get('name')} at {s.get('file')}:{s.get('line')} — {s.get('why')}")
    for note in col.notes:
        print(note)
    if col.errors:
        raise SpecError([f"{e.get('file') or e['suite']}:{e.get('line') or 1}: {e['suite']}: {e['error']}"
                         for e in col.errors])
