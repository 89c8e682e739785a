"""The site's files on disk: each written only when its bytes changed, and stale ones removed.

In: the output folder and, per build, every file's path and bytes. Out: the files, and the counts
(written, unchanged, removed). A manifest of each file's digest (in the site's hidden cache
folder) tells an unchanged file without reading it back; a file the manifest lists but that is gone
or was edited by hand is written again. Files of the previous build that this one did not produce
(a benchmark no longer stored) are removed; nothing else in the folder is touched.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class Output:
    root: Path
    manifest_path: Path
    old: dict[str, list] = field(default_factory=dict)    # path → [digest, size, mtime_ns]
    new: dict[str, list] = field(default_factory=dict)
    written: int = 0
    unchanged: int = 0
    removed: int = 0

    @classmethod
    def open(cls, root: Path, manifest_path: Path) -> Output:
        old = {}
        try:
            loaded = json.loads(manifest_path.read_text(encoding="utf-8"))
            old = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            pass
        return cls(root=root, manifest_path=manifest_path, old=old)

    def _same(self, rel: str, d: str, size: int) -> bool:
        known = self.old.get(rel)
        if not isinstance(known, list) or len(known) != 3 or known[0] != d:
            return False
        try:
            st = (self.root / rel).stat()
        except OSError:
            return False
        return st.st_size == size and st.st_mtime_ns == known[2]

    def write(self, rel: str, data: bytes) -> None:
        d = digest(data)
        target = self.root / rel
        if self._same(rel, d, len(data)):
            self.new[rel] = self.old[rel]
            self.unchanged += 1
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
        self.new[rel] = [d, len(data), target.stat().st_mtime_ns]
        self.written += 1

    def finish(self) -> None:
        """Remove what the previous build wrote and this one did not; save the manifest."""
        for rel in set(self.old) - set(self.new):
            path = self.root / rel
            if ".." not in Path(rel).parts and path.is_file():
                path.unlink()
                self.removed += 1
        self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        self.manifest_path.write_text(json.dumps(self.new, sort_keys=True), encoding="utf-8")
