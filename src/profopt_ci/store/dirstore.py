"""A store in a plain directory (`--store dir:PATH`, e.g. an Actions artifact).

In: the directory. Out: the `Store` protocol of `layout`: the paths of the runs of a label, their
bytes, and writes of new files (atomic: written aside, then renamed).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from profopt_ci.store.layout import (
    label_dir,
    retoken,
)


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
            path = retoken(path)
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

