"""`profopt merge`: join the results@1 files of matrix shards (`run --shard I/N`) into one.

In: the shards' files and `--out`. Out: one results@1 at `--out`, a warning line per mismatch the
shards show; exit 0, or 3 when any benchmark in them failed.
"""
from __future__ import annotations

import argparse
import sys

from profopt_ci.errors import EXIT_INFRA, EXIT_OK


def register(sub) -> None:
    m = sub.add_parser("merge", help="join the results of matrix shards (run --shard I/N)")
    m.add_argument("files", nargs="+", metavar="SHARD.json")
    m.add_argument("--out", default="results.json", help="merged results file (default: results.json)")
    m.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.documents.results import build, save_json
    from profopt_ci.measure.shard import merge

    merged, warnings = merge(args.files)
    for w in warnings:
        print(f"profopt: warning: {w}", file=sys.stderr)
    save_json(build(merged), args.out)
    print(f"profopt: {len(merged['benchmarks'])} benchmark(s) from {len(args.files)} file(s) written to {args.out}",
          file=sys.stderr)
    failed = [n for n, b in merged["benchmarks"].items() if b.get("status") != "ok"]
    return EXIT_INFRA if failed else EXIT_OK
