"""The checks of a spec's data: conversion into the typed model, then the rules a type cannot say.

In: the constructed spec data, its composed YAML node and the name to show. Out: the spec as
`SpecKeys` (specfile/keys.py, by `msgspec.convert`), or a `SpecError` with every problem as one
`FILE:LINE:COL: what is wrong — what was expected` line, sorted by position. A spec the model
refuses is walked along the model (each mapping, list and value converted on its own) so every
problem is named, not only the first; unknown keys get a close-match suggestion. The rules
(unique names, exactly one of callable/command, percentages, rounds ≤ max_rounds, one rule per
constraint, hostile values: specfile/guard.py) run only when the model found nothing, so one typo
is not reported three ways.
"""
from __future__ import annotations

import difflib
import functools
import math
import re
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
import yaml
from msgspec import Struct, UnsetType

from profopt_ci.errors import SpecError
from profopt_ci.specfile.guard import label, number_text, value_problems
from profopt_ci.specfile.keys import PERCENT_KEYS, SETTING_KEYS, SUITE_KINDS, SpecKeys, metas
from profopt_ci.specfile.model import parse_duration, parse_percent
from profopt_ci.specfile.yamlnodes import node_at, where

Found = Iterator[tuple[list[Any], str]]
_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", dict: "a mapping of keys",
          list: "a list"}
_RULES = ("rel_tol", "abs_tol", "equal")


def checked(data: Any, node: yaml.Node, shown: str) -> SpecKeys:
    """The spec as the typed model, or a `SpecError` naming every problem where it is."""
    if not isinstance(data, dict):
        raise SpecError([f"{where(shown, node.start_mark)}: the spec is {_type_name(data)} — expected a mapping "
                         "with `version` and `benchmarks`"])
    try:
        spec = msgspec.convert(data, SpecKeys)
    except msgspec.ValidationError as exc:
        found = list(_problems(data, SpecKeys, [])) or [([], f"the spec: {exc}", False)]
    else:
        found = [(path, msg, False) for path, msg in _rules(data)]
    if not found:
        return spec
    lines = set()
    for path, msg, is_key in found:
        target = node_at(node, path, key=is_key)
        mark = target.start_mark if target is not None else None
        lines.add((mark.line if mark else 0, mark.column if mark else 0, f"{where(shown, mark)}: {msg}"))
    raise SpecError([text for _, _, text in sorted(lines)])


# ---- the model's problems, all of them --------------------------------------------------------


def _base(tp: Any) -> Any:
    """The type without its Annotated metadata and without UNSET."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, types.UnionType):
            rest = [a for a in get_args(tp) if a is not UnsetType]
            if len(rest) > 1:
                return Union[tuple(rest)]  # noqa: UP007  (a tuple of types: no `|` spelling)
            tp = rest[0]
        else:
            return tp


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Struct)


@functools.cache
def _fields(cls: type[Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    return {f.encode_name: f for f in msgspec.structs.fields(cls)}


def _problems(value: Any, tp: Any, path: list[Any]) -> Iterator[tuple[list[Any], str, bool]]:
    base = _base(tp)
    container = dict if _is_struct(base) else get_origin(base)
    if container in (dict, list) and not isinstance(value, container):
        yield path, f"`{label(path)}` is {_type_name(value)} — expected {_words(base)}", False
    elif _is_struct(base):
        yield from _struct(value, base, path)
    elif container is list and _is_struct(get_args(base)[0]):
        least = next((m.min_length for m in metas(tp) if m.min_length), 0)
        if len(value) < least:
            yield path, f"`{label(path)}` is empty — expected at least {least} item(s)", False
        for i, item in enumerate(value):
            yield from _problems(item, get_args(base)[0], path + [i])
    elif container is dict:
        for k, v in value.items():
            if not isinstance(k, str):
                yield path + [k], f"`{label(path)}` has the key {k!r} ({type(k).__name__}) — expected string keys", False
            else:
                yield from _problems(v, get_args(base)[1], path + [k])
    else:
        msg = _leaf(value, tp, path)
        if msg:
            yield path, msg, False


def _struct(value: dict[Any, Any], cls: type[Struct], path: list[Any]) -> Iterator[tuple[list[Any], str, bool]]:
    try:
        msgspec.convert(value, cls)
        return
    except msgspec.ValidationError:
        pass
    fields = _fields(cls)
    suggested = set()
    for key in value:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            suggested.update(close)
            own_first = sorted(fields, key=lambda k: k in SETTING_KEYS)
            hint = f"did you mean `{close[0]}`?" if close else f"expected one of: {', '.join(own_first)}"
            yield path + [key], f"unknown key `{key}` — {hint}", True
    for key, f in fields.items():
        if key in value:
            yield from _problems(value[key], f.type, path + [key])
        elif f.required and key not in suggested:  # `benchmark` → `benchmarks` says it better
            owner = "every benchmark" if path[:1] == ["benchmarks"] and len(path) == 2 else (
                f"`{label(path)}`" if path else "the spec")
            yield path, f"missing `{key}` — {owner} needs `{key}`", False


def _leaf(value: Any, tp: Any, path: list[Any]) -> str | None:
    try:
        msgspec.convert(value, tp)
        return None
    except msgspec.ValidationError:
        pass
    base, found = _base(tp), metas(tp)
    said = next((m.extra["expected"] for m in found if m.extra and "expected" in m.extra), None)
    if isinstance(value, float) and not math.isfinite(value):
        return f"`{label(path)}` is {value} — expected a finite number"
    if not isinstance(value, bool) and isinstance(value, {int: int, float: (int, float), str: str}.get(base, ())):
        for m in found:
            broken = _broken(value, m, said)
            if broken:
                return f"`{label(path)}` {broken}"
    return f"`{label(path)}` is {_type_name(value)} — expected {said or _words(base)}"


def _broken(value: Any, m: msgspec.Meta, said: str | None) -> str | None:
    """The constraint of `m` that a value of the right type breaks, in words."""
    if isinstance(value, str):
        if m.min_length and len(value) < m.min_length:
            return "is empty — expected some text"
        if m.max_length and len(value) > m.max_length:
            return f"is {len(value)} characters long — expected at most {m.max_length}"
        if m.pattern and not re.search(m.pattern, value):
            return f"is {value!r} — expected {said or 'text matching ' + m.pattern}"
        return None
    if m.ge is not None and value < m.ge:
        return f"is {number_text(value)} — expected a value ≥ {m.ge}"
    if m.gt is not None and value <= m.gt:
        return f"is {number_text(value)} — expected a value > {m.gt}"
    if m.le is not None and value > m.le:
        return f"is {number_text(value)} — expected at most {m.le:g}"
    return None


def _words(tp: Any) -> str:
    base = _base(tp)
    if get_origin(base) is Literal:
        return "one of: " + ", ".join(str(v) for v in get_args(base))
    if get_origin(base) in (Union, types.UnionType):
        return " or ".join(_words(a) for a in get_args(base))
    return _WORDS.get(dict if _is_struct(base) else (get_origin(base) or base), str(base))


def _type_name(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {number_text(value) if isinstance(value, int) else value}"
    if isinstance(value, str):
        return f"the string {value[:200]!r}"
    return {list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


# ---- rules a type cannot say ------------------------------------------------------------------


def _rules(data: dict[str, Any]) -> Found:
    yield from value_problems(data)
    d = data.get("defaults") or {}
    yield from _percent_problems(d, ["defaults"])
    if "time_budget" in d:
        try:
            parse_duration(d["time_budget"])
        except ValueError as exc:
            yield ["defaults", "time_budget"], f"`defaults.time_budget`: {exc}"
    if isinstance(data.get("cpuset"), str):
        from profopt_ci.cpulists import parse_cpuset

        try:
            parse_cpuset(data["cpuset"])
        except ValueError as exc:
            yield ["cpuset"], f"`cpuset`: {exc}"
    if "rounds" in d and "max_rounds" in d and d["max_rounds"] < d["rounds"]:
        yield ["defaults", "max_rounds"], (f"`defaults.max_rounds` ({d['max_rounds']}) is below `rounds` "
                                           f"({d['rounds']}) — expected max_rounds ≥ rounds")
    seen: dict[str, int] = {}
    for i, b in enumerate(data.get("benchmarks") or []):
        at = ["benchmarks", i]
        if b["name"] in seen:
            yield at + ["name"], (f"benchmark name `{b['name']}` is used twice (first at benchmarks[{seen[b['name']]}]) "
                                  "— expected unique names")
        seen.setdefault(b["name"], i)
        if "callable" in b and "command" in b:
            yield at + ["command"], f"`benchmarks[{i}]` has both `callable` and `command` — expected exactly one"
        elif "callable" not in b and "command" not in b:
            yield at, f"`benchmarks[{i}]` has neither `callable` nor `command` — expected exactly one"
        yield from _percent_problems(b, at)
        goal = b.get("goal") or {}
        yield from _percent_problems(goal, at + ["goal"], ("target",))
        if goal.get("metric") == "throughput" and goal.get("direction") == "decrease":
            yield at + ["goal", "direction"], "`goal.direction` is decrease for throughput — expected increase"
        if "command" in b and "params" in b:
            yield at + ["params"], (f"`benchmarks[{i}].params` is set on a command — expected params only with "
                                    "`callable` (put them in the command line)")
        yield from _constraint_problems(b, at)
    if "benchmarks" not in data and "suites" not in data:
        yield [], "missing `benchmarks` — the spec needs `benchmarks` (or `suites`)"
    for i, item in enumerate(data.get("suites") or []):
        kinds = [k for k in SUITE_KINDS if k in item]
        if len(kinds) != 1:
            yield ["suites", i], (f"`suites[{i}]` names {', '.join(kinds) or 'none'} — expected exactly one of "
                                  f"{', '.join(SUITE_KINDS)} (e.g. {{pytest: tests/bench/}})")
        elif str(item[kinds[0]]).startswith(("/", "~")):
            # a suite runs from a checkout of each side: a path outside it is neither side's code
            yield ["suites", i, kinds[0]], (f"`suites[{i}].{kinds[0]}` is {str(item[kinds[0]])!r}, outside the "
                                            "repository — expected a folder or file relative to the spec "
                                            "(e.g. tests/bench/)")
        yield from _constraint_problems(item, ["suites", i])
        yield from _percent_problems(item, ["suites", i])


def _constraint_problems(item: dict[str, Any], at: list[Any]) -> Found:
    for j, c in enumerate(item.get("constraints") or []):
        rules = [k for k in _RULES if k in c]
        if len(rules) != 1:
            yield at + ["constraints", j], (f"constraint on `{c['metric']}` has {', '.join(rules) or 'none'} — "
                                            f"expected exactly one of {', '.join(_RULES)}")


def _percent_problems(item: dict[str, Any], at: list[Any], keys: tuple[str, ...] = PERCENT_KEYS) -> Found:
    for key in keys:
        if key in item:
            try:
                parse_percent(item[key])
            except ValueError as exc:
                yield at + [key], f"`{label(at + [key])}`: {exc}"
