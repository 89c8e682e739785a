"""A big results@1 / comparison@1 file read in parts: the same decode into the types, entry by entry.

In: the file's bytes (in a box, taken out of it), its still open descriptor, the name to show and
the document's name. Out: what `documents.read` gives for it (plain dicts and lists, `Sample`s and
`Metric`s), or the same `UsageError`s, the bad entry's path in front (`$.benchmarks[7].rounds`).

Why: decoding a large comparison in one call holds its bytes and every object
built from them at once, several times the file's size (docs/experiments.md). Here one pass types the document's own keys and finds where
each entry's text lies (zero-copy `msgspec.Raw` views); then the bytes go, and the entries are read
back from the file a few MB at a time, each decoded into its type and made plain before the next.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Any

import msgspec
import numpy as np

from profopt_ci.documents import decode as decoded
from profopt_ci.documents.schemas import DOCUMENTS
from profopt_ci.documents.types import Results, ResultsEntry
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.errors import UsageError

PART_BYTES = 8 * 1024 ** 2  # the file's text read back at once


@functools.lru_cache(maxsize=4)
def _outline(kind: type) -> type:
    """The document's type with its entries left as text (`msgspec.Raw`)."""
    fields: list[tuple] = []
    for f in msgspec.structs.fields(kind):
        tp = f.type
        if f.name == "benchmarks":
            tp = dict[str, msgspec.Raw] if kind is Results else list[msgspec.Raw]
        fields.append((f.name, tp) if f.required else (f.name, tp, f.default))
    return msgspec.defstruct(kind.__name__, fields, kw_only=True, forbid_unknown_fields=True, gc=False)


def _address(buffer: Any) -> int:
    return np.frombuffer(buffer, np.uint8).__array_interface__["data"][0]


def read_in_parts(box: list[bytes], fd: int, p: str, name: str) -> dict[str, Any]:
    """The document in `box`, its entries read again from `fd` part by part (the module says why)."""
    from profopt_ci.gc_pause import paused

    raw = box.pop()
    kind = DOCUMENTS[name]
    with paused():
        try:
            top = msgspec.json.decode(raw, type=_outline(kind))
        except msgspec.ValidationError as exc:
            got = decoded._schema_of(raw, p, (name,), strict=False)
            if got != name:
                raise decoded._wrong_schema(p, got, (name,)) from None
            raise decoded._invalid(p, name, exc, raw) from None
        except msgspec.DecodeError as exc:
            raise decoded._malformed(p, raw, (name,), exc) from None
        except RecursionError:
            raise UsageError(f"{p}: nested too deeply — expected a {name} file") from None
        except ValueError as exc:
            raise UsageError(f"{p}: {str(exc)[:200]} — expected a {name} file") from None
        base = _address(raw)
        texts = top.benchmarks
        keyed = isinstance(texts, dict)
        spans = [(key, _address(t) - base, len(memoryview(t))) for key, t in (
            texts.items() if keyed else enumerate(texts))]
        del texts, raw
        top = msgspec.structs.replace(top, benchmarks=[])  # the last views of the bytes: they go now
        entries = _entries(fd, p, name, spans, ResultsEntry if keyed else Entry)
        out = msgspec.to_builtins(top)
        out["benchmarks"] = dict(entries) if keyed else [e for _, e in entries]
        return out


def _entries(fd: int, p: str, name: str, spans: list[tuple[Any, int, int]], kind: type) -> list[tuple[Any, dict]]:
    """Each entry decoded into `kind` from the file, a part of ~PART_BYTES at a time, and made plain."""
    decode = msgspec.json.Decoder(kind).decode
    out: list[tuple[Any, dict]] = []
    seen: dict = {}  # the reason messages of the entries so far (documents.types_comparison.share_messages)
    i = 0
    while i < len(spans):
        j, start = i, spans[i][1]
        while j < len(spans) and (j == i or spans[j][1] + spans[j][2] - start <= PART_BYTES):
            j += 1
        end = spans[j - 1][1] + spans[j - 1][2]
        text = os.pread(fd, end - start, start)
        if len(text) != end - start:
            raise UsageError(f"{p}: changed while it was read — expected a {name} file")
        view = memoryview(text)
        for key, at, size in spans[i:j]:
            part = view[at - start:at - start + size]
            try:
                entry = decode(part)
            except msgspec.ValidationError as exc:
                raise decoded._invalid(p, name, exc, bytes(part), kind=kind, prefix=_prefix(key)) from None
            except (msgspec.DecodeError, RecursionError, ValueError):
                raise UsageError(f"{p}: {_prefix(key)} cannot be read again as it was (changed while it was read?)"
                                      f" — expected a {name} file") from None
            out.append((key, decoded._entry(entry, seen=seen)))
        i = j
    return out


def _prefix(key: Any) -> str:
    """The JSON path of entry `key` (a results@1 name or a comparison@1 index), for its error."""
    return f"$.benchmarks[{json.dumps(key) if isinstance(key, str) else key}]"
