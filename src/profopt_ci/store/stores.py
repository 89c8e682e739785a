"""Stored nightly baselines: compact summaries of `profopt run` per hardware label and commit.

In: a store location (`dir:PATH` → `dirstore.DirStore`, `git:BRANCH` → `gitstore.GitStore`; file
layout in `layout`), a label, a commit and the repository's history. Out: the stored
`profopt/baseline@1` documents a query asks for — all of a label's (`load`), the newest at or
before a commit with its distance in commits (`at_or_before`, `newest`), one by id (`find`) — each
version-checked (`check_doc`); and `save`, which writes one.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

import msgspec

from profopt_ci.documents.read import parse_document
from profopt_ci.documents.types_stored import Baseline, Bisect
from profopt_ci.errors import UsageError
from profopt_ci.gitutil import run_git
from profopt_ci.store.dirstore import DirStore
from profopt_ci.store.gitstore import GitStore
from profopt_ci.store.layout import (
    BASELINE_SCHEMA,
    DEFAULT_REMOTE,
    DEFAULT_STORE,
    REV_LIST_MAX,
    SHORT,
    Entry,
    Store,
    Warn,
    change_path,
    ignored,
    is_change_path,
    new_path,
    parse_path,
    stderr_warn,
)


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
        elif not ignored(p.rsplit("/", 1)[-1]) and not is_change_path(p):
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
    try:  # one decode into the baseline@1 types (documents.read): the schema key, then every field
        doc = parse_document(raw, entry.path, (BASELINE_SCHEMA,))
    except UsageError as exc:
        return None, str(exc).removeprefix(entry.path).removeprefix(": ")
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


def save(store: Store, doc: Baseline) -> str:
    """Store one baseline document (the frozen Struct its builder made); returns its path in the store."""
    if not isinstance(doc, Baseline):
        raise UsageError("only a profopt/baseline@1 document can be stored")
    try:
        when = _dt.datetime.fromisoformat(str(doc.created))
    except ValueError:
        when = None
    path = new_path(doc.hardware_label, doc.commit, when)
    # compact: thousands of these files are scanned and fetched; `baseline show --json` pretty-prints
    message = f"profopt baseline {doc.hardware_label} {doc.commit[:SHORT]}"
    return store.write(path, msgspec.json.encode(doc) + b"\n", message)


def save_change(store: Store, doc: Bisect) -> str:
    """Keep a change point's bisect@1 (with its `change_point` block) beside the label's runs, for the site."""
    cp = doc.change_point if isinstance(doc, Bisect) else None
    if not cp:
        raise UsageError("only a bisect@1 document with a change_point block can be stored")
    message = f"profopt change point {cp.label} {cp.benchmark} {cp.to_commit[:SHORT]}"
    return store.write(change_path(cp.label, cp.to_commit), msgspec.json.encode(doc) + b"\n", message)


def changes(store: Store, label: str | None, *, warn: Warn = stderr_warn) -> list[tuple[str, dict]]:
    """The stored change points' bisect@1 documents (path, document), oldest first; unreadable ones
    are named in a warning and left out."""
    from profopt_ci.documents.names import BISECT_SCHEMA
    from profopt_ci.documents.read import parse_document

    paths = sorted(p for p in store.paths(label) if is_change_path(p))
    out = []
    for path, raw in store.read(paths).items():
        try:
            doc = parse_document(raw or b"", path, (BISECT_SCHEMA,))
        except UsageError as exc:
            warn(f"{store.describe()}: skipped {path}: {str(exc)[:300]}")
            continue
        if isinstance(doc.get("change_point"), dict):
            out.append((path, doc))
    return out


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
