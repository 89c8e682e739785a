"""Git plumbing: commits, refs, merge-bases and worktrees, all through the `git` command."""
from __future__ import annotations

import subprocess
from pathlib import Path

from profopt_ci.errors import InfraError, UsageError


def git(args: list[str], cwd: Path, *, check: bool = True) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InfraError("git is not installed — profopt needs git on PATH") from None
    if check and proc.returncode != 0:
        raise GitError(args, proc.stderr.strip() or proc.stdout.strip())
    return proc.stdout.strip()


class GitError(UsageError):
    def __init__(self, args: list[str], stderr: str) -> None:
        self.git_args = args
        self.stderr = stderr
        super().__init__(f"git {' '.join(args)} failed: {stderr}")


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
    dirty = bool(git(["status", "--porcelain", "--untracked-files=no"], cwd, check=False))
    return sha, dirty
