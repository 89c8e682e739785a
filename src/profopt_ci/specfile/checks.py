"""The checks of a spec's data: the JSON Schema shipped in the package, then the rules it cannot say.

In: the constructed spec data, its composed YAML node and the name to show. Out: every problem as
one `FILE:LINE:COL: what is wrong — what was expected` line, sorted by position (empty: the spec
is good). Unknown keys get a close-match suggestion; semantic rules (duplicate benchmark names,
exactly one of callable/command, percentages, rounds ≤ max_rounds, one rule per constraint) run
only when the schema found nothing, so one typo is not reported three ways.
"""
from __future__ import annotations

import difflib
import functools
import json
from importlib import resources
from typing import Any

import jsonschema
import yaml

from profopt_ci.specfile.guard import value_problems
from profopt_ci.specfile.model import parse_percent
from profopt_ci.specfile.yamlnodes import node_at, where


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema())


def schema() -> dict[str, Any]:
    """The packaged JSON Schema of profopt.yml (schema/profopt.schema.json)."""
    text = resources.files("profopt_ci").joinpath("schema/profopt.schema.json").read_text()
    return json.loads(text)


def _type_name(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_EXPECTED = {
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "object": "a mapping of keys",
    "array": "a list",
    "boolean": "true or false",
}


def _label(path: list[Any]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the spec"


def _describe(err: jsonschema.ValidationError) -> str | None:
    path = list(err.absolute_path)
    label = _label(path)
    v = err.validator
    if v == "additionalProperties":
        return None  # reported by _unknown_keys with a suggestion
    if v == "type":
        types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        want = " or ".join(_EXPECTED.get(t, t) for t in types)
        return f"`{label}` is {_type_name(err.instance)} — expected {want}"
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        if path and path[0] == "benchmarks" and len(path) == 2:
            where = "every benchmark"
        else:
            where = f"`{label}`" if path else "the spec"
        return f"missing `{missing}` — {where} needs `{missing}`"
    if v == "const" and path == ["version"]:
        return f"`version` is {_type_name(err.instance)} — expected 1 (the only spec version)"
    if v == "enum":
        options = ", ".join(str(o) for o in err.validator_value)
        return f"`{label}` is {_type_name(err.instance)} — expected one of: {options}"
    if v == "pattern" and path and path[-1] == "callable":
        return f"`{label}` is {err.instance!r} — expected `module:function` (e.g. bench.train:make_step)"
    if v == "pattern" and path and path[-1] == "name":
        return f"`{label}` is {err.instance!r} — expected letters, digits, '.', '_' or '-' (no spaces)"
    if v in ("minimum", "exclusiveMinimum"):
        op = "≥" if v == "minimum" else ">"
        return f"`{label}` is {err.instance} — expected a value {op} {err.validator_value}"
    if v == "minItems":
        return f"`{label}` is empty — expected at least {err.validator_value} item(s)"
    if v == "oneOf" and path and path[-1] == "command":
        return f"`{label}` is {_type_name(err.instance)} — expected a command string or a list of arguments"
    if v == "oneOf" and path and path[-1] == "instrument":
        return f"`{label}` is {_type_name(err.instance)} — expected walltime, instructions, or a list of both"
    if v == "oneOf" and path == ["setup"]:
        return f"`setup` is {_type_name(err.instance)} — expected a shell command or a list of them"
    return f"`{label}`: {err.message}"


def _unknown_keys(data: Any, sch: dict[str, Any], root: dict[str, Any], path: list[Any]):
    if "$ref" in sch:
        sch = _deref(root, sch["$ref"])
    if isinstance(data, dict) and sch.get("type") == "object" and sch.get("additionalProperties") is False:
        props = sch.get("properties", {})
        for key, value in data.items():
            if key not in props:
                close = difflib.get_close_matches(str(key), list(props), n=1, cutoff=0.6)
                hint = f"did you mean `{close[0]}`?" if close else f"expected one of: {', '.join(props)}"
                yield path + [key], f"unknown key `{key}` — {hint}"
            else:
                yield from _unknown_keys(value, props[key], root, path + [key])
    elif isinstance(data, list) and isinstance(sch.get("items"), dict):
        for i, item in enumerate(data):
            yield from _unknown_keys(item, sch["items"], root, path + [i])


def _deref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    cur: Any = root
    for part in ref.lstrip("#/").split("/"):
        cur = cur[part]
    return cur


# ---- rules a schema cannot say ---------------------------------------------------------------


def _semantic(data: dict[str, Any]):
    yield from value_problems(data)
    for key in ("threshold", "memory_tolerance", "instructions_threshold"):
        if key in (data.get("defaults") or {}):
            yield from _percent_problem(data["defaults"][key], ["defaults", key])
    if isinstance(data.get("cpuset"), str):
        from profopt_ci.cpulists import parse_cpuset

        try:
            parse_cpuset(data["cpuset"])
        except ValueError as exc:
            yield ["cpuset"], f"`cpuset`: {exc}"
    d = data.get("defaults") or {}
    if isinstance(d.get("rounds"), int) and isinstance(d.get("max_rounds"), int) and d["max_rounds"] < d["rounds"]:
        yield ["defaults", "max_rounds"], f"`defaults.max_rounds` ({d['max_rounds']}) is below `rounds` ({d['rounds']}) — expected max_rounds ≥ rounds"
    seen: dict[str, int] = {}
    for i, b in enumerate(data.get("benchmarks") or []):
        if not isinstance(b, dict):
            continue
        name = b.get("name")
        if isinstance(name, str):
            if name in seen:
                yield ["benchmarks", i, "name"], f"benchmark name `{name}` is used twice (first at benchmarks[{seen[name]}]) — expected unique names"
            seen.setdefault(name, i)
        has_callable, has_command = "callable" in b, "command" in b
        if has_callable and has_command:
            yield ["benchmarks", i, "command"], f"`benchmarks[{i}]` has both `callable` and `command` — expected exactly one"
        elif not has_callable and not has_command:
            yield ["benchmarks", i], f"`benchmarks[{i}]` has neither `callable` nor `command` — expected exactly one"
        for key in ("threshold", "memory_tolerance", "instructions_threshold"):
            if key in b:
                yield from _percent_problem(b[key], ["benchmarks", i, key])
        goal = b.get("goal")
        if isinstance(goal, dict) and "target" in goal:
            yield from _percent_problem(goal["target"], ["benchmarks", i, "goal", "target"])
        if isinstance(goal, dict) and goal.get("metric") == "throughput" and goal.get("direction") == "decrease":
            yield ["benchmarks", i, "goal", "direction"], "`goal.direction` is decrease for throughput — expected increase"
        if has_command and "params" in b:
            yield ["benchmarks", i, "params"], f"`benchmarks[{i}].params` is set on a command — expected params only with `callable` (put them in the command line)"
        for j, c in enumerate(b.get("constraints") or []):
            if isinstance(c, dict):
                rules = [k for k in ("rel_tol", "abs_tol", "equal") if k in c]
                if len(rules) != 1:
                    got = ", ".join(rules) or "none"
                    yield ["benchmarks", i, "constraints", j], f"constraint on `{c.get('metric')}` has {got} — expected exactly one of rel_tol, abs_tol, equal"
    yield from _suite_problems(data)


def _suite_problems(data: dict[str, Any]):
    """`suites:` items name exactly one kind; a spec needs benchmarks or suites."""
    if "benchmarks" not in data and "suites" not in data:
        yield [], "missing `benchmarks` — the spec needs `benchmarks` (or `suites`)"
    for i, item in enumerate(data.get("suites") or []):
        kinds = [k for k in ("pytest", "asv", "pyperf") if k in item]
        if len(kinds) != 1:
            got = ", ".join(kinds) or "none"
            yield ["suites", i], f"`suites[{i}]` names {got} — expected exactly one of pytest, asv, pyperf (e.g. {{pytest: tests/bench/}})"
        for j, c in enumerate(item.get("constraints") or []):
            rules = [k for k in ("rel_tol", "abs_tol", "equal") if k in c]
            if len(rules) != 1:
                yield ["suites", i, "constraints", j], f"constraint on `{c.get('metric')}` has {', '.join(rules) or 'none'} — expected exactly one of rel_tol, abs_tol, equal"
        for key in ("threshold", "memory_tolerance", "instructions_threshold"):
            if key in item:
                yield from _percent_problem(item[key], ["suites", i, key])


def _percent_problem(value: Any, path: list[Any]):
    try:
        parse_percent(value)
    except ValueError as exc:
        yield path, f"`{_label(path)}`: {exc}"


def check(data: Any, node: yaml.Node, shown: str) -> list[str]:
    if not isinstance(data, dict):
        return [f"{where(shown, node.start_mark)}: the spec is {_type_name(data)} — expected a mapping with `version` and `benchmarks`"]
    sch = schema()
    found: list[tuple[list[Any], str, bool]] = []
    suggested: set[tuple[Any, ...]] = set()  # (path…, key) a typo already points at
    for path, msg in _unknown_keys(data, sch, sch, []):
        found.append((path, msg, True))
        if "did you mean `" in msg:
            suggested.add((*path[:-1], msg.split("did you mean `")[1].split("`")[0]))
    errors = _validator().iter_errors(data)  # the one validator of profopt.yml (documents use msgspec)
    for err in errors:
        if err.validator == "required" and "'" in err.message:
            if (*err.absolute_path, err.message.split("'")[1]) in suggested:
                continue  # `benchmark` → `benchmarks` says it better than "missing benchmarks"
        msg = _describe(err)
        if msg:
            found.append((list(err.absolute_path), msg, False))
    if not found:
        for path, msg in _semantic(data):
            found.append((path, msg, False))
    lines = []
    for path, msg, is_key in found:
        target = node_at(node, path, key=is_key)
        mark = target.start_mark if target is not None else None
        lines.append((mark.line if mark else 0, mark.column if mark else 0, f"{where(shown, mark)}: {msg}"))
    return [text for _, _, text in sorted(set(lines))]
