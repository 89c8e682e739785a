"""The job's checkout, made ready for the benchmark: refs fixed, outputs cleared, ownership lent.

In: the action's settings (`ActionSettings`: the workspace, the refs, the mode) and the job's
environment (the PR event, for the base branch). Out: the settings with `base`/`head` fixed to
commits; a fresh `.profopt` work directory; the user the benchmark runs as (`Ownership`, undone by
`restore_ownership`); profopt's cache dir in the job (`.profopt/cache`, kept between jobs by
action.yml's actions/cache steps) and what compare reads of the event (`event_for_compare`); and the
`profopt` command lines the runs execute (`compare_argv`, `baseline_argv`). A workspace whose git config holds a token is refused (it would be mounted).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.action.inputs import WORKDIR_NAME, ActionSettings
from profopt_ci.action.outcome import CauseError
from profopt_ci.errors import UsageError
from profopt_ci.measure.checkouts import resolve_commit, resolve_refs
from profopt_ci.publish.event import (
    event_action,
    pull_request_base,
    pull_request_labels,
    pull_request_number,
    read_event,
)

IMAGE_UID = 10001  # the image's `profopt` user (Dockerfile)


def check_no_persisted_token(workspace: Path) -> None:
    """The workspace is mounted into the container: a token actions/checkout left in .git/config
    (its default `persist-credentials: true`) would be handed to the code under test."""
    config = workspace / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if re.search(r"extraheader\s*=\s*AUTHORIZATION", text, re.I) or re.search(r"https://[^/\s]*:[^@\s]+@", text):
        raise UsageError(
            f"{config} holds a credential (actions/checkout persisted the token). The workspace is "
            "mounted into the benchmark container, so profopt refuses to run: set "
            "`persist-credentials: false` on actions/checkout."
        )


def compare_argv(s: ActionSettings, phase: str, root: str) -> list[str]:
    """`profopt compare` as run inside the container (root=/work) or locally (root=the workspace)."""
    work = f"{root}/{WORKDIR_NAME}"
    argv = ["compare", "--spec", s.spec, "--workdir", work, "--phase", phase,
            "--out", f"{work}/comparison.json", "--report", f"{work}/report.md", "--html", f"{work}/report.html",
            "--lang", s.lang, "--fail-on", s.fail_on, "--accept-label", s.accept_label]
    for flag, value in (("--base", s.base), ("--head", s.head), ("--threshold", s.threshold),
                        ("--max-rounds", s.max_rounds), ("--instrument", s.instrument), ("--measure", s.measure),
                        ("--time-budget", s.time_budget)):
        if value is not None:
            argv += [flag, str(value)]
    if s.confirm:
        argv.append("--confirm")
    if s.site_url:
        argv += ["--site-url", s.site_url]
    return argv


def baseline_argv(s: ActionSettings, store: str) -> list[str]:
    """`profopt baseline refresh`; a git store is committed locally (`--no-push`): the host pushes."""
    argv = ["baseline", "refresh", "--spec", s.spec, "--store", store]
    if store.startswith("git:"):
        # The container has no credentials: it commits to the local data branch, and the host pushes.
        argv.append("--no-push")
    if s.instrument:
        argv += ["--instrument", s.instrument]
    if s.bisect:
        argv.append("--bisect")  # .profopt/bisect/*.json, turned into issues on the host
    return argv


def fix_refs(s: ActionSettings, environ: Mapping[str, str]) -> None:
    """Fix base and head to commits on the host, so both containers measure the same two commits.

    pr mode without `base`: the merge-base of the PR's base branch and head (the event's base sha
    is the branch tip at event time, not the fork point). Without PR context the base stays unset
    and compare's own default (the merge-base with the default branch) decides."""
    if s.mode in ("baseline", "site"):
        return
    if s.mode == "compare" and not s.base:
        raise UsageError("mode compare needs `base` (a ref or commit to compare head with)")
    branch, sha = pull_request_base(read_event(environ, strict=False))
    branch = branch or environ.get("GITHUB_BASE_REF") or None
    if not s.base and not branch:
        s.head = resolve_commit(s.workspace, s.head or "HEAD")
        return
    refs = resolve_refs(s.workspace, s.base, s.head, base_branch=branch, base_sha=sha)
    s.base, s.head = refs["base"][1], refs["head"][1]


CACHE_NAME = "cache"  # .profopt/cache: profopt's cache dir in the job (action.yml's actions/cache keeps it)
EVENT_NAME = "event.json"


def cache_dir(s: ActionSettings) -> Path:
    return s.workdir / CACHE_NAME


def event_for_compare(s: ActionSettings, environ: Mapping[str, str]) -> Path | None:
    """What compare reads of the job's event, alone, in .profopt/event.json: the event's action and
    the pull request's number and labels (the accept label; a label event reuses the kept
    comparison). A container sees no more of the payload than that. None outside a pull request."""
    event = read_event(environ, strict=False)
    number = pull_request_number(event)
    if number is None:
        return None
    path = s.workdir / EVENT_NAME
    path.write_text(json.dumps({"action": event_action(event), "pull_request": {
        "number": number, "labels": [{"name": name} for name in pull_request_labels(event)]}}), encoding="utf-8")
    return path


def prepare_workdir(s: ActionSettings) -> None:
    """A fresh .profopt: outputs of an earlier run must never be published as this run's."""
    s.workdir.mkdir(exist_ok=True)
    for name in ("comparison.json", "report.md", "report.html", EVENT_NAME):
        (s.workdir / name).unlink(missing_ok=True)
    for old in (s.workdir / "bisect").glob("*.*"):  # a change point of an earlier night is not tonight's
        old.unlink(missing_ok=True)
    (s.workdir / "logs").mkdir(exist_ok=True)


@dataclass
class Ownership:
    """Who the benchmark runs as, and what we chowned to make that work (undone afterwards)."""

    user: str
    granted: list[Path] = field(default_factory=list)
    restore_to: tuple[int, int] | None = None


def benchmark_user(s: ActionSettings) -> Ownership:
    """The workspace owner's uid:gid when not root, so files in the workspace stay the runner's.

    A root-owned workspace (a runner running as root) gets the image's non-root user instead, and
    only the paths compare writes (.profopt and .git/worktrees) are handed to it for the run."""
    st = s.workspace.stat()
    if st.st_uid != 0:
        return Ownership(user=f"{st.st_uid}:{st.st_gid}")
    if os.geteuid() != 0:
        raise CauseError("action.cause.root_workspace", path=str(s.workspace))
    own = Ownership(user=f"{IMAGE_UID}:{IMAGE_UID}", restore_to=(st.st_uid, st.st_gid))
    worktrees = s.workspace / ".git" / "worktrees"
    targets = [s.workdir]
    if (s.workspace / ".git").is_dir():
        worktrees.mkdir(exist_ok=True)
        targets.append(worktrees)
    for top in targets:
        _chown_tree(top, IMAGE_UID, IMAGE_UID, only_uid=st.st_uid)
        own.granted.append(top)
    return own


def restore_ownership(own: Ownership) -> None:
    """Give what `benchmark_user` lent to the image's user back to the workspace's owner."""
    if own.restore_to is None:
        return
    uid, gid = own.restore_to
    for top in own.granted:
        if top.exists():
            _chown_tree(top, uid, gid, only_uid=IMAGE_UID)


def _chown_tree(top: Path, uid: int, gid: int, *, only_uid: int) -> None:
    paths = [top]
    for root, dirs, files in os.walk(top):
        paths += [Path(root, n) for n in dirs + files]
    for p in paths:
        try:
            if p.lstat().st_uid == only_uid:
                os.lchown(p, uid, gid)
        except FileNotFoundError:
            continue
