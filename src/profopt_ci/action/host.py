"""What runs on the job's runner after measuring, where the token is: the report, publishing, the push.

In: the settings, the job's environment (the token, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, the event)
and the `Outcome` of the runs. Out: with an infrastructure cause, `.profopt/report.md` built anew
from the comparison with the cause first (in the report's language); then `profopt publish` (sticky
comment, summary, outputs) or, without a PR or with `comment: false`, the summary and step outputs
only; in baseline mode, the data branch pushed.
"""
from __future__ import annotations

import base64
import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from profopt_ci.action.inputs import ActionSettings
from profopt_ci.action.outcome import Cause, Outcome, failure_note, say
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, InfraError
from profopt_ci.gitutil import git
from profopt_ci.publish.event import pull_request_number, read_event
from profopt_ci.publish.step_outputs import append_summary, write_output_values, write_outputs


def finish_report(s: ActionSettings, outcome: Outcome) -> tuple[Path | None, Path | None]:
    """(report, comparison) to publish. With an infrastructure cause the report is built anew: the
    failure note first, then what the comparison holds of what was measured, within the comment's
    limit — or the note alone where no comparison was written (or it cannot be read)."""
    report, comparison = s.workdir / "report.md", s.workdir / "comparison.json"
    have_report = report.is_file()
    if not have_report and outcome.exit_code != EXIT_OK and not outcome.cause:
        # compare stopped before writing a report (a spec or usage error): say so rather than leave
        # an earlier run's comment standing.
        outcome.cause = Cause("action.cause.no_report", {"code": outcome.exit_code})
    if outcome.cause:
        report.write_text(_failed_report(s, outcome.cause, comparison), encoding="utf-8")
        have_report = True
    return (report if have_report else None), (comparison if comparison.is_file() else None)


def _failed_report(s: ActionSettings, cause: Cause | str, comparison: Path) -> str:
    if comparison.is_file():
        from profopt_ci.errors import UsageError
        from profopt_ci.report.render import load_comparison, render

        try:
            doc = load_comparison(comparison)
        except (UsageError, OSError, ValueError):
            pass  # a comparison cut short when its run was killed: the note alone
        else:
            return render(doc, "md", s.lang, site_url=s.site_url, preface=failure_note(cause, s.lang, partial=True),
                          full_report_hint=f"the full report is in {s.workdir / 'report.html'}")
    return failure_note(cause, s.lang, partial=False)


def _publish_cmd(s: ActionSettings, report: Path, comparison: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "profopt_ci.cli.command_line", "publish", "--report", str(report)]
    if comparison is not None:
        cmd += ["--comparison", str(comparison)]
    if s.hardware_label:  # one comment per hardware label: a GPU and a CPU job keep their own
        cmd += ["--label", s.hardware_label]
    return cmd


def _summary_only(s: ActionSettings, environ: Mapping[str, str], report: Path, comparison: Path | None,
                  log: Callable[[str], None]) -> None:
    if environ.get("GITHUB_STEP_SUMMARY"):
        append_summary(report.read_text(encoding="utf-8"), environ["GITHUB_STEP_SUMMARY"])
    if environ.get("GITHUB_OUTPUT"):
        data = json.loads(comparison.read_text(encoding="utf-8")) if comparison is not None else None
        write_outputs(data, str(report), environ["GITHUB_OUTPUT"])
    why = "comment: false" if not s.comment else "no pull request to comment on"
    where = "the job summary" if environ.get("GITHUB_STEP_SUMMARY") else str(report)
    log(f"profopt: report in {where} ({why})")


def publish(s: ActionSettings, environ: Mapping[str, str], report: Path | None, comparison: Path | None,
            outcome: Outcome, log: Callable[[str], None] = say) -> int:
    """The host side: `profopt publish` with the token (never seen by the container); without a PR
    or with comment off, only the job summary and the step outputs. Returns publish's exit code."""
    code = EXIT_OK
    pr = pull_request_number(read_event(environ, strict=False))
    if report is not None and s.comment and pr is not None:
        cmd = _publish_cmd(s, report, comparison)
        log(f"profopt: publishing from the runner: {shlex.join(cmd)}")
        code = subprocess.run(cmd, cwd=s.workspace, env=dict(environ), check=False).returncode
        if code != 0:
            log(f"::warning title=profopt::publishing the report failed (exit {code})")
    elif report is not None:
        _summary_only(s, environ, report, comparison, log)
    if environ.get("GITHUB_OUTPUT"):
        values = {"results_path": str(comparison) if comparison is not None else ""}
        if comparison is None:
            values["decision"] = "failed" if outcome.exit_code == EXIT_INFRA else ""
        write_output_values(environ["GITHUB_OUTPUT"], values)
    return code


def _git_auth_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The job's environment with the token as git's HTTP header for the server (never in a URL or
    the repository's config), for fetching and pushing the data branch from the host."""
    token = environ.get("GITHUB_TOKEN")
    if not token:
        return dict(environ)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    server = environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    return dict(environ, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"http.{server}/.extraheader",
                GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}", GIT_TERMINAL_PROMPT="0")


def push_store(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> None:
    """Baseline mode with a git store: push the data branch from the host, where the token is."""
    kind, _, branch = s.store.partition(":")
    token = environ.get("GITHUB_TOKEN")
    if kind != "git" or not token:
        return
    if not git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], s.workspace, check=False):
        log(f"profopt: no local branch {branch} after the refresh; nothing to push")
        return
    env = _git_auth_env(environ)
    # `baseline push` rebuilds on the new tip and retries when a concurrent nightly pushed first.
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "baseline", "push", "--store", s.store],
                          cwd=s.workspace, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InfraError(f"pushing the baseline store branch {branch} failed: {proc.stderr.strip()[-500:]}")
    log(f"profopt: pushed {branch}")


def change_point_issues(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> None:
    """Mode baseline with `bisect: true`: the change points the refresh bisected become issues, from the
    host (the token never entered the container); the culprits go to the job summary."""
    cmd = [sys.executable, "-m", "profopt_ci.cli.command_line", "baseline", "issues", "--spec", s.spec, "--store", s.store,
           "--from", str(s.workdir / "bisect"), "--lang", s.lang]
    log(f"profopt: change point issues from the runner: {shlex.join(cmd)}")
    code = subprocess.run(cmd, cwd=s.workspace, env=dict(environ), check=False).returncode
    if code != 0:
        log(f"::warning title=profopt::the change point issues could not be updated (exit {code})")


SITE_DIR = "site"


def build_site(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> int:
    """Modes site, and baseline with `pages: true`: `profopt site` of the store into .profopt/site on
    the host (a git store is fetched with the token as a header); its folder is the `site_path` output,
    for actions/upload-pages-artifact. Returns the command's exit code."""
    out = s.workdir / SITE_DIR
    cmd = [sys.executable, "-m", "profopt_ci.cli.command_line", "site", "--store", s.store, "--out", str(out),
           "--lang", s.lang]
    if s.site_url:
        cmd += ["--base-url", s.site_url]
    log(f"profopt: building the site from the runner: {shlex.join(cmd)}")
    code = subprocess.run(cmd, cwd=s.workspace, env=_git_auth_env(environ), check=False).returncode
    if code != 0:
        log(f"::error title=profopt::building the site failed (exit {code})")
    elif environ.get("GITHUB_OUTPUT"):
        write_output_values(environ["GITHUB_OUTPUT"], {"site_path": str(out)})
    return code
