"""`profopt` command line: each verb parses its flags and calls the core with plain values.

`main()` is the one error boundary: a `ProfoptError` becomes its message on stderr and its exit code
(design.md); Ctrl-C is exit 130 after the verb's own cleanup ran.
"""
from __future__ import annotations

import argparse
import os
import shutil
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
from profopt_ci.spec.load import Spec, find_spec, load_spec

MAX_PROBLEMS_SHOWN = 50  # a spec with 200k bad entries prints 50 lines and a count, not 74 MB


def _load(path: str | None) -> Spec:
    spec_path = find_spec(path)
    spec = load_spec(spec_path, display=path or spec_path.name)
    if "hardware_label" not in spec.raw:
        print(f"profopt: warning: {path or spec_path.name} sets no hardware_label, so results are labelled "
              "`default`; set one (e.g. cpu-2vcpu) so results from different machines are never compared",
              file=sys.stderr)
    return spec


# ---- verbs --------------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    spec = _load(args.spec)
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


def cmd_run(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.run import run_tree

    spec = _load(args.spec)
    out = Path(args.out)
    if getattr(args, "shard", None):
        return _run_shard(spec, args, out)
    if getattr(args, "store", None):
        raise UsageError("run --store only balances --shard I/N; without --shard there is nothing to balance")
    code, _ = run_tree(_plan(spec, args), spec.path.resolve().parent, only=args.only, out=out)
    print(f"profopt: results written to {out}", file=sys.stderr)
    return code


OUTPUT_DIR = ".profopt"  # where compare/diff write what no flag names; ignored by its own .gitignore


def _output_paths(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """(comparison, report.md, report.html): each flag's path, else under ./.profopt/."""
    default = Path(OUTPUT_DIR)
    return (Path(args.out) if args.out else default / "comparison.json",
            Path(args.report) if args.report else default / "report.md",
            Path(args.html) if args.html else default / "report.html")


def _output_dir() -> Path:
    """./.profopt/, made with a .gitignore of `*` so none of it shows up in `git status`."""
    out = Path(OUTPUT_DIR)
    out.mkdir(exist_ok=True)
    ignore = out / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by profopt: outputs of compare/diff, never committed\n*\n", encoding="utf-8")
    return out


def _write_outputs(comparison: dict, args: argparse.Namespace, *, final: bool = True) -> None:
    """Write the comparison, report.md and report.html; on the final call also say where, show a
    failed benchmark's cause, and on a terminal print the terminal view of the report."""
    from profopt_ci.documents.results import save_json
    from profopt_ci.report.render import render

    out, report, html = _output_paths(args)
    if not (args.out and args.report and args.html):
        _output_dir()
    for path in (out, report, html):
        path.parent.mkdir(parents=True, exist_ok=True)
    save_json(comparison, out)
    template = Path(args.template) if args.template else None
    md = render(comparison, "md", args.lang, template=template, full_report_hint=f"the full report is in {html}")
    report.write_text(md, encoding="utf-8")
    html.write_text(render(comparison, "html", args.lang, max_chars=None), encoding="utf-8")
    if not final:
        return
    where = out.parent if out.parent == report.parent == html.parent else None
    if where is not None:
        print(f"profopt: {out.name}, {report.name} and {html.name} written to {where}/", file=sys.stderr)
    else:
        print(f"profopt: written: {out}, {report}, {html}", file=sys.stderr)
    _print_failures(comparison)
    if sys.stdout.isatty():
        sys.stdout.write(render(comparison, "text", args.lang, cols=shutil.get_terminal_size().columns))


def _print_failures(comparison: dict, lines: int = 8) -> None:
    """The last lines of each failed benchmark's error, where the cause (the exception) is."""
    for b in comparison.get("benchmarks") or []:
        error = b.get("error") or {}
        if b.get("decision") != "failed" or not error.get("message"):
            continue
        tail = [ln for ln in str(error["message"]).rstrip().splitlines() if ln.strip()][-lines:]
        print(f"profopt: {b.get('name')} failed on {error.get('side', '?')}:", file=sys.stderr)
        for ln in tail:
            print(f"profopt:   {ln}", file=sys.stderr)


def _verdict_exit(comparison: dict, fail_on: str) -> int:
    from profopt_ci.analyze.decide import policy_failures

    failing = policy_failures(comparison["benchmarks"], fail_on)
    comparison["policy"] = {"fail_on": fail_on, "failing": failing}
    if comparison["counts"]["failed"]:
        return EXIT_INFRA
    return EXIT_POLICY if failing else EXIT_OK


def _plan(spec: Spec, args: argparse.Namespace):
    """The spec and this command line's overrides, resolved once (plan.py); every stage reads it."""
    from profopt_ci.spec.plan import make_plan, overrides

    ov = overrides(threshold=getattr(args, "threshold", None) or None, rounds=getattr(args, "rounds", None),
                   max_rounds=getattr(args, "max_rounds", None), pairing=getattr(args, "pairing", None),
                   cpus=getattr(args, "cpuset", None) or None, instrument=_instrument(args))
    return make_plan(spec, ov)


def _instrument(args: argparse.Namespace) -> tuple[str, ...] | None:
    """`--instrument walltime|instructions|walltime,instructions`, over the spec's `instrument`."""
    if not getattr(args, "instrument", None):
        return None
    from profopt_ci.spec.load import parse_instrument

    try:
        return parse_instrument([p.strip() for p in args.instrument.split(",") if p.strip()])
    except ValueError as exc:
        raise UsageError(f"--instrument: {exc}") from None


def _instrument_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--instrument", metavar="walltime|instructions|walltime,instructions",
                   help="what to measure, overriding the spec's `instrument` (instructions: Ir per step under valgrind)")


def cmd_compare(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.compare import run_compare

    plan = _plan(_load(args.spec), args)
    workdir = Path(args.workdir) if args.workdir else None
    if getattr(args, "baseline", "rerun") == "stored":
        return _compare_stored(plan, args, workdir)

    def partial(comparison: dict) -> None:
        _verdict_exit(comparison, args.fail_on)
        _write_outputs(comparison, args, final=False)

    out = _output_paths(args)[0]
    trace_dir = Path(args.profile_dir) if args.profile_dir else (
        out.resolve().parent / "profopt-profiles" if args.out else _output_dir().resolve() / "profiles")
    comparison = run_compare(plan, base_ref=args.base, head_ref=args.head, workdir=workdir, phase=args.phase,
                             on_partial=partial, trace_dir=trace_dir)
    if comparison is None:
        print(f"profopt: both sides prepared in {workdir}; run again with --phase measure", file=sys.stderr)
        return EXIT_OK
    if getattr(args, "baseline", "rerun") == "both":
        from profopt_ci.store.baseline import attach_history

        attach_history(comparison, plan.spec, store=args.store, allow_env_mismatch=args.allow_env_mismatch,
                       history_n=args.history)
    code = _verdict_exit(comparison, args.fail_on)
    _write_outputs(comparison, args)
    print(f"profopt: {comparison['decision']} — {comparison['summary']}", file=sys.stderr)
    return code


def cmd_diff(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.diff import run_diff

    base = _load_side(args.base_file)
    head = _load_side(args.head_file)
    spec = _load(args.spec) if args.spec else None
    comparison = run_diff(spec, base, head)
    code = _verdict_exit(comparison, args.fail_on)
    _write_outputs(comparison, args)
    print(f"profopt: {comparison['decision']} — {comparison['summary']}", file=sys.stderr)
    return code


def _load_side(path: str) -> dict:
    """A results@1 file, or a stored baseline (`profopt baseline show --json`) standing in for one."""
    from profopt_ci.store.baseline import load_side

    return load_side(path)


def cmd_publish(args: argparse.Namespace) -> int:
    from profopt_ci.publish.comment import run_publish
    from profopt_ci.report.render import shrink

    return run_publish(args.report, args.comparison, from_artifact=args.from_artifact, repo=args.repo,
                       pr=args.pr, api_url=args.api_url, label=args.label, shrink=shrink)


def cmd_report(args: argparse.Namespace) -> int:
    from profopt_ci.report.render import load_comparison, render

    comparison = load_comparison(args.file)
    template = Path(args.template) if args.template else None
    fmt = args.format or ("text" if not args.out and sys.stdout.isatty() else "md")
    text = render(comparison, fmt, args.lang, template=template, max_chars=65000 if fmt == "md" else None,
                  cols=shutil.get_terminal_size().columns)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


# ---- stored baselines, shards ---------------------------------------------------------------------


def _compare_stored(plan, args: argparse.Namespace, workdir: Path | None) -> int:
    from profopt_ci.pipeline.stored import compare_stored

    if args.phase != "all":
        raise UsageError("--phase works with --baseline rerun or both; stored measures head only, in one go")
    comparison = compare_stored(plan, store=args.store, base_ref=args.base, head_ref=args.head,
                                allow_env_mismatch=args.allow_env_mismatch, history_n=args.history, workdir=workdir)
    code = _verdict_exit(comparison, args.fail_on)
    _write_outputs(comparison, args)
    print(f"profopt: {comparison['decision']} — {comparison['summary']}", file=sys.stderr)
    return code


def _run_shard(spec: Spec, args: argparse.Namespace, out: Path) -> int:
    """`run --shard I/N`: this job's part of the split, recorded in the results for `merge`."""
    from profopt_ci.documents.results import save_json
    from profopt_ci.measure.shard import parse_shard, shard_info
    from profopt_ci.pipeline.run import run_tree

    index, count = parse_shard(args.shard)
    plan = _plan(spec, args)
    names = [b.name for b in spec.select(args.only)]
    costs, cost_commit = ({}, None)
    if args.store:
        from profopt_ci.store.baseline import costs as recorded_costs

        costs, cost_commit = recorded_costs(plan.spec, args.store)
    info = shard_info(names, index, count, costs, cost_commit)
    how = f"by recorded cost (baseline {cost_commit[:12]})" if info["balance"] == "cost" else "by name"
    print(f"profopt: shard {index}/{count} ({how}): {', '.join(info['benchmarks']) or 'no benchmarks'}", file=sys.stderr)
    root = spec.path.resolve().parent
    if info["benchmarks"]:
        code, results = run_tree(plan, root, only=info["benchmarks"], out=out)
    else:
        code, results = EXIT_OK, _empty_results(plan.spec, root)
    results["shard"] = info
    save_json(results, out)
    print(f"profopt: results written to {out}", file=sys.stderr)
    return code


def _empty_results(spec: Spec, root: Path) -> dict:
    from profopt_ci.documents.results import new_results
    from profopt_ci.gitutil import commit_info
    from profopt_ci.measure.processes import Side, fingerprint

    commit, dirty = commit_info(root)
    return new_results(spec, commit=commit, dirty=dirty, fingerprint=fingerprint(Side(name="tree", root=root), spec),
                       rounds=0)


def cmd_merge(args: argparse.Namespace) -> int:
    from profopt_ci.documents.results import save_json
    from profopt_ci.measure.shard import merge

    merged, warnings = merge(args.files)
    for w in warnings:
        print(f"profopt: warning: {w}", file=sys.stderr)
    save_json(merged, args.out)
    print(f"profopt: {len(merged['benchmarks'])} benchmark(s) from {len(args.files)} file(s) written to {args.out}",
          file=sys.stderr)
    failed = [n for n, b in merged["benchmarks"].items() if b.get("status") != "ok"]
    return EXIT_INFRA if failed else EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    from profopt_ci.gitutil import toplevel
    from profopt_ci.store import baseline
    from profopt_ci.store.stores import open_store

    if args.action == "refresh":
        from profopt_ci.pipeline.stored import refresh

        plan = _plan(_load(args.spec), args)
        code, _ = refresh(plan, store=args.store, only=args.only,
                          out=Path(args.out) if args.out else None, allow_dirty=args.allow_dirty,
                          push=not args.no_push)
        return code
    if args.action == "push":
        n = baseline.push(args.store, Path.cwd())
        print(f"profopt: pushed {n} stored run(s)" if n else "profopt: nothing to push", file=sys.stderr)
        return EXIT_OK
    repo = toplevel(Path.cwd())
    store = open_store(args.store, repo)
    label = args.label
    if label is None and args.action == "show" and not args.id:
        try:
            label = _plan(_load(args.spec), args).hardware_label
        except UsageError:
            label = None
    if args.action == "list":
        lines = baseline.list_lines(store, label=label, limit=args.limit)
        print("\n".join(lines) if len(lines) > 1 else f"{store.describe()}: no stored baselines"
              + (f" for label {label}" if label else ""))
        return EXIT_OK
    path, doc = baseline.pick(store, repo, ident=args.id, label=label, at=args.at)
    if args.json:
        import json

        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(baseline.show_lines(store, path, doc)))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from profopt_ci.cli.demo import run_demo
    from profopt_ci.measure.rounds import stderr_log

    out_dir = Path(args.out_dir)
    comparison, report = run_demo(args.example, out_dir=out_dir, keep_repo=args.keep_repo, lang=args.lang,
                                  log=stderr_log)
    if sys.stdout.isatty():
        from profopt_ci.report.render import render

        report = render(comparison, "text", args.lang, cols=shutil.get_terminal_size().columns)
    _print_failures(comparison)
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
        verb = self.prog.partition(" ")[2]  # main() prints the "profopt: " itself
        raise UsageError(f"{verb}: {message}" if verb else message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="profopt", description="Profiling-driven optimization as a CI loop.")
    p.add_argument("--version", action="version", version=f"profopt {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    v = sub.add_parser("validate", help="check a spec, print what is wrong and where")
    v.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    v.add_argument("--no-import", action="store_true",
                   help="only check the spec; do not import each callable in a worker of the spec's environment")
    v.set_defaults(func=cmd_validate)

    r = sub.add_parser("run", help="run the spec on the current tree")
    r.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    r.add_argument("--out", default="results.json", help="results file (default: results.json)")
    r.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)")
    r.add_argument("--rounds", type=_positive, help="rounds (default: the spec's defaults.rounds)")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N (1-based) of the benchmarks; join with merge")
    r.add_argument("--store", metavar="dir:PATH|git:BRANCH",
                   help="with --shard: balance shards by the costs recorded in this baseline store")
    _instrument_flag(r)
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("compare", help="base vs head, interleaved, in git worktrees")
    c.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    c.add_argument("--base", help="base ref (default: merge-base of HEAD with origin/HEAD, origin/main, main, master)")
    c.add_argument("--head", help="head ref (default: HEAD)")
    c.add_argument("--rounds", type=_positive, help="rounds before the first look (default: the spec's)")
    c.add_argument("--max-rounds", type=_positive, help="extend up to this many rounds while inconclusive")
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
    _instrument_flag(c)
    _output_flags(c, "comparison.json")
    _baseline_flags(c)
    c.set_defaults(func=cmd_compare)

    d = sub.add_parser("diff", help="compare two stored results (unpaired)")
    d.add_argument("base_file", metavar="BASE.json")
    d.add_argument("head_file", metavar="HEAD.json")
    d.add_argument("--spec", help="spec for constraints, goals and thresholds (optional)")
    _output_flags(d, "comparison.json")
    d.set_defaults(func=cmd_diff)

    dm = sub.add_parser("demo", help="self-contained quickstart: a throwaway repo, a tuned commit, the report",
                        epilog=_examples_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    dm.add_argument("--example", default="python_func", metavar="NAME",
                    help="which bundled example (default: python_func; the list is below)")
    dm.add_argument("--out-dir", default="profopt-demo", help="where the outputs go (default: ./profopt-demo)")
    dm.add_argument("--keep-repo", action="store_true", help="keep the throwaway repository")
    dm.add_argument("--lang", choices=("en", "zh"), default="en", help="report language (default: en)")
    dm.set_defaults(func=cmd_demo)

    rep = sub.add_parser("report", help="render a comparison")
    rep.add_argument("file", metavar="comparison.json")
    rep.add_argument("--format", choices=("md", "html", "json", "text"),
                     help="md: GitHub Markdown; html: self-contained page; json: the comparison; text: for a "
                          "terminal (default: text on a terminal, else md)")
    rep.add_argument("--lang", choices=("en", "zh"), default="en", help="report language (default: en)")
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

    _baseline_parsers(sub)
    m = sub.add_parser("merge", help="join the results of matrix shards (run --shard I/N)")
    m.add_argument("files", nargs="+", metavar="SHARD.json")
    m.add_argument("--out", default="results.json", help="merged results file (default: results.json)")
    m.set_defaults(func=cmd_merge)
    return p


def _baseline_flags(c: argparse.ArgumentParser) -> None:
    c.add_argument("--baseline", choices=("rerun", "stored", "both"), default="rerun",
                   help="rerun: measure base and head now (default); stored: head now vs the newest stored "
                        "baseline at or before the base; both: rerun, and check the base against its nightly history")
    c.add_argument("--store", metavar="dir:PATH|git:BRANCH", help="baseline store (default: git:profopt-data on origin)")
    c.add_argument("--allow-env-mismatch", action="store_true",
                   help="compare with a stored baseline measured in a materially different environment")
    c.add_argument("--history", type=int, default=30, metavar="N",
                   help="nightly runs shown in the trend and searched for change points (default 30; 0: none)")


def _baseline_parsers(sub) -> None:
    b = sub.add_parser("baseline", help="stored nightly baselines: refresh, list, show, push")
    bsub = b.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser, required=True)
    store_help = "dir:PATH or git:BRANCH (default: git:profopt-data on origin)"

    r = bsub.add_parser("refresh", help="run the spec on the current tree and store its summary")
    r.add_argument("--spec", help="spec file (default: ./profopt.yml)")
    r.add_argument("--store", help=store_help)
    r.add_argument("--only", action="append", metavar="NAME", help="refresh only this benchmark (repeatable)")
    r.add_argument("--rounds", type=_positive, help="rounds (default: the spec's)")
    r.add_argument("--out", help="also keep the full results@1 here")
    r.add_argument("--allow-dirty", action="store_true", help="store a tree with uncommitted changes")
    r.add_argument("--no-push", action="store_true",
                   help="git store: commit to the local data branch only (push later with `baseline push`)")
    _instrument_flag(r)

    ls = bsub.add_parser("list", help="stored runs, newest first per label")
    ls.add_argument("--store", help=store_help)
    ls.add_argument("--label", help="only this hardware label")
    ls.add_argument("--limit", type=int, default=20, help="runs per label (default 20; 0: all)")

    sh = bsub.add_parser("show", help="one stored run: by id, or the newest for a label at or before a commit")
    sh.add_argument("id", nargs="?", help="a run id from `baseline list`")
    sh.add_argument("--store", help=store_help)
    sh.add_argument("--label", help="hardware label (default: the spec's)")
    sh.add_argument("--spec", help="spec whose hardware_label to use (default: ./profopt.yml)")
    sh.add_argument("--at", metavar="REF", help="newest at or before this commit (default: HEAD)")
    sh.add_argument("--json", action="store_true", help="print the stored document")

    pu = bsub.add_parser("push", help="git store: push runs left in the local data branch by refresh --no-push")
    pu.add_argument("--store", help=store_help)
    for q in (r, ls, sh, pu):
        q.set_defaults(func=cmd_baseline)


def _examples_epilog() -> str:
    from profopt_ci.cli.demo import available, describe

    try:
        names = available()
    except UsageError as exc:
        return f"examples: {exc}"
    return "examples:\n" + "\n".join(f"  {n:<16} {describe(n)}" for n in names)


def _output_flags(p: argparse.ArgumentParser, default_out: str) -> None:
    p.add_argument("--out", help=f"comparison file (default: .profopt/{default_out})")
    p.add_argument("--report", help="the Markdown report (default: .profopt/report.md)")
    p.add_argument("--html", help="the self-contained HTML report (default: .profopt/report.html)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="report language (default: en)")
    p.add_argument("--template", help="a jinja2 template for the Markdown report instead of the packaged one")
    p.add_argument("--fail-on", choices=("regression", "constraint", "none"), default="regression",
                   help="what makes the exit code 1 (default: regression)")


def _terminate(signum: int, _frame: object) -> None:
    # A cancelled CI job gets SIGTERM: unwind like Ctrl-C so worktrees are removed and partial
    # results written by the verbs' own finally blocks. From the first signal on, further SIGINT and
    # SIGTERM are ignored: a double Ctrl-C must not cut that cleanup short (kill -9 still works,
    # and workers die with us through PR_SET_PDEATHSIG).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _terminate)
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
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
