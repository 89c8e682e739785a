"""`profopt publish`: the sticky PR comment, the job summary and the step outputs.

In: `--report` (Markdown), `--comparison`, `--repo --pr --api-url --label`, or `--from-artifact DIR`
(a fork PR's untrusted report, posted from a workflow_run). Out: what publish/comment.py posts and
writes; its exit code (the token comes from the environment, never from a flag).
"""
from __future__ import annotations

import argparse

from profopt_ci.machine_label import resolve as resolve_label


def register(sub) -> None:
    pub = sub.add_parser("publish", help="sticky PR comment, job summary, step outputs")
    pub.add_argument("--report", help="the Markdown report to post")
    pub.add_argument("--comparison", help="comparison.json, for outputs and annotations")
    pub.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    pub.add_argument("--pr", help="pull request number (default: from GITHUB_EVENT_PATH)")
    pub.add_argument("--api-url", help="REST API root (default: GITHUB_API_URL or https://api.github.com)")
    pub.add_argument("--label", type=resolve_label,
                     help="keeps one comment per label, e.g. a hardware label (auto: this machine's)")
    pub.add_argument("--from-artifact", metavar="DIR",
                     help="post a report left by a fork PR's run (workflow_run); DIR is untrusted")
    pub.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.publish.comment import run_publish
    from profopt_ci.report.render import shrink

    return run_publish(args.report, args.comparison, from_artifact=args.from_artifact, repo=args.repo,
                       pr=args.pr, api_url=args.api_url, label=args.label, shrink=shrink)
