"""Kept reach records: a compare whose base runs as a kept record's tree did needs no record run.

In: a benchmark's identity (what it runs and how: its definition, the setup, the interpreter), the
records a compare or a nightly made. Out: the newest kept records of that identity
(`$PROFOPT_CACHE_DIR/reach/`, the action keeps that directory between jobs); the caller checks each
against its base's tree (record.changes), and one that the base changes nothing of is as good as a
new one. A file this version cannot read is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from profopt_ci.reach.record import VERSION, Record, decode, encode

KEEP = 6  # records per identity: a few bases back (a PR opened before the last merges)


def identity(definition: dict, setup: list[str], env: dict[str, str]) -> str:
    """What a record is a record of: the benchmark's definition (kind, target, params, env, the steps
    its quality pass runs), the setup and the spec's env, the interpreter, the record's format."""
    data = {"definition": definition, "setup": list(setup), "env": dict(sorted(env.items())), "version": VERSION,
            "python": [sys.version, getattr(sys, "_base_executable", sys.executable)]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:24]


def where(root: Path) -> Path:
    return root / "reach"


def kept(root: Path, ident: str) -> list[Record]:
    """The kept records of an identity, newest first."""
    path = where(root) / f"{ident}.jsonl"
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return []
    out = [r for r in (decode(line) for line in reversed(lines) if line.strip()) if r is not None]
    return [r for r in out if r.identity == ident]


def keep(root: Path, record: Record) -> None:
    """Add a record (atomically; the oldest beyond KEEP go). A cache that cannot be written is skipped."""
    folder = where(root)
    others = [r for r in kept(root, record.identity) if (r.commit, r.overlays) != (record.commit, record.overlays)]
    lines = [encode(r) for r in reversed([record, *others][:KEEP])]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{record.identity}.{os.getpid()}"
        tmp.write_bytes(b"\n".join(lines) + b"\n")
        os.replace(tmp, folder / f"{record.identity}.jsonl")
    except OSError:
        pass
