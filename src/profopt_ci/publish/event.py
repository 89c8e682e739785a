"""The GitHub event that triggered the job: the one reader of `$GITHUB_EVENT_PATH`.

In: the environment (its `GITHUB_EVENT_PATH`). Out: the event as a dict, `{}` when there is none,
and what profopt takes from it: the pull request (its number, head commit, base branch and base
commit, its labels), the event's action (`labeled`, `synchronize`…) or, for a `workflow_run` job,
the run's head commit and PR.

The caller says what an unreadable file means (`strict`): `profopt publish` takes the PR number from
the event, so a file it cannot read is a usage error; the action only uses the event to pick the
base branch, so an unreadable one means "no PR context", exactly like an absent one.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from profopt_ci.errors import UsageError

EVENT_CAP = 25 * 1024 * 1024  # GitHub's own payload limit: a bigger file is not an event


def read_event(environ: Mapping[str, str], *, strict: bool) -> dict[str, Any]:
    """The event payload; `{}` without one. An unreadable or malformed file: UsageError if `strict`,
    else `{}`. A missing file is `{}` either way (a local run that exported a stale path)."""
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(EVENT_CAP))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        if strict:
            raise UsageError(f"cannot read GITHUB_EVENT_PATH: {exc}") from None
        return {}
    return data if isinstance(data, dict) else {}


def pull_request(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event's `pull_request` object (pull_request, pull_request_target…), else `{}`."""
    pr = event.get("pull_request")
    return pr if isinstance(pr, dict) else {}


def pull_request_number(event: Mapping[str, Any]) -> int | None:
    number = pull_request(event).get("number")
    return number if isinstance(number, int) else None


def pull_request_base(event: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(base branch, base commit at event time) of the event's pull request."""
    base = pull_request(event).get("base")
    if not isinstance(base, dict):
        return None, None
    ref, sha = base.get("ref"), base.get("sha")
    return (ref if isinstance(ref, str) and ref else None), (sha if isinstance(sha, str) and sha else None)


def pull_request_labels(event: Mapping[str, Any]) -> list[str]:
    """The names of the pull request's labels. For a `labeled` / `unlabeled` event the payload's list
    is already the one after the event, so it is read the same way for every action."""
    labels = pull_request(event).get("labels")
    if not isinstance(labels, list):
        return []
    return [x["name"] for x in labels if isinstance(x, dict) and isinstance(x.get("name"), str)]


def event_action(event: Mapping[str, Any]) -> str | None:
    """What happened to the pull request (`opened`, `synchronize`, `labeled`…), else None."""
    action = event.get("action")
    return action if isinstance(action, str) and action else None


def pr_and_head(event: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """(PR number, trusted head commit) for publishing: from a pull_request event, a comment on a PR,
    or a workflow_run (whose PR list is empty for a fork: the artifact then names the PR)."""
    pr = event.get("pull_request")
    if isinstance(pr, dict):  # pull_request, pull_request_target, pull_request_review…
        return pr.get("number"), (pr.get("head") or {}).get("sha")
    issue = event.get("issue")
    if isinstance(issue, dict) and isinstance(issue.get("pull_request"), dict):  # comment on a PR
        return issue.get("number"), None
    run = event.get("workflow_run")
    if isinstance(run, dict):
        prs = [p for p in run.get("pull_requests") or [] if isinstance(p, dict)]
        return (prs[0].get("number") if len(prs) == 1 else None), run.get("head_sha")
    return None, None
