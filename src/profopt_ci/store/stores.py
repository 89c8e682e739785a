"""Stored nightly baselines: compact summaries of `profopt run` per hardware label and commit.

A store is a folder tree, either a plain directory (`dir:PATH`, e.g. an artifact) or a git branch
(`git:BRANCH`, default `profopt-data` on `origin`). One small file per run:

    <label>/<YYYY>/<YYYYMMDDTHHMMSSZ>-<sha12>-<token>.json      schema profopt/baseline@1

The file name carries what a query needs (label, time, commit), so answering "the newest baseline
for this label at or before commit C" is a directory scan plus one `git rev-list`, with no shared
index file that two concurrent writers would have to merge. The random token keeps two runs of
one commit in the same second apart.

The git store never touches the user's checkout, index or branches: it fetches the data branch
into `refs/remotes/<remote>/<branch>`, reads blobs with `git ls-tree`/`git cat-file`, and writes a
commit with plumbing (`hash-object`, a temporary index, `commit-tree`) that it pushes. A push
refused because someone else pushed first is retried on the new tip (our commit only adds a file,
so it always applies), a bounded number of times.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import random
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from profopt_ci.documents.baseline import check_baseline
from profopt_ci.documents.names import BASELINE_SCHEMA
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.gitutil import run_git

DEFAULT_STORE = "git:profopt-data"
DEFAULT_REMOTE = "origin"
SHORT = 12
PUSH_ATTEMPTS = 8
REV_LIST_MAX = 50_000

NAME_RE = re.compile(r"^(?P<ts>\d{8}T\d{6}Z)-(?P<sha>[0-9a-f]{7,40})(?:-(?P<tok>[0-9a-z]{1,16}))?\.json$")
YEAR_RE = re.compile(r"^\d{4}$")
_LABEL_BAD = re.compile(r"[^A-Za-z0-9._-]")

Warn = Callable[[str], None]


def stderr_warn(message: str) -> None:
    print(f"profopt: warning: {message}", file=sys.stderr, flush=True)


def label_dir(label: str) -> str:
    """A hardware label as one safe path component (the file keeps the real label)."""
    safe = _LABEL_BAD.sub("_", label.strip()) or "_"
    return "_" + safe if safe.startswith(".") else safe


def timestamp(when: _dt.datetime | None = None) -> str:
    when = when or _dt.datetime.now(_dt.timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class Entry:
    """One stored run, known from its path alone."""

    path: str       # relative to the store root, with `/`
    label: str      # the label folder (label_dir of the hardware label)
    ts: str         # YYYYMMDDTHHMMSSZ, UTC
    short: str      # commit prefix as written in the name

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[-1][: -len(".json")]


def parse_path(path: str) -> Entry | None:
    """An Entry when `path` follows the layout, else None (a foreign file)."""
    parts = path.split("/")
    if len(parts) != 3 or not YEAR_RE.match(parts[1]):
        return None
    m = NAME_RE.match(parts[2])
    if m is None or m["ts"][:4] != parts[1]:
        return None
    return Entry(path=path, label=parts[0], ts=m["ts"], short=m["sha"])


def new_path(label: str, commit: str, when: _dt.datetime | None = None) -> str:
    ts = timestamp(when)
    return f"{label_dir(label)}/{ts[:4]}/{ts}-{commit[:SHORT]}-{secrets.token_hex(3)}.json"


def _ignored(name: str) -> bool:
    # dotfiles (.gitattributes, editor droppings) and a top-level README are part of a data branch
    return name.startswith(".") or name.lower() in ("readme", "readme.md", "readme.txt")


class Store(Protocol):
    def describe(self) -> str: ...
    def paths(self, label: str | None) -> list[str]: ...
    def read(self, paths: list[str]) -> dict[str, bytes | None]: ...
    def write(self, path: str, data: bytes, message: str) -> str: ...


# ---- a plain directory --------------------------------------------------------------------------


@dataclass
class DirStore:
    root: Path

    def describe(self) -> str:
        return f"dir:{self.root}"

    def paths(self, label: str | None) -> list[str]:
        """Every file under the label folder(s), relative; scandir keeps 10k files to milliseconds."""
        if not self.root.is_dir():
            return []
        tops = [label_dir(label)] if label is not None else sorted(e.name for e in os.scandir(self.root))
        out: list[str] = []
        for top in tops:
            out.extend(_walk(self.root, top))
        return out

    def read(self, paths: list[str]) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for p in paths:
            try:
                out[p] = (self.root / p).read_bytes()
            except OSError:
                out[p] = None
        return out

    def write(self, path: str, data: bytes, message: str) -> str:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        while target.exists():  # the token collided: draw another
            path = _retoken(path)
            target = self.root / path
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
        return path


def _walk(root: Path, top: str) -> list[str]:
    base = root / top
    if not base.is_dir():
        return [top] if base.is_file() else []
    out = []
    stack = [top]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel) as it:
            for e in it:
                child = f"{rel}/{e.name}"
                if e.is_dir(follow_symlinks=False):
                    stack.append(child)
                else:
                    out.append(child)
    return out


# ---- a git branch -------------------------------------------------------------------------------


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
            path = _retoken(path)
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


def _retoken(path: str) -> str:
    """The same run's path with a fresh random token (the old one is taken)."""
    return re.sub(r"-[0-9a-z]+\.json$", f"-{secrets.token_hex(3)}.json", path)


# ---- locations, loading, queries ----------------------------------------------------------------


def open_store(location: str | None, repo: Path | None, *, log: Warn = stderr_warn, push: bool = True) -> Store:
    """`dir:PATH` or `git:BRANCH` / `git:REMOTE:BRANCH` (default git:profopt-data on origin)."""
    text = location or DEFAULT_STORE
    kind, _, rest = text.partition(":")
    if kind == "dir" and rest:
        return DirStore(Path(rest).expanduser())
    if kind == "git" and rest:
        remote, _, branch = rest.rpartition(":")
        if repo is None:
            raise UsageError(f"--store {text}: not inside a git repository — use --store dir:PATH")
        return GitStore(repo=repo, branch=branch, remote=remote or DEFAULT_REMOTE, log=log, push=push)
    raise UsageError(f"--store {text!r}: expected dir:PATH or git:BRANCH (e.g. git:profopt-data)")


def entries(store: Store, label: str | None, *, warn: Warn = stderr_warn) -> list[Entry]:
    """Stored runs (newest first); files outside the layout are named in a warning and skipped."""
    out, foreign = [], []
    for p in store.paths(label):
        e = parse_path(p)
        if e is not None:
            out.append(e)
        elif not _ignored(p.rsplit("/", 1)[-1]):
            foreign.append(p)
    if foreign:
        shown = ", ".join(sorted(foreign)[:10]) + (f" and {len(foreign) - 10} more" if len(foreign) > 10 else "")
        warn(f"{store.describe()}: skipped {len(foreign)} file(s) that are not profopt baselines: {shown}")
    out.sort(key=lambda e: (e.ts, e.path), reverse=True)
    return out


def check_doc(raw: bytes | None, entry: Entry) -> tuple[dict | None, str | None]:
    """(document, None) or (None, why it is unusable)."""
    if raw is None:
        return None, "cannot be read"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"not valid JSON ({exc})"
    try:
        check_baseline(doc, entry.path)  # schema key + baseline.schema.json (documents.baseline)
    except UsageError as exc:
        return None, str(exc).removeprefix(f"{entry.path}: ")
    commit = doc.get("commit")
    if not isinstance(commit, str) or not commit.startswith(entry.short):
        return None, f"its commit {commit!r} does not match the name"
    if not isinstance(doc.get("benchmarks"), dict) or not isinstance(doc.get("hardware_label"), str):
        return None, "no `benchmarks` or `hardware_label`"
    return doc, None


def load(store: Store, chosen: list[Entry], *, label: str | None = None, warn: Warn = stderr_warn) -> list[tuple[Entry, dict]]:
    """The documents of `chosen`, in order; corrupt ones are named in a warning and left out."""
    raws = store.read([e.path for e in chosen])
    out = []
    for e in chosen:
        doc, why = check_doc(raws.get(e.path), e)
        if doc is None:
            warn(f"{store.describe()}: skipped {e.path}: {why}")
            continue
        if label is not None and doc["hardware_label"] != label:
            continue  # another label whose folder name sanitises to the same one
        out.append((e, doc))
    return out


def save(store: Store, doc: dict) -> str:
    """Store one baseline document; returns its path in the store."""
    if doc.get("schema") != BASELINE_SCHEMA or not doc.get("commit"):
        raise UsageError("only a profopt/baseline@1 document with a commit can be stored")
    try:
        when = _dt.datetime.fromisoformat(str(doc.get("created")))
    except ValueError:
        when = None
    path = new_path(doc["hardware_label"], doc["commit"], when)
    # compact: thousands of these files are scanned and fetched; `baseline show --json` pretty-prints
    data = (json.dumps(doc, separators=(",", ":"), default=str) + "\n").encode()
    message = f"profopt baseline {doc['hardware_label']} {doc['commit'][:SHORT]}"
    return store.write(path, data, message)


def ancestors(repo: Path, commit: str, limit: int = REV_LIST_MAX) -> dict[str, int]:
    """Short prefix → distance (0 = `commit` itself) for `commit` and its ancestors, newest first."""
    out = run_git(cwd=repo, args=["rev-list", f"--max-count={limit}", commit], check=False)
    if out.returncode != 0:
        raise UsageError(f"cannot list the history of {commit[:SHORT]} in {repo}: "
                         f"{out.stderr.decode(errors='replace').strip()}")
    result: dict[str, int] = {}
    for i, sha in enumerate(out.stdout.decode().split()):
        result.setdefault(sha[:SHORT], i)
    return result


def _distance(anc: dict[str, int], short: str) -> int | None:
    if len(short) >= SHORT:
        return anc.get(short[:SHORT])
    for key, dist in anc.items():  # a name with a shorter prefix (hand-made): slow path, rare
        if key.startswith(short):
            return dist
    return None


def at_or_before(store: Store, repo: Path, label: str, commit: str, *, limit: int | None = None,
                 warn: Warn = stderr_warn) -> list[tuple[Entry, dict, int]]:
    """Stored runs of `label` whose commit is `commit` or one of its ancestors, newest first.

    Newest means the nearest commit first, and among runs of one commit the latest run first.
    `limit` stops after that many loadable documents. Returns (entry, doc, commits before `commit`).
    """
    anc = ancestors(repo, commit)
    ranked = []
    for e in entries(store, label, warn=warn):
        dist = _distance(anc, e.short)
        if dist is not None:
            ranked.append((dist, e))
    ranked.sort(key=lambda x: x[1].ts, reverse=True)
    ranked.sort(key=lambda x: x[0])  # stable: nearest commit first, its latest run first
    out: list[tuple[Entry, dict, int]] = []
    batch = 16
    for i in range(0, len(ranked), batch):
        chunk = ranked[i:i + batch]
        docs = {e.path: doc for e, doc in load(store, [e for _, e in chunk], label=label, warn=warn)}
        for dist, e in chunk:
            if e.path in docs:
                out.append((e, docs[e.path], dist))
                if limit is not None and len(out) >= limit:
                    return out
    return out


def newest(store: Store, repo: Path, label: str, commit: str, *, warn: Warn = stderr_warn) -> tuple[Entry, dict, int] | None:
    found = at_or_before(store, repo, label, commit, limit=1, warn=warn)
    return found[0] if found else None


def find(store: Store, ident: str, *, warn: Warn = stderr_warn) -> tuple[Entry, dict]:
    """A run by its id (file name without .json) or its path in the store."""
    want = ident[: -len(".json")] if ident.endswith(".json") else ident
    for e in entries(store, None, warn=warn):
        if e.id == want or e.path == ident:
            got = load(store, [e], warn=warn)
            if got:
                return got[0]
            raise UsageError(f"{store.describe()}: {e.path} is not a usable baseline")
    raise UsageError(f"{store.describe()}: no stored run {ident!r} — see `profopt baseline list`")


def age_days(doc: dict, now: _dt.datetime | None = None) -> float | None:
    try:
        created = _dt.datetime.fromisoformat(str(doc.get("created")))
    except ValueError:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=_dt.timezone.utc)
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return max((now - created).total_seconds() / 86400.0, 0.0)
