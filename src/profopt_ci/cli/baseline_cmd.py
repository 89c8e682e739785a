"""`profopt baseline refresh|list|show|push`: the stored nightly baselines.

In: the action and its flags (`--store dir:PATH|git:BRANCH`, default git:profopt-data on origin).
Out: refresh measures the current tree and stores its summary (exit as `run`); list and show print
stored runs (show --json: the stored baseline@1 document); push sends runs a `refresh --no-push`
left in the local data branch. Exit 0, 2 for a bad store or id, 3 when git or a benchmark failed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from profopt_ci.cli.options import SPEC_HELP, Parser, instrument_flag, load, plan, positive
from profopt_ci.documents.types import json_default
from profopt_ci.errors import EXIT_OK, UsageError
from profopt_ci.machine_label import resolve as resolve_label

STORE_HELP = "dir:PATH or git:BRANCH (default: git:profopt-data on origin)"


def register(sub) -> None:
    b = sub.add_parser("baseline", help="stored nightly baselines: refresh, list, show, push")
    bsub = b.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)

    r = bsub.add_parser("refresh", help="run the spec on the current tree and store its summary")
    r.add_argument("--spec", help=SPEC_HELP)
    r.add_argument("--store", help=STORE_HELP)
    r.add_argument("--only", action="append", metavar="NAME", help="refresh only this benchmark (repeatable)")
    r.add_argument("--rounds", type=positive, help="rounds (default: the spec's)")
    r.add_argument("--out", help="also keep the full results@1 here")
    r.add_argument("--allow-dirty", action="store_true", help="store a tree with uncommitted changes")
    r.add_argument("--no-push", action="store_true",
                   help="git store: commit to the local data branch only (push later with `baseline push`)")
    r.add_argument("--bisect", action="store_true",
                   help="then bisect each new change point of the label's history that spans more than one commit; "
                        "writes .profopt/bisect/*.json (profopt/bisect@1) for `baseline issues`")
    instrument_flag(r)
    r.set_defaults(func=_refresh)

    iss = bsub.add_parser("issues", help="one GitHub issue per change point `refresh --bisect` found; closed when reverted")
    iss.add_argument("--spec", help=SPEC_HELP)
    iss.add_argument("--store", help=STORE_HELP)
    iss.add_argument("--from", dest="source", default=".profopt/bisect", metavar="DIR",
                     help="the bisect@1 files `refresh --bisect` wrote (default: .profopt/bisect)")
    iss.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    iss.add_argument("--api-url", help="REST API root (default: GITHUB_API_URL or https://api.github.com)")
    iss.add_argument("--lang", choices=("en", "zh"), default="en", help="the issues' language (default: en)")
    iss.set_defaults(func=_issues)

    ls = bsub.add_parser("list", help="stored runs, newest first per label")
    ls.add_argument("--store", help=STORE_HELP)
    ls.add_argument("--label", type=resolve_label, help="only this hardware label (auto: this machine's)")
    ls.add_argument("--limit", type=int, default=20, help="runs per label (default 20; 0: all)")
    ls.set_defaults(func=_list)

    sh = bsub.add_parser("show", help="one stored run: by id, or the newest for a label at or before a commit")
    sh.add_argument("id", nargs="?", help="a run id from `baseline list`")
    sh.add_argument("--store", help=STORE_HELP)
    sh.add_argument("--label", type=resolve_label, help="hardware label (default: the spec's; auto: this machine's)")
    sh.add_argument("--spec", help="spec whose hardware_label to use (default: ./profopt.yml)")
    sh.add_argument("--at", metavar="REF", help="newest at or before this commit (default: HEAD)")
    sh.add_argument("--json", action="store_true", help="print the stored document")
    sh.set_defaults(func=_show)

    pu = bsub.add_parser("push", help="git store: push runs left in the local data branch by refresh --no-push")
    pu.add_argument("--store", help=STORE_HELP)
    pu.set_defaults(func=_push)


def _refresh(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.stored import refresh

    the_plan = plan(load(args.spec), args)
    code, _ = refresh(the_plan, store=args.store, only=args.only,
                               out=Path(args.out) if args.out else None, allow_dirty=args.allow_dirty,
                               push=not args.no_push)
    if args.bisect:
        from profopt_ci.gitutil import toplevel
        from profopt_ci.pipeline.nightly import bisect_new

        bisect_new(the_plan, store=args.store, repo=toplevel(the_plan.spec.path.resolve().parent),
                   tau=the_plan.spec.benchmarks[0].settings.threshold, push=not args.no_push)
    return code


def _issues(args: argparse.Namespace) -> int:
    from profopt_ci.pipeline.nightly import GitHubTarget, run_issues

    the_plan = plan(load(args.spec), args)
    return run_issues(the_plan, store=args.store, source=Path(args.source),
                      github=GitHubTarget(repo=args.repo, api_url=args.api_url), lang=args.lang)


def _push(args: argparse.Namespace) -> int:
    from profopt_ci.store import stored_baselines

    n = stored_baselines.push(args.store, Path.cwd())
    print(f"profopt: pushed {n} stored run(s)" if n else "profopt: nothing to push", file=sys.stderr)
    return EXIT_OK


def _open(args: argparse.Namespace):
    """(the store, the repository it is read for: None outside a git checkout)."""
    from profopt_ci.gitutil import toplevel
    from profopt_ci.store.stores import open_store

    repo = toplevel(Path.cwd())
    return open_store(args.store, repo), repo


def _list(args: argparse.Namespace) -> int:
    from profopt_ci.store import stored_baselines

    store, _ = _open(args)
    lines = stored_baselines.list_lines(store, label=args.label, limit=args.limit)
    print("\n".join(lines) if len(lines) > 1 else f"{store.describe()}: no stored baselines"
          + (f" for label {args.label}" if args.label else ""))
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from profopt_ci.store import stored_baselines

    store, repo = _open(args)
    label = args.label
    if label is None and not args.id:
        try:  # the spec's label, when there is a spec to read it from
            label = plan(load(args.spec), args).hardware_label
        except UsageError:
            label = None
    path, doc = stored_baselines.pick(store, repo, ident=args.id, label=label, at=args.at)
    if args.json:
        print(json.dumps(doc, indent=2, default=json_default))
    else:
        print("\n".join(stored_baselines.show_lines(store, path, doc)))
    return EXIT_OK
