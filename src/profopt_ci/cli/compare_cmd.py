"""`profopt compare`: base vs head of the current repository, measured now (or head vs a stored
baseline), judged, reported.

In: the spec and refs (`--base --head`), measurement overrides (`--rounds --max-rounds --threshold
--pairing --cpuset --instrument`), `--workdir --phase` (setup and measure as two steps),
`--accept-label` (read against the event GITHUB_EVENT_PATH names; a label event reuses the kept
comparison: pipeline/reuse.py),
`--baseline rerun|stored|both` with its store flags, and the output flags. Out: comparison.json,
report.md and report.html (cli/output_files.py; partial ones while it runs) and the verdict's exit code.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from profopt_ci.action.inputs import DEFAULT_ACCEPT_LABEL, label_name
from profopt_ci.cli.options import SPEC_HELP, instrument_flag, load, plan, positive, suite_flag
from profopt_ci.cli.output_files import finish, output_dir, output_flags, output_paths, write_outputs
from profopt_ci.errors import EXIT_OK, UsageError
from profopt_ci.specfile.plan import Plan


def register(sub) -> None:
    c = sub.add_parser("compare", help="base vs head, interleaved, in git worktrees")
    c.add_argument("--spec", help=SPEC_HELP)
    suite_flag(c)
    c.add_argument("--base", help="base ref (default: merge-base of HEAD with origin/HEAD, origin/main, main, master)")
    c.add_argument("--head", help="head ref (default: HEAD)")
    c.add_argument("--rounds", type=positive, help="rounds before the first look (default: the spec's)")
    c.add_argument("--max-rounds", type=positive, help="extend up to this many rounds while inconclusive")
    c.add_argument("--threshold", help="smallest change that counts, e.g. 3%%")
    c.add_argument("--pairing", choices=("lockstep", "rounds"),
                   help="lockstep (default): both sides' workers live, pinned to one CPU set, value by value; "
                        "rounds: one fresh process per side per round")
    c.add_argument("--cpuset", metavar="CPUS", help="lockstep: pin both sides to these CPUs, e.g. 3 or 2-3 "
                                                    "(default: the spec's cpuset, else one CPU per thread)")
    c.add_argument("--workdir", help="keep worktrees and venvs here (default: a temporary directory, removed)")
    c.add_argument("--profile-dir",
                   help="where profiler traces go (default: .profopt/profiles, or profopt-profiles/ beside --out)")
    c.add_argument("--phase", choices=("all", "setup", "measure"), default="all",
                   help="setup: prepare both sides and stop; measure: measure sides prepared in --workdir")
    c.add_argument("--confirm", action="store_true",
                   help="measure flagged (regressed or improved) benchmarks again in an independent run; a verdict "
                        "holds only when both agree, else it is inconclusive (the spec's `confirm: true`)")
    c.add_argument("--measure", choices=("changed", "all"),
                   help="changed (default): measure only the benchmarks whose code the change reaches (each recorded "
                        "once on the base: the code it runs, the files it reads); all: every benchmark (the spec's "
                        "`defaults: {measure: …}`)")
    c.add_argument("--time-budget", metavar="DURATION", type=_duration,
                   help="the wall time the compare may take, e.g. 25s, 10m, 1h: rounds ordered and sized to fit, "
                        "what is still undecided then is inconclusive, the outputs written in time (the spec's "
                        "`defaults: {time_budget: …}`)")
    c.add_argument("--accept-label", metavar="NAME", default=DEFAULT_ACCEPT_LABEL,
                   help="a pull request carrying this label passes a failing policy (--fail-on), said in the "
                        "headline; read from the event GITHUB_EVENT_PATH names. A labeled or unlabeled event "
                        "reuses the kept comparison of the same commits instead of measuring again "
                        "(default: profopt-accept)")
    instrument_flag(c)
    output_flags(c, "comparison.json")
    _baseline_flags(c)
    c.set_defaults(func=command)


def _baseline_flags(c: argparse.ArgumentParser) -> None:
    c.add_argument("--baseline", choices=("rerun", "stored", "both"), default="rerun",
                   help="rerun: measure base and head now (default); stored: head now vs the newest stored "
                        "baseline at or before the base; both: rerun, and check the base against its nightly history")
    c.add_argument("--store", metavar="dir:PATH|git:BRANCH", help="baseline store (default: git:profopt-data on origin)")
    c.add_argument("--allow-env-mismatch", action="store_true",
                   help="compare with a stored baseline measured in a materially different environment")
    c.add_argument("--history", type=int, default=30, metavar="N",
                   help="nightly runs shown in the trend and searched for change points (default 30; 0: none)")


def command(args: argparse.Namespace) -> int:
    from profopt_ci.measure.rounds import stderr_log
    from profopt_ci.pipeline.compare_refs import CompareOptions, run_compare
    from profopt_ci.pipeline.reuse import keep, labels_of, measured_of, reused
    from profopt_ci.pipeline.stored import Nightly

    the_plan = plan(load(args.spec, args.suite), args)
    workdir = Path(args.workdir) if args.workdir else None
    labels = labels_of(os.environ, label_name(args.accept_label, "--accept-label"))
    if args.baseline == "stored":
        return _compare_stored(the_plan, args, workdir, labels.accept)
    measured = measured_of(the_plan, args.measure, args.time_budget, args.baseline == "both")
    kept = reused(the_plan, refs=(args.base, args.head), labels=labels, fail_on=args.fail_on, measured=measured,
                  log=stderr_log)
    if kept is not None:
        if args.phase == "setup":
            print("profopt: nothing to set up: --phase measure reuses the kept comparison", file=sys.stderr)
            return EXIT_OK
        return finish(kept, args)

    def partial(doc) -> None:
        write_outputs(doc, args, final=False)

    nightly = (Nightly(store=args.store, allow_env_mismatch=args.allow_env_mismatch, history_n=args.history)
               if args.baseline == "both" else None)
    options = CompareOptions(base_ref=args.base, head_ref=args.head, workdir=workdir, phase=args.phase,
                             trace_dir=_trace_dir(args), store=args.store, fail_on=args.fail_on,
                             nightly=nightly, measure=args.measure, time_budget=args.time_budget, labels=labels)
    comparison = run_compare(the_plan, options, on_partial=partial)
    if comparison is None:
        print(f"profopt: both sides prepared in {workdir}; run again with --phase measure", file=sys.stderr)
        return EXIT_OK
    code = finish(comparison, args)
    keep(comparison, the_plan, measured)  # after the outputs: for a later label event (pipeline/reuse.py)
    return code


def _duration(text: str) -> float:
    from profopt_ci.specfile.model import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _trace_dir(args: argparse.Namespace) -> Path:
    """--profile-dir, else profopt-profiles/ beside --out, else .profopt/profiles."""
    if args.profile_dir:
        return Path(args.profile_dir)
    if args.out:
        return output_paths(args)[0].resolve().parent / "profopt-profiles"
    return output_dir().resolve() / "profiles"


def _compare_stored(the_plan: Plan, args: argparse.Namespace, workdir: Path | None, accept: str | None) -> int:
    """`--baseline stored`: head measured now against the newest stored baseline at or before the base."""
    from profopt_ci.pipeline.stored import Nightly, compare_stored

    if args.phase != "all":
        raise UsageError("--phase works with --baseline rerun or both; stored measures head only, in one go")
    baseline = Nightly(store=args.store, allow_env_mismatch=args.allow_env_mismatch, history_n=args.history)
    comparison = compare_stored(the_plan, baseline=baseline, refs=(args.base, args.head), workdir=workdir,
                                fail_on=args.fail_on, accept=accept)
    return finish(comparison, args)
