"""Where a stored baseline lives: one file per run, named for what a query needs.

In: a hardware label, a commit, a time. Out: the file's path in a store and back (`new_path`,
`parse_path` → `Entry`), the `Store` protocol the dir and git stores implement, and the store
constants. The layout:

    <label>/<YYYY>/<YYYYMMDDTHHMMSSZ>-<sha12>-<token>.json      schema profopt/baseline@1

The file name carries label, time and commit, so "the newest baseline for this label at or before
commit C" is a directory scan plus one `git rev-list`, with no shared index file that two
concurrent writers would have to merge. The random token keeps two runs of one commit in the same
second apart.
"""
from __future__ import annotations

import datetime as _dt
import re
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from profopt_ci.documents.names import BASELINE_SCHEMA  # noqa: E402,F401 — one owner (documents)
from profopt_ci.filenames import file_part

DEFAULT_STORE = "git:profopt-data"
DEFAULT_REMOTE = "origin"
SHORT = 12
PUSH_ATTEMPTS = 8
REV_LIST_MAX = 50_000
NAME_RE = re.compile(r"^(?P<ts>\d{8}T\d{6}Z)-(?P<sha>[0-9a-f]{7,40})(?:-(?P<tok>[0-9a-z]{1,16}))?\.json$")
YEAR_RE = re.compile(r"^\d{4}$")
_LABEL_BAD = re.compile(r"[^A-Za-z0-9._-]")
MAX_LABEL_DIR = 200  # labels up to this length keep the folder they always had


Warn = Callable[[str], None]


def stderr_warn(message: str) -> None:
    print(f"profopt: warning: {message}", file=sys.stderr, flush=True)


def label_dir(label: str) -> str:
    """A hardware label as one safe path component (the file keeps the real label)."""
    safe = _LABEL_BAD.sub("_", label.strip()) or "_"
    if len(safe) > MAX_LABEL_DIR:  # past a file system's 255 bytes: cut, and a hash keeps labels apart
        safe = file_part(label, MAX_LABEL_DIR)
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


CHANGES = "changes"  # <label>/changes/<YYYYMMDDTHHMMSSZ>-<to12>-<token>.json: a change point's bisect@1


def change_path(label: str, to_commit: str, when: _dt.datetime | None = None) -> str:
    """Where `refresh --bisect` keeps a change point's bisect@1 (the site reads it; never rewritten)."""
    ts = timestamp(when)
    return f"{label_dir(label)}/{CHANGES}/{ts}-{to_commit[:SHORT]}-{secrets.token_hex(3)}.json"


def is_change_path(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 3 and parts[1] == CHANGES and parts[2].endswith(".json")


def ignored(name: str) -> bool:
    # dotfiles (.gitattributes, editor droppings) and a top-level README are part of a data branch
    return name.startswith(".") or name.lower() in ("readme", "readme.md", "readme.txt")


class Store(Protocol):
    def describe(self) -> str: ...
    def paths(self, label: str | None) -> list[str]: ...
    def read(self, paths: list[str]) -> dict[str, bytes | None]: ...
    def write(self, path: str, data: bytes, message: str) -> str: ...


def retoken(path: str) -> str:
    """The same run's path with a fresh random token (the old one is taken)."""
    return re.sub(r"-[0-9a-z]+\.json$", f"-{secrets.token_hex(3)}.json", path)

