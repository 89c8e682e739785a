"""A decoded document as the stages read it, and a bad one worded: the helpers the one reader
(read.py) and its entry-by-entry form for huge files (parts.py) share.

In: raw bytes or a decoded Struct, the file's name and the documents accepted. Out: `plain(doc)`
(plain dicts and lists, samples and metrics kept as Structs), `_schema_of` (the `schema` value
alone), and the `UsageError`s naming the file, the JSON path and what was expected.
"""
from __future__ import annotations

import json
import re
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from msgspec import UNSET
from msgspec.structs import replace

from profopt_ci.documents.schemas import DOCUMENTS
from profopt_ci.documents.types import ResultsEntry, share_empty
from profopt_ci.documents.types_comparison import Entry, share_messages
from profopt_ci.errors import UsageError


class _Tag(msgspec.Struct):
    schema: Any = None  # the one key read when the caller accepts more than one document


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
    out = msgspec.to_builtins(replace(doc, benchmarks=[]))
    seen: dict = {}
    # In place: each entry's Struct goes as soon as its dict exists (both at once would double the peak).
    if isinstance(entries, dict):
        for name, e in entries.items():
            entries[name] = _entry(e, seen=seen)
    else:
        for i, e in enumerate(entries):
            entries[i] = _entry(e, seen=seen)
    out["benchmarks"] = entries
    return out


def view(doc: msgspec.Struct) -> dict[str, Any]:
    """A built document (a frozen Struct) as a reader of its file gets it (`plain`): what the
    report and the other readers in the same process take. The Struct is left as it was; the view
    shares its samples and metrics."""
    from profopt_ci.gc_pause import paused

    entries = getattr(doc, "benchmarks", None)
    if entries is None:
        return msgspec.to_builtins(doc)
    with paused():  # every entry's dicts, none in a cycle
        out = msgspec.to_builtins(replace(doc, benchmarks=[]))
        if isinstance(entries, dict):
            out["benchmarks"] = {n: _entry(e, False) for n, e in entries.items()}
            return out
        # A comparison's entries (their samples and metrics always there) in one call, then those put back.
        rows = msgspec.to_builtins([replace(e, samples={}, metrics={}) for e in entries])
        for row, e in zip(rows, entries, strict=True):
            row["samples"], row["metrics"] = e.samples, e.metrics
        out["benchmarks"] = rows
        return out


def _entry(entry: msgspec.Struct, read: bool = True, seen: dict | None = None) -> Any:
    """One entry as `plain` gives it; `read`: just decoded, so its samples' empty dicts are shared,
    and its metrics' reason messages with those of the document's entries before it (`seen`)."""
    if isinstance(entry, ResultsEntry):  # stays a Struct; what it holds besides samples becomes plain
        if read:
            share_empty(entry.samples)
        if not (isinstance(entry.quality, msgspec.Struct) or isinstance(entry.instructions, msgspec.Struct)):
            return entry  # most: a dict comprehension per entry is a cost on every read (docs/experiments.md)
        typed = {key: msgspec.to_builtins(getattr(entry, key)) for key in ("quality", "instructions")
                 if isinstance(getattr(entry, key), msgspec.Struct)}
        return replace(entry, **typed)
    if not isinstance(entry, Entry):
        return msgspec.to_builtins(entry)
    samples, metrics = getattr(entry, "samples", UNSET), getattr(entry, "metrics", UNSET)
    if samples is not UNSET and read:
        for rows in samples.values():
            share_empty(rows)
    if metrics is not UNSET and read and seen is not None:
        share_messages(metrics, seen)
    # Emptied, not left out: the key keeps its place in the dict.
    out = msgspec.to_builtins(replace(entry, **({"samples": {}} if samples is not UNSET else {}),
                                      **({"metrics": {}} if metrics is not UNSET else {})))
    if samples is not UNSET:
        out["samples"] = samples
    if metrics is not UNSET:
        out["metrics"] = metrics
    return out
