"""A commit as the tree a side runs: its tracked files, with the head's suite laid over the base's.

In: a repository, a commit, and overlays (a path and the commit whose version of it replaces the
tree's: `benchmarks_from: head` runs the head's suite files in the base's checkout). Out: `Tree` —
each tracked file's blob id, its bytes (read from git's object store: no checkout is needed), the
names in a directory. What reach compares, on both sides and on a record's own tree, without a
worktree: untracked files (a venv, `*.egg-info`, `__pycache__`) are not in it, and a recorded
dependency on one is said as such (reach/record.py).
"""
from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from profopt_ci.gitutil import GitError, run_git


def blob_id(data: bytes) -> str:
    """git's id of a blob with these bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Tree:
    """The tracked files of `commit`, with `overlays` ((path, commit): that path as `commit` has it)."""

    def __init__(self, repo: Path, commit: str, overlays: Iterable[tuple[str, str]] = ()) -> None:
        self.repo, self.commit = repo, commit
        self.overlays = tuple((str(PurePosixPath(p)), c) for p, c in overlays)
        entries = _ls_tree(repo, commit)
        for path, other in self.overlays:
            entries = {p: e for p, e in entries.items() if not _under(p, path)}
            entries.update({p: e for p, e in _ls_tree(repo, other).items() if _under(p, path)})
        self.entries = entries  # path → blob id (files and symlinks; gitlinks left out)
        self._dirs: dict[str, set[str]] | None = None
        self._bytes: dict[str, bytes] = {}

    def blob(self, path: str) -> str | None:
        return self.entries.get(path)

    def names(self, directory: str) -> set[str]:
        """The entries directly in `directory` ("" is the top): files, and directories holding files."""
        if self._dirs is None:
            dirs: dict[str, set[str]] = {}
            for p in self.entries:
                parts = p.split("/")
                for i in range(len(parts)):
                    dirs.setdefault("/".join(parts[:i]), set()).add(parts[i])
            self._dirs = dirs
        return self._dirs.get(directory.strip("/"), set())

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each tracked path (one `git cat-file --batch` for all not read before)."""
        wanted = [p for p in dict.fromkeys(paths) if p in self.entries and p not in self._bytes]
        if wanted:
            self._bytes.update(zip(wanted, _cat(self.repo, [self.entries[p] for p in wanted]), strict=True))
        return {p: self._bytes[p] for p in paths if p in self._bytes}

    def changed(self, other: Tree) -> set[str]:
        """Paths whose blob differs between the two trees, or that one of them lacks."""
        keys = self.entries.keys() | other.entries.keys()
        return {p for p in keys if self.entries.get(p) != other.entries.get(p)}


def _under(path: str, prefix: str) -> bool:
    return prefix in (".", "") or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _ls_tree(repo: Path, commit: str) -> dict[str, str]:
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", commit], repo).stdout
    entries = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries[path.decode("utf-8", "surrogateescape")] = sha.decode()
    return entries


def _cat(repo: Path, shas: list[str]) -> list[bytes]:
    """Each blob's bytes, in order, from one `git cat-file --batch`."""
    try:
        proc = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, input="".join(s + "\n" for s in shas).encode(),
                              capture_output=True, check=True)
    except subprocess.CalledProcessError as exc:
        raise GitError(["cat-file", "--batch"], exc.stderr.decode(errors="replace"), repo) from None
    data, pos, out = proc.stdout, 0, []
    for sha in shas:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        if len(header) != 3:
            raise GitError(["cat-file", "--batch"], f"no object {sha}", repo)
        size = int(header[2])
        out.append(data[end + 1:end + 1 + size])
        pos = end + 1 + size + 1  # the object, then a newline
    return out
