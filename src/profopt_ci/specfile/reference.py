"""docs/spec.md, the reference of every profopt.yml key, generated from the typed model (specfile/keys.py).

In: the Structs of specfile/keys.py (`SpecKeys`, `Defaults`, `Settings`, `BenchmarkKeys`,
`SuiteKeys`, `GoalKeys`, `ConstraintKeys`), their Metas' descriptions, `DEFAULTS` and
`LOCKSTEP_DEFAULTS`. Out: `markdown()`, the page's text. The page is
written and checked by `python -m profopt_ci.cli.reference --write` / `--check` with the other
generated docs; a key added to the model shows up here without anyone copying it.
"""
from __future__ import annotations

import json
import types
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from msgspec import Meta

from profopt_ci.specfile import keys
from profopt_ci.specfile.keys import (
    DEFAULTS,
    LOCKSTEP_DEFAULTS,
    SETTING_KEYS,
    BenchmarkKeys,
    ConstraintKeys,
    Defaults,
    GoalKeys,
    Settings,
    SpecKeys,
    SuiteKeys,
)

SCHEMA_LINE = ("# yaml-language-server: $schema=https://raw.githubusercontent.com/org/profopt-action/v1/"
               "src/profopt_ci/schema/profopt.schema.json")
# Each table: its heading (the anchor other pages link to), the Struct, and the keys it leaves out.
SECTIONS: list[tuple[str, type[msgspec.Struct], str]] = [
    ("Top level", SpecKeys, "The document's own keys."),
    ("Settings", Defaults, "How to measure and judge. Each goes in `defaults` (for every benchmark and suite "
                           "item), or in one benchmark or suite item, which then wins. A flag of `compare` "
                           "(`--pairing`, `--cpuset`, `--rounds`, `--max-rounds`, `--threshold`, `--instrument`, "
                           "`--confirm`) wins over both."),
    ("Benchmarks", BenchmarkKeys, "Each item of `benchmarks:`, besides the settings: exactly one of `callable` "
                                  "and `command`."),
    ("Suites", SuiteKeys, "Each item of `suites:`, besides the settings: exactly one of `pytest`, `asv` and "
                          "`pyperf` ([suites.md](suites.md))."),
    ("Goal", GoalKeys, "A benchmark's `goal:`."),
    ("Constraints", ConstraintKeys, "Each item of a benchmark's or suite item's `constraints:`: exactly one of "
                                    "`rel_tol`, `abs_tol` and `equal`."),
]
# How a key whose value is one of these Structs (or a list of them) names it: the words and the table.
LINKS = {"Defaults": ("the [settings](#settings)", "[settings](#settings)"),
         "BenchmarkKeys": ("a [benchmark](#benchmarks)", "[benchmarks](#benchmarks)"),
         "SuiteKeys": ("a [suite item](#suites)", "[suite items](#suites)"),
         "GoalKeys": ("a [goal](#goal)", "[goals](#goal)"),
         "ConstraintKeys": ("a [constraint](#constraints)", "[constraints](#constraints)")}


def markdown() -> str:
    model = msgspec.json.schema(SpecKeys)["$defs"]
    out = ["# profopt.yml reference", "",
           "<!-- Generated from src/profopt_ci/specfile/keys.py by `python -m profopt_ci.cli.reference --write`; "
           "do not edit by hand. -->", "",
           "`profopt.yml` sits at the root of your repository. `profopt validate` checks it and prints each "
           "problem as `profopt.yml:LINE:COL: what is wrong — what was expected`. This first line points editors "
           "that speak the YAML language server at the JSON Schema shipped in the package "
           "(`src/profopt_ci/schema/profopt.schema.json`), for completion and checks as you type:", "",
           "```yaml", SCHEMA_LINE, "```", "",
           " · ".join(f"[{title.lower()}](#{title.lower().replace(' ', '-')})" for title, _, _ in SECTIONS), ""]
    for title, cls, intro in SECTIONS:
        out += [f"## {title}", "", intro, "", "| key | type | default | what |", "| --- | --- | --- | --- |"]
        own = _own_fields(cls)
        props = model[cls.__name__]["properties"]
        for f in own:
            out.append(_row(cls, f, props[f.encode_name]))
        out.append("")
    return "\n".join(out)


def _own_fields(cls: type[msgspec.Struct]) -> list[msgspec.structs.FieldInfo]:
    """The fields a table lists: a benchmark's or suite item's settings are in their own table."""
    fields = msgspec.structs.fields(cls)
    if cls in (BenchmarkKeys, SuiteKeys):
        return [f for f in fields if f.name not in SETTING_KEYS]
    return list(fields)


def _row(cls: type, f: msgspec.structs.FieldInfo, node: dict[str, Any]) -> str:
    what = node.get("description", "")
    if cls is Defaults and f.name not in Settings.__struct_fields__:
        what = f"{what} (in `defaults` only)"
    return f"| `{f.encode_name}` | {_cell(_type(f, node))} | {_cell(_default(f))} | {_cell(what)} |"


def _type(f: msgspec.structs.FieldInfo, node: dict[str, Any]) -> str:
    found = _outer_metas(f.type)
    if keys._PERCENT in found:
        return "percentage, e.g. `3%`"
    said = next((m.extra["expected"] for m in reversed(found) if m.extra and "expected" in m.extra), None)
    return said or _schema_type(node)


def _outer_metas(tp: Any) -> list[Meta]:
    """The Metas of a key's own type, through Annotated and unions but not into a list's or a mapping's
    items (`env`'s values say what they expect, not `env`)."""
    if get_origin(tp) is Annotated:
        return [m for m in tp.__metadata__ if isinstance(m, Meta)] + _outer_metas(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        return [m for a in get_args(tp) for m in _outer_metas(a)]
    return []


def _schema_type(node: dict[str, Any], plural: bool = False) -> str:
    """A JSON Schema node of the model in words (`plural`: as the items of a list or a mapping)."""
    if "$ref" in node:
        return LINKS[node["$ref"].rsplit("/", 1)[1]][plural]
    if "enum" in node:
        return " · ".join(f"`{json.dumps(v).strip(chr(34))}`" for v in node["enum"])
    if "anyOf" in node:
        kinds = node["anyOf"]
        if {"type": "number"} in kinds:  # a whole number is a number
            kinds = [n for n in kinds if n != {"type": "integer"}]
        said = [_schema_type(n, plural) for n in kinds]
        return ", ".join(said[:-1]) + " or " + said[-1]
    kind = node.get("type")
    if kind == "array":
        return f"{'non-empty ' if node.get('minItems') else ''}list of {_schema_type(node['items'], True)}"
    if kind == "object":
        values = node.get("additionalProperties")
        return f"mapping of names to {_schema_type(values, True)}" if values else "mapping of names to values"
    if kind == "integer" and node.get("minimum", -1) >= 0:
        return f"whole number ≥ {node['minimum']}"
    if kind == "number" and "exclusiveMinimum" in node:
        return f"number > {_num(node['exclusiveMinimum'])}"
    if kind == "number" and "minimum" in node:
        return f"number ≥ {_num(node['minimum'])}"
    words = {"string": ("text", "texts"), "boolean": ("true/false", "true/false"),
             "integer": ("whole number", "whole numbers"), "number": ("number", "numbers")}
    return words.get(kind, ("any value", "any values"))[plural]


def _default(f: msgspec.structs.FieldInfo) -> str:
    if f.name in LOCKSTEP_DEFAULTS:
        return (f"{_value(LOCKSTEP_DEFAULTS[f.name])} (`pairing: lockstep`), "
                f"{_value(getattr(DEFAULTS, f.name))} (`pairing: rounds`)")
    if f.name == "short_round_ms":  # where only round_ms is set, a short step's round is that long too
        return f"{_value(DEFAULTS.short_round_ms)}; `round_ms` where only that is set"
    if getattr(DEFAULTS, f.name, msgspec.UNSET) is not msgspec.UNSET:  # a setting: DEFAULTS holds its default
        return _value(getattr(DEFAULTS, f.name))
    if f.required:
        return "required"
    if f.default in (msgspec.UNSET, msgspec.NODEFAULT):
        return "—"
    return _value(f.default)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if isinstance(v, float):
        return f"`{_num(v)}`"
    return f"`{v}`"


def _num(v: float) -> str:
    return f"{v:g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("\n", " ")
