"""`profopt` command line: the parser assembled from one module per verb, and the error boundary.

In: argv. Out: the verb's exit code. Each verb module (validate, run, compare, diff, demo, report,
publish, baseline, merge, bisect, site, schema) registers its own flags and parses them into plain values for the core.

`main()` is the one error boundary, and every error leaves it in one form, `profopt: …` on stderr,
with the exit code docs/cli.md documents:
- 0 ok · 1 the policy failed · 2 usage or spec error (`UsageError`, `SpecError`, a bad flag) ·
  3 a benchmark or the infrastructure failed (`InfraError`; a failed `git` is `gitutil.GitError`,
  exit 3, unless the caller knows it is the user's and raises a `UsageError` instead);
- a spec's problems are listed first, one `FILE:LINE:COL: …` line each (the form editors read),
  then `profopt: the spec has N problem(s)`;
- Ctrl-C or SIGTERM: `profopt: interrupted`, exit 130, after the verb's own cleanup ran;
- anything else is a bug of ours: `profopt: internal error: …`, exit 3 (PROFOPT_DEBUG=1 shows the
  traceback).
"""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from profopt_ci import __version__
from profopt_ci.cli import (
    baseline_cmd,
    bisect_cmd,
    compare_cmd,
    demo_cmd,
    diff_cmd,
    interrupts,
    merge_cmd,
    output_files,
    publish_cmd,
    report_cmd,
    run_cmd,
    schema_cmd,
    site_cmd,
    validate_cmd,
)
from profopt_ci.cli.options import Parser
from profopt_ci.errors import EXIT_INFRA, EXIT_USAGE, ProfoptError, SpecError

VERBS = (validate_cmd, run_cmd, compare_cmd, diff_cmd, demo_cmd, report_cmd, publish_cmd,  # the order `--help` lists
         baseline_cmd, merge_cmd, bisect_cmd, site_cmd, schema_cmd)
MAX_PROBLEMS_SHOWN = 50  # a spec with 200k bad entries prints 50 lines and a count, not one line each
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="profopt", description="Profiling-driven optimization as a CI loop.")
    p.add_argument("--version", action="version", version=f"profopt {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    for verb in VERBS:
        verb.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    interrupts.install()  # SIGTERM (a cancelled CI job) unwinds like Ctrl-C: cleanup, partial results
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            print(f"profopt: no verb given — expected one of: {', '.join(v.__name__.rsplit('.', 1)[1].removesuffix('_cmd') for v in VERBS)}",
                  file=sys.stderr)
            return EXIT_USAGE
        return func(args)
    except SpecError as exc:
        print("\n".join(exc.problems[:MAX_PROBLEMS_SHOWN]), file=sys.stderr)
        more = len(exc.problems) - MAX_PROBLEMS_SHOWN
        print(f"profopt: the spec has {len(exc.problems)} problem(s)"
              + (f" ({more} more not shown)" if more > 0 else ""), file=sys.stderr)
        return exc.exit_code
    except ProfoptError as exc:
        print(f"profopt: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        interrupts.acknowledge()
        print("profopt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last resort: a bug of ours still exits 3 with one readable line
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    if os.environ.get("PROFOPT_DEBUG"):
        traceback.print_exc()
    where = traceback.extract_tb(exc.__traceback__)[-1]
    print(f"profopt: internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno}; "
          "set PROFOPT_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
    return EXIT_INFRA


def program() -> None:
    """The `profopt` command: `main`, then exit. With a document retained (cli/output_files.retain),
    without freeing it: what is buffered is flushed and the exit handlers run, then the process
    ends (os._exit)."""
    output_files.RETAINED = []  # a list, not None: the verbs now keep their big documents in it
    code = main()
    if not output_files.RETAINED:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        atexit._run_exitfuncs()  # what sys.exit would run (tempfile finalizers, logging)
        os._exit(code)


if __name__ == "__main__":
    program()
