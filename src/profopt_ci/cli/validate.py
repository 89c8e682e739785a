"""`profopt validate`: check a spec, and (unless --no-import) that every callable imports.

In: `--spec` (default ./profopt.yml) and `--no-import`. Out: one `ok` line on stdout and exit 0, or
a `SpecError` listing every problem as FILE:LINE:COL (main() prints it; exit 2).
"""
from __future__ import annotations

import argparse

from profopt_ci.cli.options import SPEC_HELP, load
from profopt_ci.errors import EXIT_OK, SpecError


def register(sub) -> None:
    v = sub.add_parser("validate", help="check a spec, print what is wrong and where")
    v.add_argument("--spec", help=SPEC_HELP)
    v.add_argument("--no-import", action="store_true",
                   help="only check the spec; do not import each callable in a worker of the spec's environment")
    v.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    spec = load(args.spec)
    if not args.no_import:
        from profopt_ci.spec.imports import check_imports

        problems = check_imports(spec, args.spec or spec.path.name)
        if problems:
            raise SpecError(problems)
    names = ", ".join(b.name for b in spec.benchmarks[:20]) + (", …" if len(spec.benchmarks) > 20 else "")
    checked = "" if args.no_import else ", every callable imports"
    print(f"{spec.path}: ok — version {spec.version}, label {spec.hardware_label}, "
          f"{len(spec.benchmarks)} benchmark(s): {names}{checked}")
    return EXIT_OK
