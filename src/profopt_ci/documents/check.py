"""Validate profopt's own JSON documents against their JSON Schemas, fast enough for 10⁵ benchmarks.

In: a parsed document and the name of a packaged schema (`results`, `comparison`, `baseline`,
`sides`). Out: nothing, or a `UsageError` naming the file and the JSON path of the first bad field
with what was expected.

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

from profopt_ci.documents.records import TRUSTED
from profopt_ci.errors import UsageError

MAX_ABS = 1e100  # figures past this overflow the statistics (squares, products) into inf/NaN
MAX_INT = 10**40  # read.py refuses longer integers while parsing; the fast reader (msgspec) here
MAX_DEPTH = 32
_SUPPORTED = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "enum", "const", "required",
              "properties", "additionalProperties", "items", "minItems", "minimum", "exclusiveMinimum",
              "maximum", "pattern", "maxLength", "minLength", "uniqueItems", "oneOf"}
Check = Callable[[Any], None]


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


_EXACT = {"number": (int, float), "integer": (int,), "string": (str,), "object": (dict,), "array": (list,),
          "boolean": (bool,), "null": (type(None),)}
_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}


def _flat(values: Any) -> bool:
    """Every value a string, boolean, null or a number within bounds (else `_free` walks them)."""
    for v in values:
        kind = type(v)
        if kind is str or kind is bool or v is None or (kind is int and -MAX_INT < v < MAX_INT) or (
                kind is float and -MAX_ABS <= v <= MAX_ABS):
            continue
        return False
    return True


def _free(value: Any, depth: int = 0) -> None:
    """What a schema leaves open (params, quality, evidence) may not nest or overflow either."""
    if depth > MAX_DEPTH:
        raise Invalid([], f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        if _flat(value.values()):
            return  # scalars within bounds (most params): no call per value
        for k, v in value.items():
            _within(k, _free, v, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _within(i, _free, v, depth + 1)
    elif isinstance(value, float) and not -MAX_ABS <= value <= MAX_ABS:
        raise Invalid([], f"is {value:g} — expected a finite number within ±1e100")
    elif type(value) is int and not -MAX_INT < value < MAX_INT:
        raise Invalid([], "is an integer of more than 40 digits")


free_check = _free  # for documents.fast: a row's open `quality` object


def _within(key: Any, check: Callable[..., None], value: Any, *args: Any) -> None:
    """Run a check on a child; on failure the child's key goes in front of the error's path."""
    try:
        check(value, *args)
    except Invalid as exc:
        exc.path.insert(0, key)
        raise


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

        def ref(value: Any) -> None:  # resolved lazily: refs may be recursive
            if "c" not in target:
                node: Any = root
                for part in schema["$ref"].lstrip("#/").split("/"):
                    node = node[part]
                target["c"] = compile_schema(node, root)
            target["c"](value)
        return ref
    checks: list[Check] = []
    leaf = False  # typed as scalars only: `typed` already bounds the number, nothing can nest below
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        exact = frozenset(t for name in types for t in _EXACT[name])  # parsed JSON has exact types

        def typed(value: Any) -> None:
            kind = type(value)
            if kind not in exact:
                if isinstance(value, TRUSTED):
                    return  # msgspec typed it on reading, at least as strictly (documents/records.py)
                raise Invalid([], f"is {_kind(value)} — expected {' or '.join(types)}")
            if kind is float and not -MAX_ABS <= value <= MAX_ABS:
                raise Invalid([], f"is {value:g} — expected a finite number within ±1e100")
            if kind is int and not -MAX_INT < value < MAX_INT:
                raise Invalid([], "is an integer of more than 40 digits")
        checks.append(typed)
        leaf = not {"object", "array"} & set(types)
    checks.extend(_value_checks(schema))
    if {"properties", "required", "additionalProperties"} & set(schema):
        checks.append(_object_check(schema, root))
    if "items" in schema or "minItems" in schema or "uniqueItems" in schema:
        checks.append(_array_check(schema, root))
    if "oneOf" in schema:
        checks.append(_one_of([compile_schema(sub, root) for sub in schema["oneOf"]]))
    if not leaf and not {"properties", "required", "additionalProperties", "items", "oneOf"} & set(schema):
        checks.append(_free)  # nothing below is described: still bounded in depth and magnitude

    if len(checks) == 1:
        return checks[0]

    def run(value: Any) -> None:
        for check in checks:
            check(value)
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
        out.append(lambda v: None if any(v == o and type(v) is type(o) for o in options)
                   else _fail(f"is {json.dumps(v, default=str)[:60]} — expected one of {options}"))
    if "const" in schema:
        const = schema["const"]
        out.append(lambda v: None if v == const and type(v) is type(const) else _fail(f"is {json.dumps(v, default=str)[:60]} — expected {const!r}"))
    for key, ok in (("minimum", lambda v, b: v >= b), ("exclusiveMinimum", lambda v, b: v > b),
                    ("maximum", lambda v, b: v <= b)):
        if key in schema:
            bound = schema[key]
            out.append(lambda v, ok=ok, bound=bound, key=key: None if not _is_type(v, "number") or ok(v, bound)
                       else _fail(f"is {v} — expected {key} {bound}"))
    for key, ok in (("minLength", lambda v, b: len(v) >= b), ("maxLength", lambda v, b: len(v) <= b)):
        if key in schema:
            bound = schema[key]
            out.append(lambda v, ok=ok, bound=bound, key=key: None if not isinstance(v, str) or ok(v, bound)
                       else _fail(f"has {len(v)} character(s) — expected {key} {bound}"))
    if "pattern" in schema:
        rx = re.compile(schema["pattern"])
        out.append(lambda v: None if not isinstance(v, str) or rx.search(v)
                   else _fail(f"is {v[:60]!r} — expected to match {schema['pattern']}"))
    return out


def _one_of(options: list[Check]) -> Check:
    def check(value: Any) -> None:
        matched = 0
        for option in options:
            try:
                option(value)
            except Invalid:
                continue
            matched += 1
        if matched != 1:
            raise Invalid([], f"matches {matched} of the {len(options)} allowed forms — expected exactly one")
    return check


def _fail(message: str) -> None:
    raise Invalid([], message)


def _object_check(schema: dict, root: dict) -> Check:
    props = {k: compile_schema(v, root) for k, v in (schema.get("properties") or {}).items()}
    required = list(schema.get("required") or [])
    extra = schema.get("additionalProperties", True)
    extra_check = compile_schema(extra, root) if isinstance(extra, dict) else None

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            return
        for key in required:
            if key not in value:
                raise Invalid([], f"has no `{key}` — expected the key `{key}`")
        for key, item in value.items():
            sub = props.get(key) or extra_check or (_unknown if extra is False else _free)
            try:
                sub(item)
            except Invalid as exc:
                exc.path.insert(0, key)
                raise
    return check


def _unknown(_value: Any) -> None:
    raise Invalid([], "is not a known key")


def _array_check(schema: dict, root: dict) -> Check:
    items = compile_schema(schema["items"], root) if isinstance(schema.get("items"), dict) else _free
    least = schema.get("minItems", 0)
    unique = schema.get("uniqueItems", False)

    def check(value: Any) -> None:
        if not isinstance(value, list):
            return
        if value and isinstance(value[0], TRUSTED):
            return  # a list msgspec decoded into Records (a comparison's entries): each typed and checked on reading
        if len(value) < least:
            raise Invalid([], f"has {len(value)} item(s) — expected at least {least}")
        if unique and any(a == b for i, a in enumerate(value) for b in value[:i]):  # True == 1: stricter
            raise Invalid([], "has the same item twice — expected unique items")
        for i, item in enumerate(value):
            try:
                items(item)
            except Invalid as exc:
                exc.path.insert(0, i)
                raise
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
        check(data)
    except Invalid as exc:
        raise UsageError(f"{shown}: {json_path(exc.path)} {exc.message} (profopt/{name}@1 schema)") from None
    except RecursionError:
        raise UsageError(f"{shown}: nested too deeply — expected a profopt/{name}@1 document") from None

