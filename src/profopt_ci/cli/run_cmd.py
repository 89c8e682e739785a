"""`profopt run`: measure the spec on the current tree, all of it or one shard of a matrix split.

In: `--spec --out --only --rounds --instrument`, and `--shard I/N` (with `--store`, balanced by the
costs a baseline store recorded). Out: results@1 at `--out` (a shard's records which benchmarks it
ran, for `merge`); exit 0, or 3 when a benchmark failed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profopt_ci.cli.options import SPEC_HELP, instrument_flag, load, plan, positive, suite_flag
from profopt_ci.errors import EXIT_OK, UsageError
from profopt_ci.specfile.model import Spec


def register(sub) -> None:
    r = sub.add_parser("run", help="run the spec on the current tree")
    r.add_argument("--spec", help=SPEC_HELP)
    suite_flag(r)
    r.add_argument("--out", default="results.json", help="results file (default: results.json)")
    r.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)")
    r.add_argument("--rounds", type=positive, help="rounds (default: the spec's defaults.rounds)")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N (1-based) of the benchmarks; join with merge")
    r.add_argument("--store", metavar="dir:PATH|git:BRANCH",
                   help="with --shard: balance shards by the costs recorded in this baseline store")
    instrument_flag(r)
    r.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.run_tree import run_tree

    spec = load(args.spec, args.suite)
    out = Path(args.out)
    if args.shard:
        return _run_shard(spec, args, out)
    if args.store:
        raise UsageError("run --store only balances --shard I/N; without --shard there is nothing to balance")
    code, _, _ = run_tree(plan(spec, args), spec.path.resolve().parent, only=args.only, out=out)
    print(f"profopt: results written to {out}", file=sys.stderr)
    return code


def _run_shard(spec: Spec, args: argparse.Namespace, out: Path) -> int:
    """`run --shard I/N`: this job's part of the split, recorded in the results for `merge`."""
    from profopt_ci.documents.results import build, save_json
    from profopt_ci.measure.processes import Side
    from profopt_ci.measure.shard import parse_shard, shard_info
    from profopt_ci.pipeline.run_tree import run_tree
    from profopt_ci.suites.expand import expand_tree

    index, count = parse_shard(args.shard)
    # the suites' benchmarks are split like any others
    the_plan = expand_tree(plan(spec, args), Side(name="tree", root=spec.path.resolve().parent), _log)
    names = [b.name for b in the_plan.spec.select(args.only)]
    costs, cost_commit = ({}, None)
    if args.store:
        from profopt_ci.store.stored_baselines import costs as recorded_costs

        costs, cost_commit = recorded_costs(the_plan.spec, args.store)
    info = shard_info(names, index, count, costs, cost_commit)
    how = f"by recorded cost (baseline {cost_commit[:12]})" if info["balance"] == "cost" else "by name"
    print(f"profopt: shard {index}/{count} ({how}): {', '.join(info['benchmarks']) or 'no benchmarks'}", file=sys.stderr)
    root = spec.path.resolve().parent
    if info["benchmarks"]:
        code, results, _ = run_tree(the_plan, root, only=info["benchmarks"], out=out)
    else:
        code, results = EXIT_OK, _empty_results(the_plan.spec, root)
    save_json(build({**results, "shard": info}), out)
    print(f"profopt: results written to {out}", file=sys.stderr)
    return code


def _log(line: str) -> None:
    print(line, file=sys.stderr)


def _empty_results(spec: Spec, root: Path) -> dict:
    """A shard that got no benchmarks still writes results@1, so `merge` sees every shard."""
    from profopt_ci.documents.results import new_results
    from profopt_ci.gitutil import commit_info
    from profopt_ci.measure.processes import Side, fingerprint

    commit, dirty = commit_info(root)
    return new_results(spec, commit=commit, dirty=dirty, fingerprint=fingerprint(Side(name="tree", root=root), spec),
                       rounds=0)
