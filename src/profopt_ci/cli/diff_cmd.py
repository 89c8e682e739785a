"""`profopt diff`: compare two stored results (unpaired: no rounds to pair).

In: BASE.json and HEAD.json (results@1, or a stored baseline from `baseline show --json`), an
optional `--spec` for goals, constraints and thresholds, and the output flags. Out: comparison.json,
report.md and report.html (cli/output_files.py) and the verdict's exit code.
"""
from __future__ import annotations

import argparse
import gc

from profopt_ci.cli.options import load
from profopt_ci.cli.output_files import finish, output_flags
from profopt_ci.gc_pause import paused


def register(sub) -> None:
    d = sub.add_parser("diff", help="compare two stored results (unpaired)")
    d.add_argument("base_file", metavar="BASE.json")
    d.add_argument("head_file", metavar="HEAD.json")
    d.add_argument("--spec", help="spec for constraints, goals and thresholds (optional)")
    output_flags(d, "comparison.json")
    d.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.diff_results import run_diff
    from profopt_ci.store.stored_baselines import load_side

    # The two documents are millions of objects for a large diff, none in reference cycles: the
    # cyclic GC's full passes over them cost a large share of reading and comparing. They are
    # frozen out of its sight afterwards, so the outputs (templates make cycles) are still collected.
    with paused():
        base = load_side(args.base_file)
        head = load_side(args.head_file)
        spec = load(args.spec) if args.spec else None
        comparison = run_diff(spec, base, head, fail_on=args.fail_on)
        del base, head  # their entries; the comparison keeps only the samples it compared
        gc.freeze()
    return finish(comparison, args)
