"""`profopt` command line: each verb parses its flags and calls the core with plain values.

`main()` is the one error boundary: a `ProfoptError` becomes its message on stderr and its exit code
(design.md); Ctrl-C is exit 130 after the verb's own cleanup ran.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from profopt_ci import __version__
from profopt_ci.errors import EXIT_OK, EXIT_USAGE, ProfoptError, SpecError, UsageError
from profopt_ci.spec import Spec, find_spec, load_spec


def _load(path: str | None) -> Spec:
    spec_path = find_spec(path)
    return load_spec(spec_path, display=path or spec_path.name)


# ---- verbs --------------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    spec = _load(args.spec)
    names = ", ".join(b.name for b in spec.benchmarks)
    print(f"{spec.path}: ok — version {spec.version}, label {spec.hardware_label}, "
          f"{len(spec.benchmarks)} benchmark(s): {names}")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from profopt_ci.measure import run_tree

    spec = _load(args.spec)
    out = Path(args.out)
    code, _ = run_tree(spec, spec.path.resolve().parent, only=args.only, rounds=args.rounds, out=out)
    print(f"profopt: results written to {out}", file=sys.stderr)
    return code


# ---- parser -------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} — expected at least 1")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 itself; route it through our boundary
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="profopt", description="Profiling-driven optimization as a CI loop.")
    p.add_argument("--version", action="version", version=f"profopt {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    v = sub.add_parser("validate", help="check a spec, print what is wrong and where")
    v.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    v.set_defaults(func=cmd_validate)

    r = sub.add_parser("run", help="run the spec on the current tree")
    r.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    r.add_argument("--out", default="results.json", help="results file (default: results.json)")
    r.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)")
    r.add_argument("--rounds", type=_positive, help="rounds (default: the spec's defaults.rounds)")
    r.set_defaults(func=cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return func(args)
    except SpecError as exc:
        for line in exc.problems:
            print(line, file=sys.stderr)
        print(f"profopt: the spec has {len(exc.problems)} problem(s)", file=sys.stderr)
        return exc.exit_code
    except ProfoptError as exc:
        print(f"profopt: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("profopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
