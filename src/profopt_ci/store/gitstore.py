"""A store on a git branch (`--store git:BRANCH`, default `profopt-data` on `origin`).

In: the repository and the data branch. Out: the `Store` protocol of `layout`, plus `fetch`, `sync`
(push what the remote lacks) and `read_tip`. The git store never touches the user's checkout, index
or branches: it fetches the data branch into `refs/remotes/<remote>/<branch>`, reads blobs with
`git ls-tree`/`git cat-file`, and writes a commit with plumbing (`hash-object`, a temporary index,
`commit-tree`) that it pushes. A push refused because someone else pushed first is retried on the
new tip (our commit only adds a file, so it always applies), a bounded number of times.
"""
from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from profopt_ci.errors import InfraError, UsageError
from profopt_ci.gitutil import run_git
from profopt_ci.store.layout import (
    DEFAULT_REMOTE,
    PUSH_ATTEMPTS,
    Warn,
    label_dir,
    retoken,
    stderr_warn,
)

# Commits on the data branch are the tool's, whoever runs it; a runner often has no git identity.
_IDENT = {"GIT_AUTHOR_NAME": "profopt", "GIT_AUTHOR_EMAIL": "profopt@users.noreply.github.com",
          "GIT_COMMITTER_NAME": "profopt", "GIT_COMMITTER_EMAIL": "profopt@users.noreply.github.com"}


@dataclass
class GitStore:
    """The data branch `branch` of `remote`, read and written through the object store only.

    Writes go to the local branch `refs/heads/<branch>` first (a ref, not a checkout), then `sync`
    pushes what the remote lacks. With `push=False` (a benchmark container without credentials)
    the local branch keeps the new run until `profopt baseline push` syncs it from the host.
    """

    repo: Path
    branch: str = "profopt-data"
    remote: str = DEFAULT_REMOTE
    log: Warn = stderr_warn
    push: bool = True
    before_push: Callable[[int], None] | None = None   # a hook for tests that force a push race
    _tip: str | None = None
    _fetched: bool = False

    @property
    def remote_ref(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def local_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def describe(self) -> str:
        return f"git:{self.branch} on {self.remote}"

    def _rev(self, ref: str) -> str | None:
        proc = run_git(cwd=self.repo, args=["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
        return proc.stdout.decode().strip() or None

    def fetch(self, *, required: bool = True) -> str | None:
        """The remote branch's tip after a fetch; None while it does not exist yet.

        Not `required` (reading, or writing without a push): a remote that cannot be reached
        leaves the last fetched copy in use, with a warning.
        """
        if run_git(cwd=self.repo, args=["remote", "get-url", self.remote], check=False).returncode != 0:
            if not required and (self._rev(self.local_ref) or self._rev(self.remote_ref)):
                self.log(f"no remote `{self.remote}` in {self.repo}: using the local copy of {self.branch}")
                self._tip, self._fetched = self._rev(self.remote_ref), True
                return self._tip
            raise UsageError(f"the git store needs a remote `{self.remote}` in {self.repo} — add one, "
                             "or use --store dir:PATH")
        proc = run_git(cwd=self.repo, args=["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", self.remote,
                                f"+{self.local_ref}:{self.remote_ref}"], check=False)
        err = proc.stderr.decode(errors="replace").strip()
        if proc.returncode != 0:
            if "ouldn't find remote ref" in err or "ould not find remote ref" in err:
                run_git(cwd=self.repo, args=["update-ref", "-d", self.remote_ref], check=False)
                self._tip = None
            elif required:
                raise InfraError(f"cannot fetch {self.branch} from {self.remote}: {err}")
            else:
                self.log(f"cannot fetch {self.branch} from {self.remote} ({err.splitlines()[-1] if err else 'error'}); "
                         "using the copy fetched before")
                self._tip = self._rev(self.remote_ref)
        else:
            self._tip = self._rev(self.remote_ref)
        self._fetched = True
        return self._tip

    def read_tip(self) -> str | None:
        """What readers see: the remote tip, or the local branch when it holds unpushed runs on top."""
        remote = self._tip if self._fetched else self.fetch(required=False)
        local = self._rev(self.local_ref)
        if local and (remote is None or self._is_ancestor(remote, local)):
            return local
        return remote

    def _is_ancestor(self, a: str, b: str) -> bool:
        return run_git(cwd=self.repo, args=["merge-base", "--is-ancestor", a, b], check=False).returncode == 0

    def paths(self, label: str | None) -> list[str]:
        tip = self.read_tip()
        if tip is None:
            return []
        args = ["ls-tree", "-r", "-z", "--name-only", tip]
        if label is not None:
            args += ["--", label_dir(label) + "/"]
        out = run_git(cwd=self.repo, args=args).stdout.decode(errors="replace")
        return [p for p in out.split("\0") if p]

    def read(self, paths: list[str]) -> dict[str, bytes | None]:
        tip = self.read_tip()
        if tip is None or not paths:
            return {p: None for p in paths}
        query = "".join(f"{tip}:{p}\n" for p in paths).encode()
        raw = run_git(cwd=self.repo, args=["cat-file", "--batch"], input=query).stdout
        out: dict[str, bytes | None] = {}
        pos = 0
        for p in paths:
            nl = raw.index(b"\n", pos)
            header = raw[pos:nl].split()
            pos = nl + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                out[p] = raw[pos:pos + size]
                pos += size + 1
            else:
                out[p] = None
        return out

    def _not_checked_out(self) -> None:
        head = run_git(cwd=self.repo, args=["symbolic-ref", "-q", "HEAD"], check=False).stdout.decode().strip()
        if head == self.local_ref:
            raise UsageError(f"{self.repo} has the data branch {self.branch} checked out: profopt moves that branch "
                             "as it stores runs — switch to another branch first, or use a separate clone")

    def write(self, path: str, data: bytes, message: str) -> str:
        self._not_checked_out()
        blob = run_git(cwd=self.repo, args=["hash-object", "-w", "--stdin"], input=data).stdout.decode().strip()
        tip = self.fetch(required=self.push)
        pending = self._pending(tip)
        while path in pending or (tip and self._exists(tip, path)):
            path = retoken(path)
        pending[path] = blob
        commit = self._commit(tip, pending, message)
        run_git(cwd=self.repo, args=["update-ref", self.local_ref, commit])
        if self.push:
            self.sync(message)
        return path

    def sync(self, message: str = "profopt baselines") -> int:
        """Push the runs the remote lacks; a push refused by a race is rebuilt on the new tip.

        Returns how many files were pushed (0 when the remote already had everything).
        """
        self._not_checked_out()
        for attempt in range(PUSH_ATTEMPTS):
            tip = self.fetch()
            pending = self._pending(tip)
            if not pending:
                return 0
            commit = self._commit(tip, pending, message)
            run_git(cwd=self.repo, args=["update-ref", self.local_ref, commit])
            if self.before_push is not None:
                self.before_push(attempt)
            pushed, why = self._push(commit)
            if pushed:
                run_git(cwd=self.repo, args=["update-ref", self.remote_ref, commit], check=False)
                self._tip = commit
                return len(pending)
            if attempt + 1 == PUSH_ATTEMPTS:
                break
            self.log(f"push to {self.branch} refused ({why}); fetching and retrying ({attempt + 2}/{PUSH_ATTEMPTS})")
            time.sleep(min(0.1 * 2 ** attempt, 3.0) * (0.5 + random.random()))
        raise InfraError(f"cannot push to {self.branch} on {self.remote} after {PUSH_ATTEMPTS} attempts "
                         f"(others kept pushing first); the runs are kept in the local branch {self.branch}: "
                         "run `profopt baseline push` to try again")

    def _pending(self, tip: str | None) -> dict[str, str]:
        """path → blob of files added by local-branch commits that `tip` does not contain."""
        local = self._rev(self.local_ref)
        if local is None or (tip is not None and self._is_ancestor(local, tip)):
            return {}
        span = [local, "--not", tip] if tip else [local]
        names = run_git(cwd=self.repo, args=["log", "--format=", "--name-only", "--no-renames", "--diff-filter=A", "-z", *span])
        paths = sorted({p.strip() for p in names.stdout.decode(errors="replace").split("\0") if p.strip()})
        if not paths:
            return {}
        listing = run_git(cwd=self.repo, args=["ls-tree", "-z", local, "--", *paths]).stdout.decode(errors="replace")
        out = {}
        for row in listing.split("\0"):
            meta, _, p = row.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and not (tip and self._exists(tip, p)):
                out[p] = parts[2]
        return out

    def _exists(self, commit: str, path: str) -> bool:
        return run_git(cwd=self.repo, args=["cat-file", "-e", f"{commit}:{path}"], check=False).returncode == 0

    def _commit(self, parent: str | None, files: dict[str, str], message: str) -> str:
        with tempfile.TemporaryDirectory(prefix="profopt-store-") as tmp:
            env = {**_IDENT, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
            run_git(cwd=self.repo, args=["read-tree", parent] if parent else ["read-tree", "--empty"], env=env)
            info = "".join(f"100644 {blob}\t{p}\n" for p, blob in files.items()).encode()
            run_git(cwd=self.repo, args=["update-index", "--add", "--index-info"], input=info, env=env)
            tree = run_git(cwd=self.repo, args=["write-tree"], env=env).stdout.decode().strip()
            if len(files) > 1:
                message = f"profopt: {len(files)} baselines"
            args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
            return run_git(cwd=self.repo, args=args, env=env).stdout.decode().strip()

    def _push(self, commit: str) -> tuple[bool, str]:
        proc = run_git(cwd=self.repo, args=["push", "--porcelain", self.remote, f"{commit}:{self.local_ref}"], check=False)
        if proc.returncode == 0:
            return True, ""
        text = (proc.stdout + proc.stderr).decode(errors="replace")
        retryable = ("[rejected]", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref",
                     "incorrect old value", "stale info")
        if any(word in text for word in retryable):
            line = next((ln for ln in text.splitlines() if "rejected" in ln or "lock" in ln), text.strip())
            return False, line.strip()
        raise InfraError(f"cannot push to {self.branch} on {self.remote}: {text.strip()}")


