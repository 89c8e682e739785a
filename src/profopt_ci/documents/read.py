"""The one reader of profopt's versioned documents: bytes or a path in, a validated dict out.

In: a path (or bytes with the name to show in errors) and the document name(s) the caller accepts
(`documents.names`: results@1, comparison@1, baseline@1, sides@1). Out: the parsed dict, after the
`schema` key was checked and the document validated against its packaged JSON Schema
(`documents.check`, the fast checker). Results and comparisons go through `documents.fast` first
(msgspec, sample rows as compact `Row`s), and through json + documents.check only when it declines,
which then words the error. Anything else is a `UsageError` (exit 2) that names the file,
the JSON path or line:col, and what was expected. Strict JSON: NaN, ±Infinity and integers of more
than 40 digits are refused while parsing, so they can never reach the statistics.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA, SCHEMA_FILES
from profopt_ci.errors import UsageError

MAX_DOCUMENT_BYTES = 4 * 1024 ** 3  # a results or comparison file past 4 GiB is not one of ours
FAST_SCHEMAS = {RESULTS_SCHEMA, COMPARISON_SCHEMA}  # documents.fast reads these first (rows as Row)


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


def load_json(path: str | Path, expect: str | tuple[str, ...]) -> dict[str, Any]:
    """Load a profopt file, insist on its `schema` and validate it against the packaged JSON Schema
    (documents.names): a bad file is a user error naming the file and the field's path."""
    p = Path(path)
    wanted = (expect,) if isinstance(expect, str) else expect
    shown = " or ".join(wanted)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_DOCUMENT_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file — expected a {shown} file") from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise UsageError(f"{p}: larger than 4 GiB — expected a {shown} file")
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
