"""`profopt site`: a static site of the stored nightly baselines.

In: `--store dir:PATH|git:BRANCH` (default git:profopt-data on origin), `--label L` (repeatable;
default every label), `--out DIR` (default .profopt/site), `--base-url URL` (where it is served),
`--repo-url URL` (commit and pull request links; default from GITHUB_SERVER_URL and
GITHUB_REPOSITORY, else the `origin` remote when it is a GitHub URL), `--lang en|zh`. Out: the
site (site/build.py) and one line saying what was written; exit 0, or 2 for a bad store or flag.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from profopt_ci.cli.options import LANGS
from profopt_ci.errors import EXIT_OK, UsageError
from profopt_ci.machine_label import resolve as resolve_label

STORE_HELP = "dir:PATH or git:BRANCH (default: git:profopt-data on origin)"
_REMOTE = re.compile(r"^(?:https://|git@)(?P<host>github\.com)[/:](?P<path>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")
_URL = re.compile(r"^https?://[^\s\"'<>]+$")


def register(sub) -> None:
    p = sub.add_parser("site", help="a static site of the stored nightly baselines (index, a page per benchmark)")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--label", action="append", metavar="L", type=resolve_label,
                   help="only this hardware label (repeatable; default: all; auto: this machine's)")
    p.add_argument("--out", default=".profopt/site", help="the site's folder (default: .profopt/site)")
    p.add_argument("--base-url", metavar="URL", help="where the site is served, e.g. https://octo.github.io/bench/")
    p.add_argument("--repo-url", metavar="URL",
                   help="the repository, for commit links (default: GITHUB_SERVER_URL/GITHUB_REPOSITORY, else origin)")
    p.add_argument("--lang", choices=LANGS, default="en", help="the pages' language (default: en)")
    p.set_defaults(func=command)


def check_url(flag: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _URL.match(value):
        raise UsageError(f"{flag} {value!r}: expected an http(s) URL")
    return value.rstrip("/")


def repo_url(flag: str | None, repo: Path | None) -> str | None:
    if flag:
        return check_url("--repo-url", flag)
    server, name = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    if server and name:
        return check_url("GITHUB_SERVER_URL", f"{server.rstrip('/')}/{name}")
    if repo is None:
        return None
    from profopt_ci.gitutil import git

    m = _REMOTE.match(git(["remote", "get-url", "origin"], repo, check=False))
    return f"https://{m['host']}/{m['path']}" if m else None


def command(args: argparse.Namespace) -> int:
    from profopt_ci.gitutil import toplevel
    from profopt_ci.site.build import build_site
    from profopt_ci.store.stores import open_store

    repo = toplevel(Path.cwd())
    store = open_store(args.store, repo, push=False)
    out = Path(args.out)
    built = build_site(store, out, labels=args.label, lang=args.lang, base_url=check_url("--base-url", args.base_url),
                       repo_url=repo_url(args.repo_url, repo))
    print(f"profopt: site of {built.nightlies} nightlies, {built.benchmarks} benchmark page(s) on {built.labels} "
          f"label(s) in {out}/: {built.written} file(s) written, {built.unchanged} unchanged, {built.removed} removed "
          f"({built.read} stored run(s) read, {built.seconds:.1f} s)", file=sys.stderr)
    return EXIT_OK
