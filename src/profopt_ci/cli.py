"""`profopt` command line: each verb parses its flags and calls the core with plain values.

`main()` is the one error boundary: a `ProfoptError` becomes its message on stderr and its exit code
(design.md); Ctrl-C is exit 130 after the verb's own cleanup ran.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from profopt_ci import __version__
from profopt_ci.errors import (
    EXIT_INFRA,
    EXIT_OK,
    EXIT_POLICY,
    EXIT_USAGE,
    ProfoptError,
    SpecError,
    UsageError,
)
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


def _write_outputs(comparison: dict, args: argparse.Namespace) -> None:
    from profopt_ci.results import save_json

    save_json(comparison, args.out)
    print(f"profopt: comparison written to {args.out}", file=sys.stderr)
    if getattr(args, "report", None) or getattr(args, "html", None):
        from profopt_ci.report import render

        hint = f"the full report is in {args.html or args.out}"
        if args.report:
            template = Path(args.template) if args.template else None
            md = render(comparison, "md", args.lang, template=template, full_report_hint=hint)
            Path(args.report).write_text(md, encoding="utf-8")
            print(f"profopt: report written to {args.report}", file=sys.stderr)
        if args.html:
            Path(args.html).write_text(render(comparison, "html", args.lang, max_chars=None), encoding="utf-8")
            print(f"profopt: HTML report written to {args.html}", file=sys.stderr)


def _verdict_exit(comparison: dict, fail_on: str) -> int:
    from profopt_ci.decide import policy_failures

    failing = policy_failures(comparison["benchmarks"], fail_on)
    comparison["policy"] = {"fail_on": fail_on, "failing": failing}
    if comparison["counts"]["failed"]:
        return EXIT_INFRA
    return EXIT_POLICY if failing else EXIT_OK


def _apply_overrides(spec: Spec, args: argparse.Namespace) -> None:
    from profopt_ci.spec import parse_percent

    for b in spec.benchmarks:
        if getattr(args, "threshold", None):
            try:
                b.settings.threshold_pct = parse_percent(args.threshold)
            except ValueError as exc:
                raise UsageError(f"--threshold: {exc}") from None
        if getattr(args, "max_rounds", None):
            b.settings.max_rounds = max(args.max_rounds, b.settings.rounds)
        if getattr(args, "rounds", None):
            b.settings.rounds = args.rounds
            b.settings.max_rounds = max(b.settings.max_rounds, args.rounds)


def cmd_compare(args: argparse.Namespace) -> int:
    from profopt_ci.compare import run_compare

    spec = _load(args.spec)
    _apply_overrides(spec, args)
    workdir = Path(args.workdir) if args.workdir else None

    def partial(comparison: dict) -> None:
        _verdict_exit(comparison, args.fail_on)
        _write_outputs(comparison, args)

    trace_dir = Path(args.profile_dir) if args.profile_dir else Path(args.out).resolve().parent / "profopt-profiles"
    comparison = run_compare(spec, base_ref=args.base, head_ref=args.head, workdir=workdir, phase=args.phase,
                             on_partial=partial, trace_dir=trace_dir)
    if comparison is None:
        print(f"profopt: both sides prepared in {workdir}; run again with --phase measure", file=sys.stderr)
        return EXIT_OK
    code = _verdict_exit(comparison, args.fail_on)
    _write_outputs(comparison, args)
    print(f"profopt: {comparison['decision']} — {comparison['summary']}", file=sys.stderr)
    return code


def cmd_diff(args: argparse.Namespace) -> int:
    from profopt_ci.compare import run_diff
    from profopt_ci.results import RESULTS_SCHEMA, load_json

    base = load_json(args.base_file, RESULTS_SCHEMA)
    head = load_json(args.head_file, RESULTS_SCHEMA)
    spec = _load(args.spec) if args.spec else None
    comparison = run_diff(spec, base, head)
    code = _verdict_exit(comparison, args.fail_on)
    _write_outputs(comparison, args)
    print(f"profopt: {comparison['decision']} — {comparison['summary']}", file=sys.stderr)
    return code


def cmd_publish(args: argparse.Namespace) -> int:
    from profopt_ci.github import run_publish
    from profopt_ci.report import shrink

    return run_publish(args.report, args.comparison, from_artifact=args.from_artifact, repo=args.repo,
                       pr=args.pr, api_url=args.api_url, label=args.label, shrink=shrink)


def cmd_report(args: argparse.Namespace) -> int:
    from profopt_ci.report import load_comparison, render

    comparison = load_comparison(args.file)
    template = Path(args.template) if args.template else None
    text = render(comparison, args.format, args.lang, template=template,
                  max_chars=65000 if args.format == "md" else None)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from profopt_ci.demo import run_demo
    from profopt_ci.rounds import stderr_log

    out_dir = Path(args.out_dir)
    comparison, report = run_demo(args.example, out_dir=out_dir, keep_repo=args.keep_repo, lang=args.lang,
                                  log=stderr_log)
    sys.stdout.write(report if report.endswith("\n") else report + "\n")
    print(f"profopt demo: comparison.json, report.md and report.html are in {out_dir}/", file=sys.stderr)
    return EXIT_INFRA if comparison["counts"]["failed"] else EXIT_OK


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

    c = sub.add_parser("compare", help="base vs head, interleaved, in git worktrees")
    c.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    c.add_argument("--base", help="base ref (default: merge-base of HEAD with origin/HEAD, origin/main, main, master)")
    c.add_argument("--head", help="head ref (default: HEAD)")
    c.add_argument("--rounds", type=_positive, help="rounds before the first look (default: the spec's)")
    c.add_argument("--max-rounds", type=_positive, help="extend up to this many rounds while inconclusive")
    c.add_argument("--threshold", help="smallest change that counts, e.g. 3%%")
    c.add_argument("--workdir", help="keep worktrees and venvs here (default: a temporary directory, removed)")
    c.add_argument("--profile-dir", help="where profiler traces go (default: profopt-profiles/ beside --out)")
    c.add_argument("--phase", choices=("all", "setup", "measure"), default="all",
                   help="setup: prepare both sides and stop; measure: measure sides prepared in --workdir")
    _output_flags(c, "comparison.json")
    c.set_defaults(func=cmd_compare)

    d = sub.add_parser("diff", help="compare two stored results (unpaired)")
    d.add_argument("base_file", metavar="BASE.json")
    d.add_argument("head_file", metavar="HEAD.json")
    d.add_argument("--spec", help="spec for constraints, goals and thresholds (optional)")
    _output_flags(d, "comparison.json")
    d.set_defaults(func=cmd_diff)

    dm = sub.add_parser("demo", help="self-contained quickstart: a throwaway repo, a tuned commit, the report")
    dm.add_argument("--example", default="python_func", help="which bundled example (default: python_func)")
    dm.add_argument("--out-dir", default="profopt-demo", help="where the outputs go (default: ./profopt-demo)")
    dm.add_argument("--keep-repo", action="store_true", help="keep the throwaway repository")
    dm.add_argument("--lang", choices=("en", "zh"), default="en")
    dm.set_defaults(func=cmd_demo)

    rep = sub.add_parser("report", help="render a comparison")
    rep.add_argument("file", metavar="comparison.json")
    rep.add_argument("--format", choices=("md", "html", "json"), default="md")
    rep.add_argument("--lang", choices=("en", "zh"), default="en")
    rep.add_argument("--template", help="a jinja2 template to use instead of the packaged one")
    rep.add_argument("--out", help="write here instead of stdout")
    rep.set_defaults(func=cmd_report)

    pub = sub.add_parser("publish", help="sticky PR comment, job summary, step outputs")
    pub.add_argument("--report", help="the Markdown report to post")
    pub.add_argument("--comparison", help="comparison.json, for outputs and annotations")
    pub.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    pub.add_argument("--pr", help="pull request number (default: from GITHUB_EVENT_PATH)")
    pub.add_argument("--api-url", help="REST API root (default: GITHUB_API_URL or https://api.github.com)")
    pub.add_argument("--label", help="keeps one comment per label, e.g. a hardware label")
    pub.add_argument("--from-artifact", metavar="DIR",
                     help="post a report left by a fork PR's run (workflow_run); DIR is untrusted")
    pub.set_defaults(func=cmd_publish)
    return p


def _output_flags(p: argparse.ArgumentParser, default_out: str) -> None:
    p.add_argument("--out", default=default_out, help=f"comparison file (default: {default_out})")
    p.add_argument("--report", help="write the Markdown report here")
    p.add_argument("--html", help="write the self-contained HTML report here")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="report language")
    p.add_argument("--template", help="a jinja2 template for the Markdown report instead of the packaged one")
    p.add_argument("--fail-on", choices=("regression", "constraint", "none"), default="regression",
                   help="what makes the exit code 1 (default: regression)")


def _terminate(signum: int, _frame: object) -> None:
    # A cancelled CI job gets SIGTERM: unwind like Ctrl-C so worktrees are removed and partial
    # results written by the verbs' own finally blocks.
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    signal.signal(signal.SIGTERM, _terminate)
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
    except Exception as exc:  # the last resort: a bug of ours still exits 3 with one readable line
        if os.environ.get("PROFOPT_DEBUG"):
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"profopt: internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno}; "
              "set PROFOPT_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        return EXIT_INFRA


if __name__ == "__main__":
    sys.exit(main())
