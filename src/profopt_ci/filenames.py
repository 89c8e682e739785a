"""A name a user chose, made one safe part of a file name.

In: any text — a benchmark's name (a pytest id, an asv name with its parameters), a suite's label,
a side's name. Out: one path component of at most MAX_PART characters from [A-Za-z0-9._-] that
never starts with a dot or a dash, so neither `/`, `..`, spaces, control characters nor a 300-character
name can make a missing directory, a hidden file, an escape from the folder, or a name longer than
the file system allows. A name that is already safe is kept as it is (the traces a user finds
under `--trace-dir` keep their benchmark's name); any other gets a hash of the original, so two
names that escape alike stay two files.

Standard library only: the worker (measure/worker.py, profile/capture.py) imports it too.
"""
from __future__ import annotations

import hashlib
import re

MAX_PART = 100  # with a prefix and a suffix, far below the usual 255-byte limit of a file name
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_part(name: str, limit: int = MAX_PART) -> str:
    """`name` as one safe file-name component (see the module's docstring)."""
    text = str(name)
    safe = _UNSAFE.sub("_", text)
    if safe == text and 0 < len(text) <= limit and text[0] not in ".-":
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = safe.lstrip(".-")[: limit - 11]
    return f"{stem}-{digest}" if stem else digest
