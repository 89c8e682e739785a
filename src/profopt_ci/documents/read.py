"""The one reader of profopt's versioned documents: bytes or a path in, the document's data out.

In: a path (or bytes with the name to show in errors) and the document name(s) the caller accepts
(`documents.names`: results@1, comparison@1, baseline@1, sides@1). Out: the document as plain
dicts and lists, its samples and metrics as the `documents.types` Structs (`Sample`, `Metric`,
which read like dicts). Reading is one decode into the types (`documents.types`, the source of the
packaged JSON Schemas): a wrong `schema`, a key the model lacks, another type or a number out of
range is a `UsageError` (exit 2) that names the file, the JSON path (`$.benchmarks[0].metrics…`)
and what was expected. Strict JSON: NaN and ±Infinity are not JSON, numbers beyond ±1e100 are
refused where the model names a number, so they can never reach the statistics.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import msgspec

from profopt_ci.documents.decode import _invalid, _malformed, _schema_of, _wrong_schema, plain, view  # noqa: F401 — view re-exported
from profopt_ci.documents.schemas import DOCUMENTS
from profopt_ci.errors import UsageError

# The largest comparison profopt is meant to write is a few GB (docs/experiments.md): a file past
# 16 GiB is not one of ours. A pipe or a device (`--spec /dev/zero`, `report /dev/stdin`) is read to 1 GiB at most.
MAX_DOCUMENT_BYTES = 16 * 1024 ** 3
MAX_STREAM_BYTES = 1024 ** 3
# Past this a file's entries are decoded in parts (documents/parts.py), which holds less at once but
# is slower: meant for a large comparison, not for the results files that `diff` reads twice.
PARTS_MIN_BYTES = 256 * 1024 ** 2


# `schema` as the first key, the way profopt writes it: read from the first bytes, not a whole pass.
_LEADING_SCHEMA = re.compile(rb'\A\s*\{\s*"schema"\s*:\s*"([^"\\]{1,64})"\s*[,}]')


def _read_capped(fh: Any) -> bytes | None:
    """The bytes, or None past the cap. A regular file is read at its size (read(cap + 1) would
    reserve a buffer of the cap first), and one past MAX_DOCUMENT_BYTES not at all; a pipe or a
    device is read in chunks to MAX_STREAM_BYTES."""
    info = os.fstat(fh.fileno())
    if stat.S_ISREG(info.st_mode):
        if info.st_size > MAX_DOCUMENT_BYTES:
            return None
        raw = fh.read(info.st_size + 1)  # one buffer of the file's size (+1: a file still growing shows it)
        return raw if len(raw) <= MAX_DOCUMENT_BYTES else None
    chunks, total = [], 0
    while total <= MAX_STREAM_BYTES and (chunk := fh.read(min(64 * 1024 ** 2, MAX_STREAM_BYTES + 1 - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks) if total <= MAX_STREAM_BYTES else None


def load_json(path: str | Path, expect: str | tuple[str, ...]) -> dict[str, Any]:
    """Load a profopt file, insist on its `schema` and decode it into its type (documents.types):
    a bad file is a user error naming the file and the field's path."""
    p = Path(path)
    wanted = (expect,) if isinstance(expect, str) else expect
    shown = " or ".join(wanted)
    try:
        fh = open(p, "rb")  # noqa: SIM115  # kept open: a big document's entries are read again from it
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file — expected a {shown} file") from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    with fh:
        try:
            raw = _read_capped(fh)
        except OSError as exc:
            raise UsageError(f"{p}: cannot read ({exc})") from None
        if raw is None:
            raise UsageError(f"{p}: larger than 16 GiB (1 GiB for a pipe or device) — expected a {shown} file")
        wanted = _narrowed(raw, wanted)
        box = [raw]
        del raw  # only the box holds the bytes now, so decoding can let them go before converting
        if len(wanted) == 1 and len(box[0]) >= PARTS_MIN_BYTES and stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            from profopt_ci.documents.parts import read_in_parts

            if wanted[0] in DOCUMENTS and hasattr(DOCUMENTS[wanted[0]], "benchmarks"):
                return read_in_parts(box, fh.fileno(), str(p), wanted[0])
        return _parse(box, str(p), wanted)


def _narrowed(raw: bytes, wanted: tuple[str, ...]) -> tuple[str, ...]:
    """The one accepted document the text names first, else `wanted`: finding `schema` by decoding
    (`_schema_of`) is a pass over the whole file before the decode itself. A file whose
    `schema` comes later, or that names it again, is still decoded strictly as that type, and a
    wrong guess ends in the same errors."""
    if len(wanted) < 2:
        return wanted
    found = _LEADING_SCHEMA.match(raw, 0, 4096)
    name = found.group(1).decode("utf-8", "replace") if found else None
    return (name,) if name in wanted else wanted


def parse_document(raw: bytes, p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Bytes of a profopt document → its data; `p` names it in errors (a path, an artifact)."""
    return _parse([raw], p, wanted)


def check_document(data: Any, shown: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """An already parsed document (a store's JSON, a results built from a baseline) → its data, when
    its `schema` is one of `wanted` and it converts into that type."""
    got = data.get("schema") if isinstance(data, dict) else None
    if got not in wanted:
        raise _wrong_schema(shown, got, wanted)
    try:
        doc = msgspec.convert(data, DOCUMENTS[got], strict=True)
    except msgspec.ValidationError as exc:
        raise _invalid(shown, got, exc, data=data) from None
    except RecursionError:
        raise UsageError(f"{shown}: nested too deeply — expected a {got} document") from None
    return plain(doc)


def _parse(box: list[bytes], p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Decode the bytes in `box` (taken out of it, so they go as soon as they are decoded)."""
    from profopt_ci.gc_pause import paused

    raw = box.pop()
    name = wanted[0] if len(wanted) == 1 else _schema_of(raw, p, wanted)
    with paused():  # millions of containers, none in a cycle: the collector's passes over them are wasted
        try:
            doc = msgspec.json.decode(raw, type=DOCUMENTS[name])
        except msgspec.ValidationError as exc:
            got = _schema_of(raw, p, wanted, strict=False)
            if got not in wanted:
                raise _wrong_schema(p, got, wanted) from None
            raise _invalid(p, name, exc, raw) from None
        except msgspec.DecodeError as exc:
            raise _malformed(p, raw, wanted, exc) from None
        except RecursionError:
            raise UsageError(f"{p}: nested too deeply — expected a {' or '.join(wanted)} file") from None
        except ValueError as exc:  # an integer Python refuses to convert (4,300+ digits)
            raise UsageError(f"{p}: {str(exc)[:200]} — expected a {' or '.join(wanted)} file") from None
        del raw
        return plain(doc)
