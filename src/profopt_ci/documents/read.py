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

import json
import os
import re
import stat
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from msgspec import UNSET

from profopt_ci.documents.schemas import DOCUMENTS
from profopt_ci.documents.types import ResultsEntry, share_empty
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.errors import UsageError

# A comparison of 10⁶ benchmarks (5 samples a side) is ~4.5 GB: a file past 16 GiB is not one of
# ours. A pipe or a device (`--spec /dev/zero`, `report /dev/stdin`) is read to 1 GiB at most.
MAX_DOCUMENT_BYTES = 16 * 1024 ** 3
MAX_STREAM_BYTES = 1024 ** 3
# Past this a file's entries are decoded in parts (documents/parts.py), which holds less at once but
# is slower: a comparison of 10⁵ is past it; the results of 10⁵ that `diff` reads twice are not.
PARTS_MIN_BYTES = 256 * 1024 ** 2


# `schema` as the first key, the way profopt writes it: read from the first bytes, not a whole pass.
_LEADING_SCHEMA = re.compile(rb'\A\s*\{\s*"schema"\s*:\s*"([^"\\]{1,64})"\s*[,}]')


class _Tag(msgspec.Struct):
    schema: Any = None  # the one key read when the caller accepts more than one document


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
    with paused():  # 10⁶ containers, none in a cycle: the collector's passes over them cost ~20%
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


def _schema_of(raw: bytes, p: str, wanted: tuple[str, ...], strict: bool = True) -> Any:
    """The document's `schema` value (only that key is built); `strict`: one of `wanted`, else the error."""
    try:
        got = msgspec.json.decode(raw, type=_Tag).schema
    except msgspec.DecodeError as exc:
        raise _malformed(p, raw, wanted, exc) from None
    except RecursionError:
        raise UsageError(f"{p}: nested too deeply — expected a {' or '.join(wanted)} file") from None
    except (msgspec.ValidationError, ValueError):
        got = None
    if strict and got not in wanted:
        raise _wrong_schema(p, got, wanted)
    return got


def _wrong_schema(p: str, got: Any, wanted: tuple[str, ...]) -> UsageError:
    return UsageError(f"{p}: schema is {str(got)[:80]!r} — expected {' or '.join(repr(w) for w in wanted)}")


def _invalid(p: str, name: str, exc: msgspec.ValidationError, raw: bytes | None = None,
             data: Any = None, kind: Any = None, prefix: str = "$") -> UsageError:
    """msgspec's "Expected `int` >= 0 - at `$.benchmarks[0].rounds`" as "FILE: $.path: what (doc)",
    the key of each object msgspec shows as `[...]` found again (`$.benchmarks["b7"]…`). `kind` and
    `prefix`: the error is in a part (one entry) of the document, at `prefix`."""
    text = str(exc)
    what, _, where = text.rpartition(" - at `")
    if not what:
        what, where = text, "$`"
    where = where.rstrip("`")
    if "[...]" in where:
        where = _named(where, kind or DOCUMENTS[name], raw, data)
    return UsageError(f"{p}: {prefix}{where[1:]}: {what[:300]} ({name} schema)")


_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(\.\.\.)\]")


def _named(where: str, kind: Any, raw: bytes | None, data: Any) -> str:
    """The path with each `[...]` replaced by the key of the first value there its type refuses
    (only on an error, so the plain decode of the whole file costs nothing otherwise)."""
    try:
        node = msgspec.json.decode(raw) if data is None else data
        out = "$"
        for name, index, unknown in _STEP.findall(where[1:]):
            kind = _arm(kind, dict if unknown else list if index else msgspec.Struct)
            if name:
                info = {f.encode_name: f.type for f in msgspec.structs.fields(kind)}
                node, kind, out = node[name], info[name], f"{out}.{name}"
            elif index:
                node, kind, out = node[int(index)], get_args(kind)[0], f"{out}[{index}]"
            else:
                value = get_args(kind)[1]
                key = next(k for k, v in node.items() if not _fits(v, value))
                node, kind, out = node[key], value, f"{out}[{json.dumps(key)}]"
        return out
    except (LookupError, StopIteration, TypeError, ValueError, RecursionError, msgspec.MsgspecError):
        return where


def _arm(kind: Any, want: type) -> Any:
    """The arm of a (possibly Annotated, optional) type that is a dict, a list or a Struct."""
    while get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    arms = get_args(kind) if get_origin(kind) in (Union, UnionType) else (kind,)
    for arm in arms:
        while get_origin(arm) is Annotated:
            arm = get_args(arm)[0]
        base = get_origin(arm) or arm
        if isinstance(base, type) and issubclass(base, want):
            return arm
    raise TypeError(f"no {want.__name__} in {kind}")


def _fits(value: Any, kind: Any) -> bool:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return False
    return True


def _malformed(p: str, raw: bytes, wanted: tuple[str, ...], exc: msgspec.DecodeError) -> UsageError:
    """Not JSON at all: the line and column of the byte msgspec stopped at."""
    text = str(exc)
    at = re.search(r"\(byte (\d+)\)", text)
    where = ""
    if at:
        offset = int(at.group(1))
        line = raw.count(b"\n", 0, offset) + 1
        col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        where = f":{line}:{col}"
    return UsageError(f"{p}{where}: not valid JSON ({text}) — expected a {' or '.join(wanted)} file")


def plain(doc: msgspec.Struct) -> dict[str, Any]:
    """A decoded document as the dicts and lists the stages read and annotate; each entry's samples
    and metrics, and a results@1 entry itself, stay the Structs they were decoded into
    (documents.types says why)."""
    entries = getattr(doc, "benchmarks", None)
    if entries is None:  # sides@1, bisect@1: small, nothing kept typed
        return msgspec.to_builtins(doc)
    doc.benchmarks = []
    out = msgspec.to_builtins(doc)
    # In place: each entry's Struct goes as soon as its dict exists (at 10⁵ both at once were ~0.3 GB).
    if isinstance(entries, dict):
        for name, e in entries.items():
            entries[name] = _entry(e)
    else:
        for i, e in enumerate(entries):
            entries[i] = _entry(e)
    out["benchmarks"] = entries
    return out


def _entry(entry: msgspec.Struct) -> Any:
    if isinstance(entry, ResultsEntry):  # stays a Struct; what it holds besides samples becomes plain
        share_empty(entry.samples)
        for key in ("quality", "instructions"):
            if isinstance(getattr(entry, key), msgspec.Struct):
                setattr(entry, key, msgspec.to_builtins(getattr(entry, key)))
        return entry
    if not isinstance(entry, Entry):
        return msgspec.to_builtins(entry)
    samples, metrics = getattr(entry, "samples", UNSET), getattr(entry, "metrics", UNSET)
    if samples is not UNSET:
        for rows in samples.values():
            share_empty(rows)
        entry.samples = []  # type: ignore[attr-defined]  # keeps the key's place in the dict
    if metrics is not UNSET:
        entry.metrics = {}  # type: ignore[attr-defined]
    out = msgspec.to_builtins(entry)
    if samples is not UNSET:
        out["samples"] = samples
    if metrics is not UNSET:
        out["metrics"] = metrics
    return out
