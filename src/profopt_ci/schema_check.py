"""Validate profopt's own JSON documents against their JSON Schemas, fast enough for 10⁵ benchmarks.

In: a parsed document and the name of a packaged schema (`results`, `comparison`). Out: nothing,
or a `UsageError` naming the file and the JSON path of the first bad field with what was expected.

Why not `jsonschema` here: it costs ~10 µs a node, minutes for a comparison of 10⁵ benchmarks.
These schemas use a small subset of draft 2020-12 (type, enum, const, required, properties,
additionalProperties, items, minItems, minimum, exclusiveMinimum, maximum, pattern, $ref to
$defs), which `compile_schema` turns into closures once; any other keyword is refused when the
schema is compiled, so the subset cannot silently grow. The test suite checks that `jsonschema`
agrees on real and fuzzed documents. Also refused: numbers beyond ±1e100 (NaN and inf cannot
parse at all, see results.load_json) and free-form objects nested deeper than MAX_DEPTH.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

from profopt_ci.errors import UsageError

MAX_ABS = 1e100  # figures past this overflow the statistics (squares, products) into inf/NaN
MAX_DEPTH = 32
_SUPPORTED = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "enum", "const", "required",
              "properties", "additionalProperties", "items", "minItems", "minimum", "exclusiveMinimum",
              "maximum", "pattern", "maxLength", "minLength"}
Check = Callable[[Any, list[Any]], None]


class Invalid(Exception):
    def __init__(self, path: list[Any], message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message


def json_path(path: list[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _is_type(value: Any, name: str) -> bool:
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}


def _free(value: Any, path: list[Any], depth: int = 0) -> None:
    """What a schema leaves open (params, quality, evidence) may not nest or overflow either."""
    if depth > MAX_DEPTH:
        raise Invalid(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for k, v in value.items():
            _free(v, path + [k], depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _free(v, path + [i], depth + 1)
    elif isinstance(value, float) and not -MAX_ABS <= value <= MAX_ABS:
        raise Invalid(path, f"is {value:g} — expected a finite number within ±1e100")


def first_bad_number(data: Any) -> list[Any] | None:
    """The path of the first NaN, ±inf or 40+-digit integer in a leniently parsed document."""
    stack: list[tuple[Any, list[Any]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, path + [k]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, path + [i]) for i, v in enumerate(value))
        elif isinstance(value, float) and not -MAX_ABS <= value <= MAX_ABS or (
                isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40):
            return path
    return None


def compile_schema(schema: dict, root: dict | None = None) -> Check:
    root = root or schema
    unknown = set(schema) - _SUPPORTED
    if unknown:
        raise ValueError(f"schema keyword(s) {sorted(unknown)} are outside schema_check's subset")
    if "$ref" in schema:
        target: dict[str, Check] = {}

        def ref(value: Any, path: list[Any]) -> None:  # resolved lazily: refs may be recursive
            if "c" not in target:
                node: Any = root
                for part in schema["$ref"].lstrip("#/").split("/"):
                    node = node[part]
                target["c"] = compile_schema(node, root)
            target["c"](value, path)
        return ref
    checks: list[Check] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]

        def typed(value: Any, path: list[Any]) -> None:
            if not any(_is_type(value, t) for t in types):
                raise Invalid(path, f"is {_kind(value)} — expected {' or '.join(types)}")
            if isinstance(value, float) and not -MAX_ABS <= value <= MAX_ABS:
                raise Invalid(path, f"is {value:g} — expected a finite number within ±1e100")
        checks.append(typed)
    checks.extend(_value_checks(schema))
    if {"properties", "required", "additionalProperties"} & set(schema):
        checks.append(_object_check(schema, root))
    if "items" in schema or "minItems" in schema:
        checks.append(_array_check(schema, root))
    if not {"properties", "required", "additionalProperties", "items"} & set(schema):
        checks.append(_free)  # nothing below is described: still bounded in depth and magnitude

    def run(value: Any, path: list[Any]) -> None:
        for check in checks:
            check(value, path)
    return run


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def _value_checks(schema: dict) -> list[Check]:
    out: list[Check] = []
    if "enum" in schema:
        options = schema["enum"]
        out.append(lambda v, p: None if any(v == o and type(v) is type(o) for o in options)
                   else _fail(p, f"is {json.dumps(v)[:60]} — expected one of {options}"))
    if "const" in schema:
        const = schema["const"]
        out.append(lambda v, p: None if v == const else _fail(p, f"is {json.dumps(v)[:60]} — expected {const!r}"))
    for key, ok in (("minimum", lambda v, b: v >= b), ("exclusiveMinimum", lambda v, b: v > b),
                    ("maximum", lambda v, b: v <= b)):
        if key in schema:
            bound = schema[key]
            out.append(lambda v, p, ok=ok, bound=bound, key=key: None if not _is_type(v, "number") or ok(v, bound)
                       else _fail(p, f"is {v} — expected {key} {bound}"))
    if "pattern" in schema:
        rx = re.compile(schema["pattern"])
        out.append(lambda v, p: None if not isinstance(v, str) or rx.search(v)
                   else _fail(p, f"is {v[:60]!r} — expected to match {schema['pattern']}"))
    return out


def _fail(path: list[Any], message: str) -> None:
    raise Invalid(path, message)


def _object_check(schema: dict, root: dict) -> Check:
    props = {k: compile_schema(v, root) for k, v in (schema.get("properties") or {}).items()}
    required = list(schema.get("required") or [])
    extra = schema.get("additionalProperties", True)
    extra_check = compile_schema(extra, root) if isinstance(extra, dict) else None

    def check(value: Any, path: list[Any]) -> None:
        if not isinstance(value, dict):
            return
        for key in required:
            if key not in value:
                raise Invalid(path, f"has no `{key}` — expected the key `{key}`")
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None:
                sub(item, path + [key])
            elif extra_check is not None:
                extra_check(item, path + [key])
            elif extra is False:
                raise Invalid(path + [key], "is not a known key")
            else:
                _free(item, path + [key])
    return check


def _array_check(schema: dict, root: dict) -> Check:
    items = compile_schema(schema["items"], root) if isinstance(schema.get("items"), dict) else _free
    least = schema.get("minItems", 0)

    def check(value: Any, path: list[Any]) -> None:
        if not isinstance(value, list):
            return
        if len(value) < least:
            raise Invalid(path, f"has {len(value)} item(s) — expected at least {least}")
        for i, item in enumerate(value):
            items(item, path + [i])
    return check


@functools.lru_cache(maxsize=4)
def packaged(name: str) -> tuple[dict, Check]:
    text = resources.files("profopt_ci").joinpath(f"schema/{name}.schema.json").read_text()
    schema = json.loads(text)
    return schema, compile_schema(schema)


def validate(data: Any, name: str, shown: str) -> None:
    """Raise a UsageError naming `shown` and the bad field's path when `data` breaks the schema."""
    _, check = packaged(name)
    try:
        check(data, [])
    except Invalid as exc:
        raise UsageError(f"{shown}: {json_path(exc.path)} {exc.message} (profopt/{name}@1 schema)") from None
    except RecursionError:
        raise UsageError(f"{shown}: nested too deeply — expected a profopt/{name}@1 document") from None

