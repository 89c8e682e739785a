"""The fast reader of results@1 and comparison@1: bytes in, the document dict out, or None.

In: the raw bytes of a file that may be a results or comparison document. Out: the parsed dict,
already checked against the packaged JSON Schema (documents.check, which trusts what msgspec
typed), with each side's sample rows a `documents.records.Rows` (every row checked as a `Row`,
then kept as its JSON text), a comparison's metrics `Metric`s and a results entry a `Record`; or
None, and then documents.read's plain reader (json + documents.check) parses the file and words
any error. The fast path only ever says yes to a file the plain one accepts: its types are at
least as strict (unknown keys, other types or numbers out of range send the file to the plain
reader), so its result differs from the plain reader's only in those types and the order of keys.

Why: a comparison of 10⁵ benchmarks is ~450 MB of JSON and 10⁶ rows. `json.loads` and the
Python validator took ~14 s and ~1.3 GB of objects for it; msgspec decodes typed rows in C.
Which keys each level may have comes from the schemas, plus those profopt writes that the
schemas leave open (`EXTRA`).
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import msgspec
from msgspec import UNSET, UnsetType

from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA, SCHEMA_FILES
from profopt_ci.documents.records import Count, Metric, Number, Record, Rows, Tally

# Keys profopt writes at a level whose schema leaves them open (additionalProperties allowed).
EXTRA = {
    "results.entry": ("params", "unit", "items_per_iteration", "profile"),
    "comparison.entry": ("baseline", "new_in_pr", "drift"),
    "results": ("merged_from",),  # profopt merge
    "comparison": (),
}


def decode(raw: bytes) -> dict[str, Any] | None:
    """The document, or None when the fast path does not take it (the plain reader decides)."""
    from profopt_ci.gc_pause import paused

    kinds = _kinds()
    with paused():  # 10⁶ containers, none in a cycle: the collector's passes over them cost ~20%
        try:
            doc = msgspec.json.decode(raw, type=kinds.document)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
            return None
        return _checked(doc, kinds)


def _checked(doc: Any, kinds: _Kinds) -> dict[str, Any] | None:
    """The decoded document as a dict, once what msgspec could not type is checked; else None."""
    from profopt_ci.documents.check import Invalid, packaged

    try:
        tag = doc.__struct_config__.tag
        entries = doc.benchmarks
        checks = kinds.checks[tag]
        for entry in entries.values() if isinstance(entries, dict) else entries:
            for key, check, empty_ok in checks:  # what msgspec could not type (free-form, nested objects)
                value = getattr(entry, key)
                if value is UNSET or (value is None or value == []) and empty_ok[value is None]:
                    continue  # null or [] where the schema allows it: most entries, no call needed
                check(value)
        data: dict[str, Any] = {"schema": tag, **_fields(doc)}
        packaged(SCHEMA_FILES[tag])[1](data)  # the rest; the entries are Records, taken as checked
        data["benchmarks"] = _entries(entries)
    except (msgspec.MsgspecError, Invalid, RecursionError, KeyError, TypeError, ValueError, AttributeError):
        return None  # e.g. `samples` missing or not a list: the plain reader words it
    return data


def _entries(entries: dict | list) -> dict | list:
    """The entries, each side's rows checked and kept as text (records.Rows): a results@1 entry as
    the Record it was decoded into, a comparison@1 entry as a dict (the report and publishing
    stages annotate them)."""
    if isinstance(entries, dict):  # results@1: {name: entry}, one list of rows each
        for entry in entries.values():  # kept as Records: ~500 bytes less than a dict, 2·10⁵ in a diff
            entry.samples = _rows(entry.samples)
        return entries
    out = [_fields(e) for e in entries]  # comparison@1: [entry], rows per side
    for entry in out:
        if "samples" in entry:
            entry["samples"] = {side: _rows(raw) for side, raw in entry["samples"].items()}
    return out


def _rows(raw: msgspec.Raw) -> Rows:
    """A side's rows kept as text, after checking each (types by msgspec, open `quality` here)."""
    from profopt_ci.documents.check import free_check

    rows, decoded = Rows.checked(raw)
    for quality in [r.quality for r in decoded if r.quality]:
        free_check(quality)  # open objects in a row: bounded in depth and magnitude like any other
    return rows


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    return {f: v for f in struct.__struct_fields__ if (v := getattr(struct, f)) is not UNSET}


class _Kinds(NamedTuple):
    document: Any  # results@1 | comparison@1, tagged by `schema`
    # per document: (entry key, its check, whether the check accepts ([], None))
    checks: dict[str, list[tuple[str, Callable[[Any], None], tuple[bool, bool]]]]


@functools.lru_cache(maxsize=1)
def _kinds() -> _Kinds:
    """The msgspec types of both documents and, per entry key msgspec cannot type as strictly as
    the schema, the schema's own compiled check of it (documents.check)."""
    from profopt_ci.documents.check import packaged

    results, comparison = packaged(SCHEMA_FILES[RESULTS_SCHEMA])[0], packaged(SCHEMA_FILES[COMPARISON_SCHEMA])[0]
    r_entry, r_checks = _entry("ResultsEntry", results["properties"]["benchmarks"]["additionalProperties"],
                               results, EXTRA["results.entry"], {"samples": msgspec.Raw, "unit": str | None,
                                                                  "items_per_iteration": Number | None})
    c_entry, c_checks = _entry("ComparisonEntry", comparison["$defs"]["entry"], comparison, EXTRA["comparison.entry"],
                               {"samples": dict[str, msgspec.Raw], "metrics": dict[str, Metric]})
    document = (_top("Results", results, EXTRA["results"], dict[str, r_entry], RESULTS_SCHEMA)
                | _top("Comparison", comparison, EXTRA["comparison"], list[c_entry], COMPARISON_SCHEMA))
    return _Kinds(document, {RESULTS_SCHEMA: r_checks, COMPARISON_SCHEMA: c_checks})


def _top(name: str, schema: dict, extra: tuple[str, ...], benchmarks: Any, tag: str) -> Any:
    """The document's own keys are few: Any here, checked by the schema afterwards."""
    keys = dict.fromkeys([k for k in schema["properties"] if k not in ("schema", "benchmarks")] + list(extra))
    fields = [(k, Any, UNSET) for k in keys] + [("benchmarks", benchmarks | UnsetType, UNSET)]
    return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=True, tag_field="schema", tag=tag)


def _entry(name: str, schema: dict, root: dict, extra: tuple[str, ...], typed: dict[str, Any]) -> tuple[Any, list]:
    """An entry Struct: `typed` keys, then each key whose schema `_simple` can type exactly; the other
    keys are Any, with their check compiled from the schema (or the free-form check for `extra`)."""
    from profopt_ci.documents.check import compile_schema, free_check

    props, required = schema.get("properties", {}), set(schema.get("required", ()))
    fields, checks = [], []
    for key in dict.fromkeys([*props, *extra]):
        kind = typed.get(key) or (_simple(props[key]) if key in props else None)
        if kind is None:
            kind = Any
            check = compile_schema(props[key], root) if key in props else free_check
            checks.append((key, check, (_accepts(check, []), _accepts(check, None))))
        fields.append((key, kind) if key in required else (key, kind | UnsetType, UNSET))
    return msgspec.defstruct(name, fields, bases=(Record,), kw_only=True, forbid_unknown_fields=True,
                             gc=False), checks


def _accepts(check: Callable[[Any], None], value: Any) -> bool:
    from profopt_ci.documents.check import Invalid

    try:
        check(value)
    except Invalid:
        return False
    return True


_SCALARS = {"string": str, "boolean": bool, "null": None, "number": Number, "integer": Count}


def _simple(prop: dict) -> Any | None:
    """The msgspec type exactly as strict as a simple property schema, or None (checked in Python)."""
    keys = set(prop) - {"description", "title"}
    if keys == {"enum"} and all(isinstance(v, str) or v is None for v in prop["enum"]):
        names = tuple(v for v in prop["enum"] if v is not None)
        kind = Literal[names] if names else None
        return (kind | None if kind is not None else None) if None in prop["enum"] else kind
    if keys == {"type", "minimum"} and prop["type"] == "integer" and prop["minimum"] == 0:
        return Tally
    if keys == {"type", "additionalProperties"} and prop["type"] == "object":
        inner = _simple(prop["additionalProperties"]) if isinstance(prop["additionalProperties"], dict) else None
        return dict[str, inner] if inner is not None else None
    if keys != {"type"}:
        return None
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if not all(t in _SCALARS for t in types):
        return None
    return functools.reduce(operator.or_, [_SCALARS[t] for t in types])
