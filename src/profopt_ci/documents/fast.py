"""The fast reader of results@1 and comparison@1: bytes in, the document dict (rows as `Row`) out, or None.

In: the raw bytes of a file that may be a results or comparison document. Out: the parsed dict
with every sample row a `documents.records.Row`, already checked against the packaged JSON Schema
(documents.check, which trusts the rows msgspec typed); or None, and then documents.read's plain
reader (json + documents.check) parses the file and words any error. The fast path only
ever says yes to a file the plain one accepts: its types are at least as strict (unknown keys,
other types or numbers out of range send the file to the plain reader), so its result differs
from the plain reader's only in what the rows are and in the order of keys.

Why: a comparison of 10⁵ benchmarks is ~450 MB of JSON and 10⁶ rows. `json.loads` and the
Python validator took ~14 s and ~1.3 GB of objects for it; msgspec decodes typed rows in C.
Which keys each level may have comes from the schemas, plus those profopt writes that the
schemas leave open (`EXTRA`).
"""
from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA, SCHEMA_FILES
from profopt_ci.documents.records import Metric, Rows

# Keys profopt writes at a level whose schema leaves them open (additionalProperties allowed).
EXTRA = {
    "results.entry": ("params", "unit", "items_per_iteration", "profile"),
    "comparison.entry": ("baseline", "new_in_pr", "drift"),
    "results": ("merged_from",),  # profopt merge
    "comparison": (),
}


def decode(raw: bytes) -> dict[str, Any] | None:
    """The document, or None when the fast path does not take it (the plain reader decides)."""
    from profopt_ci.documents.check import Invalid, packaged

    try:
        doc = msgspec.json.decode(raw, type=_document_type())
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        return None
    try:
        data = _to_dict(doc)
        packaged(SCHEMA_FILES[data["schema"]])[1](data)
    except (msgspec.MsgspecError, Invalid, RecursionError, KeyError, TypeError, ValueError):
        return None  # e.g. `samples` missing or not a list: the plain reader words it
    return data


def _rows(raw: msgspec.Raw) -> Rows:
    """A side's rows kept as text, after checking each (types by msgspec, open `quality` here)."""
    from profopt_ci.documents.check import free_check

    rows, decoded = Rows.checked(raw)
    for row in decoded:
        if row.quality:  # open objects in a row: bounded in depth and magnitude like any other
            free_check(row.quality)
    return rows


def _to_dict(doc: msgspec.Struct) -> dict[str, Any]:
    out: dict[str, Any] = {"schema": doc.__struct_config__.tag}
    out.update(_fields(doc))
    benches = out.get("benchmarks")
    if isinstance(benches, dict):  # results@1: {name: entry}, one list of rows each
        out["benchmarks"] = {name: _fields(e) for name, e in benches.items()}
        for entry in out["benchmarks"].values():
            if "samples" in entry:
                entry["samples"] = _rows(entry["samples"])
    elif isinstance(benches, list):  # comparison@1: [entry], rows per side
        out["benchmarks"] = [_fields(e) for e in benches]
        for entry in out["benchmarks"]:
            if isinstance(entry.get("samples"), dict):
                entry["samples"] = {side: _rows(raw) for side, raw in entry["samples"].items()}
    return out


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    return {f: v for f in struct.__struct_fields__ if (v := getattr(struct, f)) is not UNSET}


@functools.lru_cache(maxsize=1)
def _document_type() -> Any:
    """results@1 | comparison@1, tagged by their `schema` key, rows typed as `Row`."""
    from profopt_ci.documents.check import packaged

    results, comparison = packaged(SCHEMA_FILES[RESULTS_SCHEMA])[0], packaged(SCHEMA_FILES[COMPARISON_SCHEMA])[0]
    r_entry = _struct("ResultsEntry", results["properties"]["benchmarks"]["additionalProperties"],
                      EXTRA["results.entry"], {"samples": msgspec.Raw})
    c_entry = _struct("ComparisonEntry", comparison["$defs"]["entry"], EXTRA["comparison.entry"],
                      {"samples": dict[str, msgspec.Raw], "metrics": dict[str, Metric]})
    return (_struct("Results", results, EXTRA["results"], {"benchmarks": dict[str, r_entry]}, tag=RESULTS_SCHEMA)
            | _struct("Comparison", comparison, EXTRA["comparison"], {"benchmarks": list[c_entry]},
                      tag=COMPARISON_SCHEMA))


def _struct(name: str, schema: dict, extra: tuple[str, ...], typed: dict[str, Any], tag: str | None = None) -> Any:
    """A Struct of the schema's keys (each Any but those in `typed`), unknown keys refused."""
    keys = [k for k in schema.get("properties", {}) if k != "schema"] + [k for k in extra]
    fields = [(k, typed.get(k, Any) | UnsetType, UNSET) for k in dict.fromkeys(keys)]
    options: dict[str, Any] = {"tag_field": "schema", "tag": tag} if tag else {}
    return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=True, gc=False, **options)
