"""Git plumbing: the one wrapper around the `git` command, and the queries built on it.

In: git arguments and a directory (bytes in/out for the object store, text for everything else).
Out: git's output, or a `GitError` (exit 3: the infrastructure failed). Callers that know a failure
is the user's (a ref that does not resolve, a shallow clone) catch it and say so as a usage error.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from profopt_ci.errors import InfraError


class GitError(InfraError):
    def __init__(self, args: list[str], stderr: str, cwd: Path | None = None) -> None:
        self.git_args = args
        self.stderr = stderr
        where = f" in {cwd}" if cwd is not None else ""
        super().__init__(f"git {' '.join(args)} failed{where}: {stderr}")


def run_git(args: list[str], cwd: Path, *, input: bytes | None = None, env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    """git with bytes in and out; never prompts for credentials (a CI job would hang)."""
    full_env = dict(os.environ, GIT_TERMINAL_PROMPT="0", **(env or {}))
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, env=full_env, check=False)
    except FileNotFoundError:
        raise InfraError("git is not installed — profopt needs git on PATH") from None
    if check and proc.returncode != 0:
        err = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        raise GitError(args, err, cwd)
    return proc


def git(args: list[str], cwd: Path, *, check: bool = True) -> str:
    """git's stdout as stripped text."""
    return run_git(args, cwd, check=check).stdout.decode(errors="replace").strip()


def toplevel(cwd: Path) -> Path | None:
    try:
        return Path(git(["rev-parse", "--show-toplevel"], cwd))
    except GitError:
        return None


def commit_info(cwd: Path) -> tuple[str | None, bool]:
    """(commit sha, dirty) of the tree at cwd; (None, False) outside git."""
    if toplevel(cwd) is None:
        return None, False
    try:
        sha = git(["rev-parse", "HEAD"], cwd)
    except GitError:
        return None, False
    return sha, is_dirty(cwd)


def is_dirty(cwd: Path) -> bool:
    """Tracked files changed and not committed (untracked files are not measured either way)."""
    return bool(git(["status", "--porcelain", "--untracked-files=no"], cwd, check=False))


_PR = (re.compile(r"^Merge pull request #(\d+)\b"), re.compile(r"\(#(\d+)\)\s*$"), re.compile(r"(?<![\w/])#(\d+)\b"))


def first_parent_range(repo: Path, good: str, bad: str) -> list[str]:
    """The first-parent commits after `good` up to and including `bad`, oldest first (the bisect range)."""
    out = git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}"], repo)
    return out.split() if out else []


def is_ancestor(repo: Path, a: str, b: str) -> bool:
    return run_git(["merge-base", "--is-ancestor", a, b], repo, check=False).returncode == 0


def describe_commit(repo: Path, sha: str) -> dict:
    """{commit, subject, author_date, pr}: pr is the pull request's number the merge or the message
    names (`Merge pull request #12`, a squash's `(#12)`, else the first `#12`), or None."""
    text = git(["show", "-s", "--format=%H%n%aI%n%s%n%b", sha], repo)
    commit, date, subject, *body = text.split("\n") + ["", "", ""]
    pr = None
    for pattern in _PR:
        for line in [subject, *body]:
            m = pattern.search(line)
            if m:
                pr = int(m.group(1))
                break
        if pr is not None:
            break
    return {"commit": commit, "subject": subject, "author_date": date, "pr": pr}
