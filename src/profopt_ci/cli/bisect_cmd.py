"""`profopt bisect --good REF --bad REF`: the commit that changed a benchmark.

In: the spec, both ends, `--benchmark NAME`… (default: those that changed beyond τ between the
ends), `--metric`, the measurement overrides compare takes, `--extensions N` (re-runs of an
inconclusive probe), `--out --report --lang`. Out: bisect.json (`profopt/bisect@1`) and bisect.md
(by default under ./.profopt/), one line naming the culprit; exit 0, or 3 when the ends failed
(the document is written first).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profopt_ci.cli.options import SPEC_HELP, lang_flag, load, plan, positive
from profopt_ci.cli.output_files import output_dir
from profopt_ci.errors import EXIT_OK, UsageError


def register(sub) -> None:
    b = sub.add_parser("bisect", help="find the commit that changed a benchmark, by paired compares")
    b.add_argument("--spec", help=SPEC_HELP)
    b.add_argument("--good", required=True, metavar="REF", help="a commit before the change")
    b.add_argument("--bad", required=True, metavar="REF", help="a commit after it")
    b.add_argument("--benchmark", action="append", metavar="NAME",
                   help="search this benchmark (repeatable; default: those that changed beyond τ between the ends)")
    b.add_argument("--metric", default="step_time", metavar="step_time|instructions|peak_memory|QUALITY",
                   help="what changed: step_time (default), instructions, peak_memory, or a recorded quality "
                        "value one of the benchmark's constraints names")
    b.add_argument("--extensions", type=int, default=1, metavar="N",
                   help="re-runs of an inconclusive probe, each with twice the rounds (default 1)")
    b.add_argument("--threshold", help="smallest change that counts, e.g. 3%%")
    b.add_argument("--rounds", type=positive, help="rounds before a probe's first look (default: the spec's)")
    b.add_argument("--max-rounds", type=positive, help="extend a probe up to this many rounds while inconclusive")
    b.add_argument("--pairing", choices=("lockstep", "rounds"), help="as compare's --pairing")
    b.add_argument("--cpuset", metavar="CPUS", help="as compare's --cpuset")
    b.add_argument("--out", help="the bisect@1 document (default: .profopt/bisect.json)")
    b.add_argument("--report", help="the Markdown report (default: .profopt/bisect.md)")
    lang_flag(b)
    b.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.documents.read import view
    from profopt_ci.pipeline.bisect_refs import BisectFailed, BisectRange, run_bisect

    if args.extensions < 0:
        raise UsageError(f"bisect: --extensions {args.extensions} — expected 0 or more")
    spec = load(args.spec)
    the_plan = plan(spec, args)
    try:
        doc = run_bisect(spec, the_plan.overrides, BisectRange(good_ref=args.good, bad_ref=args.bad, benchmarks=args.benchmark,
                                                               metric=args.metric, extensions=args.extensions))
    except BisectFailed as exc:
        write(exc.doc, args)
        raise
    write(doc, args)
    first = view(doc)["first_bad"]
    if first is None:
        print("profopt: bisect: the ends did not differ beyond τ — no commit to name", file=sys.stderr)
    else:
        delta = first["effect"]["delta_pct"]
        effect = first["effect"]["verdict"] if delta is None else f"{delta:+.1f}%"
        print(f"profopt: bisect: first bad commit {first['commit'][:12]} {first['subject']!r} "
              f"({first['benchmark']}: {effect}) after {len(doc.probes)} probe(s), {doc.seconds:.0f} s",
              file=sys.stderr)
    return EXIT_OK


def write(doc, args: argparse.Namespace) -> None:
    """The bisect@1 (the frozen Struct run_bisect built) and its Markdown."""
    from profopt_ci.documents.read import view
    from profopt_ci.documents.results import save_json
    from profopt_ci.report.bisect_md import render_bisect

    out = Path(args.out) if args.out else output_dir() / "bisect.json"
    report = Path(args.report) if args.report else output_dir() / "bisect.md"
    save_json(doc, out)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render_bisect(view(doc), args.lang), encoding="utf-8")
    print(f"profopt: written: {out}, {report}", file=sys.stderr)
