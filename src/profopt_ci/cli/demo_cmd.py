"""`profopt demo`: the whole loop on a bundled example, with no GitHub and no Docker.

In: `--example NAME` (a folder of examples/ with a profopt.yml and a `tuned/` overlay), `--out-dir`,
`--keep-repo`, `--lang`. Out: comparison.json, report.md and report.html in `--out-dir`, the report
on stdout; exit 0, or 3 when a benchmark failed.

A throwaway git repository gets the example as its baseline commit and the example's `tuned/`
overlay as a second commit (one variable changed); compare runs base vs head as it would on a pull
request, and the report is printed. The repository stays in a temporary directory, removed unless
`--keep-repo`.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from profopt_ci.cli.options import lang_flag
from profopt_ci.cli.output_files import print_failures
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, UsageError
from profopt_ci.gitutil import run_git

DEFAULT_EXAMPLE = "python_func"
_GIT_ID = {"GIT_AUTHOR_NAME": "profopt demo", "GIT_AUTHOR_EMAIL": "demo@profopt.invalid",
           "GIT_COMMITTER_NAME": "profopt demo", "GIT_COMMITTER_EMAIL": "demo@profopt.invalid"}


def register(sub) -> None:
    dm = sub.add_parser("demo", help="self-contained quickstart: a throwaway repo, a tuned commit, the report",
                        epilog=_examples_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    dm.add_argument("--example", default=DEFAULT_EXAMPLE, metavar="NAME",
                    help=f"which bundled example (default: {DEFAULT_EXAMPLE}; the list is below)")
    dm.add_argument("--out-dir", default="profopt-demo", help="where the outputs go (default: ./profopt-demo)")
    dm.add_argument("--keep-repo", action="store_true", help="keep the throwaway repository")
    lang_flag(dm)
    dm.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.measure.rounds import stderr_log

    out_dir = Path(args.out_dir)
    comparison, report = run_demo(args.example, out_dir=out_dir, keep_repo=args.keep_repo, lang=args.lang,
                                  log=stderr_log)
    if sys.stdout.isatty():
        from profopt_ci.report.render import render

        report = render(comparison, "text", args.lang, cols=shutil.get_terminal_size().columns)
    print_failures(comparison)
    sys.stdout.write(report if report.endswith("\n") else report + "\n")
    print(f"profopt: demo: comparison.json, report.md and report.html are in {out_dir}/", file=sys.stderr)
    return EXIT_INFRA if comparison["counts"]["failed"] else EXIT_OK


def _examples_epilog() -> str:
    try:
        names = available()
    except UsageError as exc:
        return f"examples: {exc}"
    return "examples:\n" + "\n".join(f"  {n:<16} {describe(n)}" for n in names)


def examples_dir() -> Path:
    """examples/ of the source tree profopt runs from (an editable install or a checkout)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "examples"
        if candidate.is_dir() and any(candidate.glob("*/profopt.yml")):
            return candidate
    raise UsageError("profopt demo needs the examples/ directory of a profopt source checkout "
                     "(install with `pip install -e .` from the repository)")


def available() -> list[str]:
    return sorted(p.parent.name for p in examples_dir().glob("*/profopt.yml"))


def describe(example: str) -> str:
    """The first comment line of the example's profopt.yml: what it measures."""
    try:
        lines = (examples_dir() / example / "profopt.yml").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    first = next((ln for ln in lines if ln.startswith("#")), "")
    return first.lstrip("# ").strip()


def _git(repo: Path, *args: str) -> None:
    run_git(list(args), repo, env=_GIT_ID)


def build_repo(example: str, dest: Path) -> Path:
    """A repository whose HEAD~1 is the example and HEAD its tuned variant."""
    src = examples_dir() / example
    if not (src / "profopt.yml").is_file():
        raise UsageError(f"no example `{example}` — expected one of: {', '.join(available())}")
    repo = dest / example
    shutil.copytree(src, repo, ignore=shutil.ignore_patterns("tuned", "__pycache__", "*.pyc"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{example}: baseline")
    tuned = src / "tuned"
    if not tuned.is_dir():
        raise UsageError(f"example `{example}` has no tuned/ variant")
    shutil.copytree(tuned, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{example}: tuned (one variable changed)")
    return repo


def run_demo(example: str, *, out_dir: Path, keep_repo: bool, lang: str,
             log: Callable[[str], None]) -> tuple[dict, str]:
    """Build the repo, compare, write comparison.json / report.md / report.html to out_dir."""
    from profopt_ci.documents.read import view as read_view
    from profopt_ci.documents.results import save_json
    from profopt_ci.pipeline.compare_refs import CompareOptions, run_compare
    from profopt_ci.report.render import build_view, render
    from profopt_ci.specfile.load import load_spec
    from profopt_ci.specfile.plan import make_plan

    work = Path(tempfile.mkdtemp(prefix="profopt-demo-"))
    try:
        repo = build_repo(example, work)
        log(f"profopt: demo: {repo} — baseline and tuned commits of examples/{example}")
        spec = load_spec(repo / "profopt.yml", display=f"examples/{example}/profopt.yml")
        doc = run_compare(make_plan(spec), CompareOptions(base_ref="HEAD~1", head_ref="HEAD"), log=log)
        if doc is None:  # only a setup-only phase returns nothing
            raise UsageError("demo: compare returned no comparison")
        out_dir.mkdir(parents=True, exist_ok=True)
        save_json(doc, out_dir / "comparison.json")
        comparison = read_view(doc)
        html = out_dir / "report.html"
        view = build_view(comparison, lang)  # once, for both reports
        report = render(comparison, "md", lang, full_report_hint=f"the full report is {html}", view=view)
        (out_dir / "report.md").write_text(report, encoding="utf-8")
        html.write_text(render(comparison, "html", lang, max_chars=None, view=view), encoding="utf-8")
        return comparison, report
    finally:
        if keep_repo:
            log(f"profopt: demo: repository kept at {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
