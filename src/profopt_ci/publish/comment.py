"""The publish stage: one sticky PR comment, the job summary, step outputs and annotations.

Flow of `publish`: summary, outputs and annotations first (local files, always useful), then the
comment. The comment is found by a hidden marker on its first line AND by its author being the
token's own identity, so a comment someone else wrote with our marker is never touched. With a
read-only token (a fork PR) the POST gets 403 and publish falls back to a directory meant for an
artifact; a `workflow_run` job then runs `profopt publish --from-artifact DIR`, which treats that
directory as untrusted data.

In: report.md (and comparison.json), or a fork's artifact directory, and the job's environment.
Out: the comment posted or updated (or the fork fallback written), summary, outputs, annotations;
a result dict. Errors are raised (token masked) for the CLI's boundary: `run_publish` is no
boundary of its own.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from profopt_ci.errors import InfraError, ProfoptError, UsageError
from profopt_ci.publish.artifact import (
    SHA_RE,
    check_label,
    parse_pr_number,
    read_comment_artifact,
    write_comment_artifact,
)
from profopt_ci.publish.event import pr_and_head, read_event
from profopt_ci.publish.rest import (
    BOT_LOGIN,
    DEFAULT_API_URL,
    AmbiguousWrite,
    BodyTooLong,
    GitHubClient,
    NotFound,
    PermissionDenied,
    check_repo,
)
from profopt_ci.publish.step_outputs import (
    annotations,
    append_summary,
    truncate_markdown,
    write_output_values,
    write_outputs,
)

__all__ = [
    "PublishSettings", "settings_from_env", "publish", "publish_from_artifact", "run_publish",
    "write_outputs", "append_summary", "annotations", "truncate_markdown", "marker_for",
    "read_comment_artifact", "write_comment_artifact",
]

DEFAULT_BODY_CHARS = 65_000  # GitHub's limit less a margin for how it counts characters


def marker_for(label: str | None = None) -> str:
    """The hidden first line of our comment: `<!-- profopt:comment -->`, or `<!-- profopt:LABEL -->`
    so jobs with different labels (a GPU and a CPU job) keep separate comments."""
    key = check_label(label) if label else "comment"
    return f"<!-- profopt:{key} -->"


@dataclass
class PublishSettings:
    api_url: str = DEFAULT_API_URL
    repo: str | None = None  # "owner/name"
    pr_number: int | None = None
    token: str | None = field(default=None, repr=False)
    head_sha: str | None = None  # trusted head commit (pull_request or workflow_run event)
    label: str | None = None  # marker key: profopt:<label>
    author: str | None = None  # the comment author to match; default: the token's own login
    summary_path: Path | None = None  # $GITHUB_STEP_SUMMARY
    output_path: Path | None = None  # $GITHUB_OUTPUT
    artifact_dir: Path = Path("profopt-comment")  # the fork fallback writes here
    run_url: str | None = None  # where the full report lives, for the truncation note
    in_actions: bool = False
    max_wait_s: float = 300.0
    max_body_chars: int = DEFAULT_BODY_CHARS
    timeout_s: float = 30.0

    @property
    def marker(self) -> str:
        return marker_for(self.label)


def settings_from_env(environ: Mapping[str, str], *, repo: str | None = None, pr: object = None,
                      api_url: str | None = None, token: str | None = None, label: str | None = None,
                      author: str | None = None, artifact_dir: str | Path | None = None,
                      max_wait_s: float | None = None) -> PublishSettings:
    """Settings from the Actions environment; flags given here win over the environment."""
    ev_pr, ev_sha = pr_and_head(read_event(environ, strict=True))
    pr_value = pr if pr not in (None, "") else ev_pr
    repo = repo or environ.get("GITHUB_REPOSITORY") or None
    server, run_id = environ.get("GITHUB_SERVER_URL", "https://github.com"), environ.get("GITHUB_RUN_ID")
    label = label or environ.get("PROFOPT_COMMENT_LABEL") or None
    settings = PublishSettings(
        api_url=(api_url or environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        repo=check_repo(repo) if repo else None,
        pr_number=parse_pr_number(pr_value) if pr_value not in (None, "") else None,
        token=token or environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN") or None,
        head_sha=ev_sha if isinstance(ev_sha, str) and SHA_RE.fullmatch(ev_sha) else None,
        label=check_label(label) if label else None,
        author=author or environ.get("PROFOPT_COMMENT_AUTHOR") or None,
        summary_path=Path(environ["GITHUB_STEP_SUMMARY"]) if environ.get("GITHUB_STEP_SUMMARY") else None,
        output_path=Path(environ["GITHUB_OUTPUT"]) if environ.get("GITHUB_OUTPUT") else None,
        run_url=f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}" if repo and run_id else None,
        in_actions=environ.get("GITHUB_ACTIONS") == "true",
    )
    if artifact_dir:
        settings.artifact_dir = Path(artifact_dir)
    if max_wait_s is not None:
        settings.max_wait_s = max_wait_s
    return settings


def _require(settings: PublishSettings) -> tuple[str, int, str]:
    missing = [what for what, ok in (("repository (GITHUB_REPOSITORY or --repo)", settings.repo),
                                     ("PR number (a pull_request event or --pr)", settings.pr_number),
                                     ("token (GITHUB_TOKEN)", settings.token)) if not ok]
    if missing:
        raise UsageError("cannot post the PR comment: missing " + ", ".join(missing))
    return settings.repo, settings.pr_number, settings.token  # type: ignore[return-value]


class _Printer:
    """Every line profopt prints here passes through the token filter."""

    def __init__(self, out: IO[str] | None, secret: str | None) -> None:
        # Resolved per call, not at import, so a replaced sys.stdout (tests, the CLI) is honoured.
        self.out = out if out is not None else sys.stdout
        self.secret = secret if secret and len(secret) >= 8 else None

    def __call__(self, line: str) -> None:
        if self.secret:
            line = line.replace(self.secret, "***")
        self.out.write(line + "\n")
        self.out.flush()


# ---- the sticky comment ------------------------------------------------------------------------
def _is_ours(comment: Mapping[str, Any], marker: str, author: str) -> bool:
    body = comment.get("body") or ""
    login = str((comment.get("user") or {}).get("login") or "")
    return login.lower() == author.lower() and body.lstrip().startswith(marker)


def _find_ours(client: GitHubClient, repo: str, pr: int, marker: str, author: str) -> list[dict]:
    try:
        comments = client.list_issue_comments(repo, pr)
    except NotFound:
        raise UsageError(f"{repo} PR #{pr}: not found, or the token cannot see it") from None
    except PermissionDenied as exc:
        raise UsageError(f"the token cannot read comments on {repo} PR #{pr}: {exc}") from None
    return sorted((c for c in comments if _is_ours(c, marker, author)), key=lambda c: int(c["id"]))


def _delete(client: GitHubClient, repo: str, comments: list[dict]) -> list[int]:
    gone = []
    for c in comments:
        try:
            client.delete_issue_comment(repo, c["id"])
        except NotFound:
            pass  # a racing run deleted it first
        except PermissionDenied:
            continue  # leave it: the comment we keep is already written
        gone.append(int(c["id"]))
    return gone


def upsert_comment(client: GitHubClient, repo: str, pr: int, body: str, marker: str, author: str,
                   *, rounds: int = 5) -> tuple[dict[str, Any], str, list[int]]:
    """Create or update our one comment. Returns (comment, "created"|"updated", deleted ids)."""
    for attempt in range(1, rounds + 1):
        # Re-list right before every create: the window in which another run can create the
        # comment unseen shrinks from "since the job started" to one POST round trip. A lost or
        # 5xx POST (AmbiguousWrite) may have created it, and this list finds it then.
        ours = _find_ours(client, repo, pr, marker, author)
        if ours:
            try:
                updated = client.update_issue_comment(repo, ours[0]["id"], body)
            except NotFound:
                continue  # deleted under us: look again
            return updated, "updated", _delete(client, repo, ours[1:])
        try:
            created = client.create_issue_comment(repo, pr, body)
        except AmbiguousWrite as exc:
            client.wait(client.backoff_delay(attempt), str(exc))
            continue
        # Two runs can still both pass the list above and both create. Converge: list again and
        # keep the oldest of ours. Each run deletes its own comment when it is not the oldest, and
        # the oldest is never deleted (every run lists after its own POST, so sees it), so the
        # runs end with exactly one comment, carrying the body of the last writer.
        ours = _find_ours(client, repo, pr, marker, author)
        if ours and int(ours[0]["id"]) != int(created["id"]):
            kept = client.update_issue_comment(repo, ours[0]["id"], body)
            return kept, "updated", _delete(client, repo, ours[1:])
        return created, "created", _delete(client, repo, ours[1:])
    raise ProfoptError(f"could not create or update the comment on {repo} PR #{pr} "
                       f"after {rounds} rounds")


def _fit(report_md: str, marker: str, limit: int, shrink: Callable[[str, int], str]) -> tuple[str, bool]:
    room = max(limit - len(marker) - 1, 0)
    text = report_md if len(report_md) <= room else shrink(report_md, room)
    if len(text) > room:  # a shrink that overshot: cut it ourselves
        text = truncate_markdown(text, room)
    return f"{marker}\n{text}", text != report_md


def post_report(client: GitHubClient, settings: PublishSettings, report_md: str,
                shrink: Callable[[str, int], str]) -> dict[str, Any]:
    repo, pr, _ = _require(settings)
    author = settings.author or client.authenticated_login() or BOT_LOGIN
    limit, truncated = settings.max_body_chars, False
    for _ in range(6):
        body, truncated = _fit(report_md, settings.marker, limit, shrink)
        try:
            comment, action, deleted = upsert_comment(client, repo, pr, body, settings.marker, author)
        except BodyTooLong as exc:
            # The server counts differently than we do (GHES, UTF-16): shrink below what it said.
            limit = min(int(exc.max_chars * 0.95) if exc.max_chars else limit, int(len(body) * 0.8))
            continue
        return {"action": action, "comment_id": comment.get("id"), "url": comment.get("html_url"),
                "repo": repo, "pr_number": pr, "marker": settings.marker, "author": author,
                "truncated": truncated, "body_chars": len(body), "deleted_duplicates": deleted}
    raise ProfoptError("GitHub kept refusing the comment as too long, even after shrinking it")


def _client(settings: PublishSettings, sleep: Callable[[float], None], clock: Callable[[], float]) -> GitHubClient:
    return GitHubClient(settings.api_url, settings.token or "", sleep=sleep, clock=clock,
                        max_wait_s=settings.max_wait_s, timeout_s=settings.timeout_s)


def _announce(say: _Printer, settings: PublishSettings, result: dict[str, Any]) -> None:
    if result.get("url"):
        say(f"profopt: {result['action']} comment on {result['repo']} PR #{result['pr_number']}: "
            f"{result['url']}")
    if result.get("deleted_duplicates"):
        say(f"profopt: removed duplicate comments left by racing runs: {result['deleted_duplicates']}")
    if settings.output_path:
        write_output_values(settings.output_path, {
            "publish_action": result["action"], "comment_id": str(result.get("comment_id") or ""),
            "comment_url": str(result.get("url") or ""),
            "artifact_dir": str(result.get("artifact_dir") or "")})


def publish(report_md: str, comparison: Mapping[str, Any] | None, settings: PublishSettings, *,
            shrink: Callable[[str, int], str] | None = None, out: IO[str] | None = None,
            report_path: str | None = None, sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """Job summary, step outputs, annotations, then the sticky comment (or the fork fallback)."""
    say = _Printer(out, settings.token)
    if settings.in_actions and settings.token:
        say.out.write(f"::add-mask::{settings.token}\n")  # the runner hides it from the log from now on
    shrink = shrink or functools.partial(truncate_markdown, full_report_url=settings.run_url)
    result: dict[str, Any] = {"action": None, "comment_id": None, "url": None, "artifact_dir": None,
                              "summary_bytes": 0}
    if settings.summary_path:
        result["summary_bytes"] = append_summary(report_md, settings.summary_path, shrink=shrink)
    if settings.output_path:
        write_outputs(comparison, report_path, settings.output_path)
    if comparison is not None and settings.in_actions:
        for line in annotations(comparison):
            say(line)
    repo, pr, _ = _require(settings)
    with _client(settings, sleep, clock) as client:
        try:
            result.update(post_report(client, settings, report_md, shrink))
        except PermissionDenied as exc:
            # A fork PR's token can read but not write. Leave everything for a trusted job.
            folder = write_comment_artifact(settings.artifact_dir, report_md, pr, head_sha=settings.head_sha,
                                            label=settings.label, comparison=comparison)
            result.update(action="fallback", repo=repo, pr_number=pr, artifact_dir=str(folder),
                          reason=str(exc))
            say(f"::warning title=profopt::The token cannot comment on PR #{pr} (a fork PR?). The "
                f"report is in the job summary; upload {folder} as an artifact and post it from a "
                f"workflow_run job with `profopt publish --from-artifact DIR`.")
    _announce(say, settings, result)
    return result


def publish_from_artifact(directory: Path, settings: PublishSettings, *,
                          shrink: Callable[[str, int], str] | None = None, out: IO[str] | None = None,
                          sleep: Callable[[float], None] = time.sleep,
                          clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """Post the comment a fork PR's run left in `directory` (from a trusted workflow_run job)."""
    say = _Printer(out, settings.token)
    if settings.in_actions and settings.token:
        say.out.write(f"::add-mask::{settings.token}\n")
    art = read_comment_artifact(Path(directory))
    if settings.pr_number is not None and settings.pr_number != art.pr_number:
        raise UsageError(f"the artifact names PR #{art.pr_number} but the triggering run belongs to "
                         f"PR #{settings.pr_number}")
    if art.comparison is None:
        raise UsageError("the artifact has no comparison.json: the posting job re-renders the report from it "
                         "and never posts the fork's own Markdown (run the fork's publish with --comparison)")
    if art.label and art.label != settings.label:
        say(f"profopt: ignoring the artifact's label {art.label!r}; the label comes from this workflow (--label)")
    settings = dataclasses.replace(settings, pr_number=art.pr_number)  # the label: the trusted job's own
    repo, pr, _ = _require(settings)
    shrink = shrink or functools.partial(truncate_markdown, full_report_url=settings.run_url)
    with _client(settings, sleep, clock) as client:
        if settings.head_sha:
            # A fork controls the artifact, so it could name any PR. The workflow_run event (trusted)
            # says which commit was built: post only where that commit is the PR's head.
            try:
                head = (client.get_pull(repo, pr).get("head") or {}).get("sha")
            except NotFound:
                raise UsageError(f"{repo} PR #{pr} named by the artifact does not exist") from None
            if head != settings.head_sha:
                say(f"::warning title=profopt::PR #{pr}'s head is not the commit this run built "
                    f"({settings.head_sha[:12]}); not posting (stale run or a mislabelled artifact).")
                result = {"action": "skipped", "repo": repo, "pr_number": pr, "comment_id": None,
                          "url": None}
                _announce(say, settings, result)
                return result
        else:
            say("profopt: no trusted head commit (not a workflow_run event); PR number checked by format only")
        try:
            result = post_report(client, settings, render_untrusted(art.comparison), shrink)
        except PermissionDenied as exc:
            raise InfraError(f"{exc} (the posting job needs `permissions: pull-requests: write`)") from None
    result["report_capped"] = art.report_capped
    _announce(say, settings, result)
    return result


def render_untrusted(comparison: Mapping[str, Any], lang: str = "en") -> str:
    """The report of a fork's comparison, rendered here with the normal escaping (names, notes and
    error tails cannot mention, link, open HTML or add a marker). Any line that would still start a
    workflow command (`::`) is indented so no runner reads it as one."""
    from profopt_ci.report.render import render

    md = render(dict(comparison), "md", lang)
    return "\n".join(" " + ln if ln.lstrip().startswith("::") else ln for ln in md.split("\n"))


# ---- the CLI's entry point -----------------------------------------------------------------------
def _read_report(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read report {path}: {exc}") from None


def _read_comparison(path: str | Path) -> dict[str, Any]:
    from profopt_ci.documents.comparison import load_comparison

    return load_comparison(path)  # schema key and JSON Schema checked; errors name the file and field


def run_publish(report_path: str | Path | None, comparison_path: str | Path | None = None, *,
                from_artifact: str | Path | None = None, repo: str | None = None, pr: object = None,
                api_url: str | None = None, token: str | None = None, label: str | None = None,
                environ: Mapping[str, str] = os.environ, out: IO[str] | None = None,
                shrink: Callable[[str, int], str] | None = None,
                sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                max_wait_s: float | None = None) -> int:
    """`profopt publish`: returns 0 when done (posted, updated, fork fallback or skipped); raises
    UsageError (2: missing repo/PR/token, bad files, a bad artifact) or ProfoptError (3: GitHub
    unreachable or failing after retries) for the CLI's boundary, its message free of the token."""
    secret = token or environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN")
    try:
        settings = settings_from_env(environ, repo=repo, pr=pr, api_url=api_url, token=token,
                                     label=label, max_wait_s=max_wait_s)
        if from_artifact is not None:
            publish_from_artifact(Path(from_artifact), settings, shrink=shrink, out=out,
                                  sleep=sleep, clock=clock)
            return 0
        if report_path is None:
            raise UsageError("publish needs --report FILE (or --from-artifact DIR)")
        report_md = _read_report(report_path)
        comparison = _read_comparison(comparison_path) if comparison_path else None
        publish(report_md, comparison, settings, shrink=shrink, out=out, report_path=str(report_path),
                sleep=sleep, clock=clock)
        return 0
    except ProfoptError as exc:
        # Not a boundary: the error goes on to the CLI's, with any echo of the token masked first.
        masked = _mask(str(exc), secret)
        if masked != str(exc):
            raise ProfoptError(masked, exit_code=exc.exit_code) from None
        raise


def _mask(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret and len(secret) >= 8 else text
