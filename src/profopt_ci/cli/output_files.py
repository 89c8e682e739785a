"""Where compare, diff and demo put a comparison, and what they say about it on stderr.

In: a finished comparison@1, the frozen Struct the pipeline built (`policy` included)
and the verb's output flags (`--out --report --html --lang --template --fail-on`). Out:
comparison.json, report.md and report.html written (by default under ./.profopt/, which ignores
itself in git), a failed benchmark's cause and the terminal view printed, and the exit code the
verdict maps to (0 / 1 policy / 3 failed).
"""
from __future__ import annotations

import argparse
import gc
import shutil
import sys
from pathlib import Path

from profopt_ci.cli.options import lang_flag
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, EXIT_POLICY, cause_lines

OUTPUT_DIR = ".profopt"  # where compare/diff write what no flag names; ignored by its own .gitignore


def output_flags(p: argparse.ArgumentParser, default_out: str) -> None:
    p.add_argument("--out", help=f"comparison file (default: .profopt/{default_out})")
    p.add_argument("--report", help="the Markdown report (default: .profopt/report.md)")
    p.add_argument("--html", help="the self-contained HTML report (default: .profopt/report.html)")
    lang_flag(p)
    p.add_argument("--template", help="a jinja2 template for the Markdown report instead of the packaged one")
    p.add_argument("--fail-on", choices=("regression", "constraint", "none"), default="regression",
                   help="what makes the exit code 1 (default: regression)")
    site_url_flag(p)


def site_url_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--site-url", metavar="URL",
                   help="where `profopt site` publishes the nightly history: each benchmark links to its page there")


def site_url(args: argparse.Namespace) -> str | None:
    """--site-url, checked: an http(s) URL with no spaces, quotes or angle brackets."""
    from profopt_ci.cli.site_cmd import check_url

    return check_url("--site-url", getattr(args, "site_url", None))


def output_paths(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """(comparison, report.md, report.html): each flag's path, else under ./.profopt/."""
    default = Path(OUTPUT_DIR)
    return (Path(args.out) if args.out else default / "comparison.json",
            Path(args.report) if args.report else default / "report.md",
            Path(args.html) if args.html else default / "report.html")


def output_dir() -> Path:
    """./.profopt/, made with a .gitignore of `*` so none of it shows up in `git status`."""
    out = Path(OUTPUT_DIR)
    out.mkdir(exist_ok=True)
    ignore = out / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by profopt: outputs of compare/diff, never committed\n*\n", encoding="utf-8")
    return out


def write_outputs(doc: Comparison, args: argparse.Namespace, *, final: bool = True) -> dict:
    """Write the comparison, report.md and report.html; on the final call also say where, show a
    failed benchmark's cause, and on a terminal print the terminal view of the report. Returns the
    comparison as its file reads (documents.read.view), what the reports were made from."""
    from profopt_ci.documents.read import view as read_view
    from profopt_ci.documents.results import save_json_behind
    from profopt_ci.gc_pause import paused
    from profopt_ci.report.render import build_view, render, write_html

    out, report, html = output_paths(args)
    if not (args.out and args.report and args.html):
        output_dir()
    for path in (out, report, html):
        path.parent.mkdir(parents=True, exist_ok=True)
    with paused():
        comparison = read_view(doc)
        gc.freeze()  # the view's entries hold no cycles and live to the end: no collection visits them
    wait = save_json_behind(doc, out)  # a big one is written while the reports render
    try:
        template = Path(args.template) if args.template else None
        view = build_view(comparison, args.lang, site_url(args))  # once: the Markdown, the page and the terminal read it
        md = render(comparison, "md", args.lang, template=template, full_report_hint=f"the full report is in {html}",
                    view=view)
        report.write_text(md, encoding="utf-8")
        write_html(comparison, html, args.lang, view=view)  # streamed: the page is never one string in memory
    finally:
        wait()  # the comparison is on disk whatever the reports did
    if not final:
        return comparison
    _say_where(out, report, html)
    print_failures(comparison)
    if sys.stdout.isatty():
        sys.stdout.write(render(comparison, "text", args.lang, cols=shutil.get_terminal_size().columns, view=view))
    return comparison


def _say_where(out: Path, report: Path, html: Path) -> None:
    where = out.parent if out.parent == report.parent == html.parent else None
    if where is not None:
        print(f"profopt: {out.name}, {report.name} and {html.name} written to {where}/", file=sys.stderr)
    else:
        print(f"profopt: written: {out}, {report}, {html}", file=sys.stderr)


def print_failures(comparison: dict, lines: int = 8) -> None:
    """The last lines of each failed benchmark's error, where the cause (the exception) is."""
    for b in comparison.get("benchmarks") or []:
        error = b.get("error") or {}
        if b.get("decision") != "failed" or not error.get("message"):
            continue
        tail = cause_lines(error["message"], lines)
        print(f"profopt: {b.get('name')} failed on {error.get('side', '?')}:", file=sys.stderr)
        for ln in tail:
            print(f"profopt:   {ln}", file=sys.stderr)


def verdict_exit(doc: Comparison) -> int:
    """3 when a benchmark failed, 1 when its `policy` names a benchmark that broke it and the pull
    request does not carry the accept label, else 0."""
    if doc.counts.failed:  # type: ignore[union-attr]
        return EXIT_INFRA
    if doc.policy and doc.policy.failing and doc.policy.accepted is not True:
        return EXIT_POLICY
    return EXIT_OK


RETAINED: list[object] | None = None  # a list once cli.command_line.program runs profopt as a program


def retain(document: object) -> None:
    """Leave a big document for the process's exit to reclaim, when profopt runs as a program
    (cli.command_line.program): freeing a large comparison's objects one by one is time
    spent after the verdict is known. Called in-process (tests, `main(argv)`), it keeps nothing."""
    if RETAINED is not None:
        RETAINED.append(document)


def finish(doc: Comparison, args: argparse.Namespace) -> int:
    """The end of compare and diff: the three files, one summary line; the exit code."""
    code = verdict_exit(doc)
    comparison = write_outputs(doc, args)
    print(f"profopt: {doc.decision} — {doc.summary}", file=sys.stderr)
    if doc.policy and doc.policy.accepted is True:
        print(f"profopt: the policy (--fail-on {doc.policy.fail_on}) fails on {', '.join(doc.policy.failing)}, "
              f"accepted: the pull request carries the label {doc.policy.label}", file=sys.stderr)
    retain((doc, comparison))
    return code
