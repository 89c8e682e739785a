"""The one reader of profopt's versioned documents: bytes or a path in, a validated dict out.

In: a path (or bytes with the name to show in errors) and the document name(s) the caller accepts
(`documents.names`: results@1, comparison@1, baseline@1, sides@1). Out: the parsed dict, after the
`schema` key was checked and the document validated against its packaged JSON Schema
(`documents.check`, the fast checker). Results and comparisons go through `documents.fast` first
(msgspec, sample rows kept as their text: documents.records), and through json + documents.check only when it declines,
which then words the error. Anything else is a `UsageError` (exit 2) that names the file,
the JSON path or line:col, and what was expected. Strict JSON: NaN, ±Infinity and integers of more
than 40 digits are refused while parsing, so they can never reach the statistics.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA, SCHEMA_FILES
from profopt_ci.errors import UsageError

# A comparison of 10⁶ benchmarks (5 samples a side) is ~4.5 GB: a file past 16 GiB is not one of
# ours. A pipe or a device (`--spec /dev/zero`, `report /dev/stdin`) is read to 1 GiB at most.
MAX_DOCUMENT_BYTES = 16 * 1024 ** 3
MAX_STREAM_BYTES = 1024 ** 3
FAST_SCHEMAS = {RESULTS_SCHEMA, COMPARISON_SCHEMA}  # documents.fast reads these first


class _BadNumber(ValueError):
    pass


def _no_constant(text: str) -> float:
    raise _BadNumber(f"{text} is not a number JSON allows")


def _int(text: str) -> int:
    if len(text) > 40:  # far past any count or seed; Python would refuse 4,300+ digits anyway
        raise _BadNumber(f"an integer of {len(text)} digits (at most 40)")
    return int(text)


def _where_bad(text: str) -> str:
    """'$.path ' of the first NaN/inf/huge integer, found by a lenient re-parse (only on failure)."""
    from profopt_ci.documents.check import first_bad_number, json_path

    try:
        path = first_bad_number(json.loads(text))
    except (ValueError, RecursionError):
        return ""
    return f"{json_path(path)}: " if path is not None else ""


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
    """Load a profopt file, insist on its `schema` and validate it against the packaged JSON Schema
    (documents.names): a bad file is a user error naming the file and the field's path."""
    p = Path(path)
    wanted = (expect,) if isinstance(expect, str) else expect
    shown = " or ".join(wanted)
    try:
        with open(p, "rb") as fh:
            raw = _read_capped(fh)
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file — expected a {shown} file") from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    if raw is None:
        raise UsageError(f"{p}: larger than 16 GiB (1 GiB for a pipe or device) — expected a {shown} file")
    box = [raw]
    del raw  # only the box holds the bytes now, so _parse can let them go before building the objects
    return _parse(box, str(p), wanted)


def parse_document(raw: bytes, p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Bytes of a profopt document → the validated dict; `p` names it in errors (a path, an artifact)."""
    return _parse([raw], p, wanted)


def _parse(box: list[bytes], p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Parse the bytes in `box` (taken out of it): at 10⁵ benchmarks the file is ~450 MB, so the bytes
    go once decoded and the text once parsed, and never sit beside the objects and each other."""
    if FAST_SCHEMAS & set(wanted):
        from profopt_ci.documents.fast import decode

        data = decode(box[0])
        if data is not None and data["schema"] in wanted:
            return data
        del data  # not taken: the plain reader parses it again and words what is wrong
    return parse_plain(box, p, wanted)


def parse_plain(box: list[bytes], p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """json + documents.check: every document the fast reader does not take, and every error."""
    from profopt_ci.gc_pause import paused

    shown = " or ".join(wanted)
    try:
        text = box.pop().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    try:
        with paused():
            data = json.loads(text, parse_constant=_no_constant, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}) — expected a {shown} file") from None
    except ValueError as exc:  # _BadNumber, or an integer Python refuses to convert
        raise UsageError(f"{p}: {_where_bad(text)}{str(exc)[:200]} — expected a {shown} file") from None
    except RecursionError:
        raise UsageError(f"{p}: nested too deeply — expected a {shown} file") from None
    del text
    return check_document(data, p, wanted)


def check_document(data: Any, shown: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """An already parsed document → itself, when its `schema` is one of `wanted` and it validates."""
    from profopt_ci.documents.check import validate

    got = data.get("schema") if isinstance(data, dict) else None
    if got not in wanted:
        raise UsageError(f"{shown}: schema is {str(got)[:80]!r} — expected {' or '.join(repr(w) for w in wanted)}")
    validate(data, SCHEMA_FILES[got], shown)
    return data
