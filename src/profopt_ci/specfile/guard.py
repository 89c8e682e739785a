"""Hostile-input guards for profopt.yml, run before and after the YAML is composed.

In: the spec's bytes (capped), its YAML node graph, its constructed data. Out: nothing, or a
`SpecError` whose lines name `FILE:LINE:COL` — never a hang, a RecursionError or a MemoryError.

- `read_capped`: at most MAX_SPEC_BYTES (so `--spec /dev/zero` is refused at once, not after reading it).
- `check_nesting`: the event stream (iterative, libyaml when present) deeper than MAX_DEPTH.
- `check_graph`: each node walked once (aliases shared, not re-expanded), so a 625-byte alias
  bomb costs microseconds; a self-referencing anchor and an expansion past the budget are errors;
  duplicate keys compare by *value* as the loader would, so `{1: a, 1.0: b}` is a duplicate.
- `value_problems`: NaN/±inf, numbers past what a benchmark can use (the keys' own ranges are the
  model's, specfile/keys.py), `=`/NUL in env names, NUL in env values and
  commands, and values JSON cannot carry (dates, binary, sets) — as (path, message) pairs.
"""
from __future__ import annotations

import datetime
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from profopt_ci.errors import SpecError, UsageError

MAX_SPEC_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
EXPANSION_FACTOR = 20  # an alias may repeat a subtree, but not blow the document up 20-fold
EXPANSION_FLOOR = 200_000
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: far faster on big specs
_STR = "tag:yaml.org,2002:str"
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def read_capped(path: Path, shown: str, cap: int = MAX_SPEC_BYTES) -> str:
    """The file's text, refused when it is larger than `cap`, a directory, or not UTF-8."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file — expected a profopt.yml spec (see profopt validate)") from None
    except IsADirectoryError:
        raise SpecError([f"{shown}:1:1: is a directory — expected a profopt.yml spec file"]) from None
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read the spec ({exc})") from None
    if len(data) > cap:
        raise UsageError(f"{shown}: larger than {cap // (1024 * 1024)} MiB — expected a profopt.yml spec")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head, newline = data[:exc.start], b"\n"
        # columns counted in bytes: the line is not valid text
        where = f"{shown}:{head.count(newline) + 1}:{exc.start - head.rfind(newline)}"
        raise SpecError([f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x}) — "
                         "expected a YAML spec file, not a binary one"]) from None


def _at(shown: str, mark: Any) -> str:
    return f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else f"{shown}:1:1"


def check_nesting(text: str, shown: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before the (recursive, pure-Python) composer sees it.
    libyaml's composer is not recursive in Python and refuses 1000+ levels itself; then
    `check_graph` enforces MAX_DEPTH on the composed nodes, and this pass is skipped."""
    if LOADER is not yaml.SafeLoader:
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=LOADER):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SpecError([f"{_at(shown, event.start_mark)}: nested deeper than {MAX_DEPTH} levels "
                                     "— expected a flat spec (benchmarks, defaults, params)"])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # the composer reports syntax errors with their position


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_graph(root: yaml.Node, shown: str) -> list[str]:
    """Problems of the node graph: duplicate keys, nesting past MAX_DEPTH and, when anchors share
    nodes, recursion and expansion past the budget. Iterative; each distinct node visited once."""
    problems: list[str] = []
    seen: set[int] = set()
    shared = False
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if id(node) in seen:
            shared = True  # an alias: its subtree was walked where the anchor is
            continue
        seen.add(id(node))
        if depth > MAX_DEPTH:
            return [f"{_at(shown, node.start_mark)}: nested deeper than {MAX_DEPTH} levels — expected a flat spec"]
        if isinstance(node, yaml.MappingNode):
            problems.extend(_duplicates(node, shown))
        stack.extend((k, depth + 1) for k in _children(node))
    return (_expansion(root, shown) or problems) if shared else problems


def _expansion(root: yaml.Node, shown: str) -> list[str]:
    """With aliases: refuse a recursive anchor, and a document that expands past the budget or
    nests past MAX_DEPTH once aliases are followed (memoized, so a bomb costs its node count)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size.get(id(k), 1) for k in kids)
            depth[key] = 1 + max((depth.get(id(k), 1) for k in kids), default=0)
            continue
        if key in size or isinstance(node, yaml.ScalarNode):
            continue
        if key in on_path:
            return [f"{_at(shown, node.start_mark)}: this anchor contains an alias to itself — expected no recursive aliases"]
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)
    budget = EXPANSION_FACTOR * len(size) + EXPANSION_FLOOR
    if size[id(root)] > budget:
        return [f"{_at(shown, root.start_mark)}: aliases expand the spec to {size[id(root)]:,} values "
                f"— expected at most {budget:,} (an alias bomb?)"]
    if depth[id(root)] > MAX_DEPTH:
        return [f"{_at(shown, root.start_mark)}: aliases nest the spec deeper than {MAX_DEPTH} levels — expected a flat spec"]
    return []


def _duplicates(node: yaml.MappingNode, shown: str) -> Iterator[str]:
    plain = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag == _STR]
    if len(plain) == len(node.value) and len(set(plain)) == len(plain):
        return  # all string keys, all different: the common case, without constructing anything
    seen: set[Any] = set()
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        value = _key_value(key)
        if value in seen:
            yield f"{_at(shown, key.start_mark)}: key `{key.value}` appears twice — expected each key once"
        seen.add(value)


def _key_value(key: yaml.ScalarNode) -> Any:
    """The key as the loader will build it: `1`, `1.0` and `0x1` are one key, `true` and `1` too."""
    if key.tag == _STR:
        return key.value  # the common case, without a constructor
    try:
        value = _CONSTRUCTOR.construct_object(key)
        hash(value)
    except Exception:  # a scalar the constructor refuses is reported by the loader later
        return ("raw", key.value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


# ---- values a schema cannot refuse -----------------------------------------------------------------

_JSON_SCALARS = (str, int, float, bool, type(None))


def value_problems(data: dict[str, Any]) -> Iterator[tuple[list[Any], str]]:
    yield from _walk_values(data, [])
    yield from _env_problems(data.get("env"), ["env"])
    yield from _command_problems(data.get("setup"), ["setup"])
    for i, b in enumerate(data.get("benchmarks") or []):
        if isinstance(b, dict):
            yield from _env_problems(b.get("env"), ["benchmarks", i, "env"])
            yield from _command_problems(b.get("command"), ["benchmarks", i, "command"])


def label(path: list[Any]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the spec"


def _walk_values(data: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    stack = [(data, path)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    yield at + [k], f"`{label(at)}` has the key {k!r} ({type(k).__name__}) — expected string keys"
                stack.append((v, at + [k]))
        elif isinstance(value, list):
            stack.extend((v, at + [i]) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            yield at, f"`{label(at)}` is {value} — expected a finite number"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if abs(value) > 1e300 or (isinstance(value, int) and abs(value) >= 2**63):
                yield at, f"`{label(at)}` is {number_text(value)} — expected a number a benchmark can use (below 2**63)"
        elif not isinstance(value, _JSON_SCALARS):
            kind = "a date" if isinstance(value, (datetime.date, datetime.datetime)) else f"a {type(value).__name__}"
            yield at, f"`{label(at)}` is {kind} — expected a string, number, boolean, list or mapping (JSON values)"


def number_text(value: int | float) -> str:
    """A number as a message shows it; an integer too large for a float is named by its length
    (formatting it as a float raised OverflowError)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if abs(value) < 10**15:
        return str(value)
    try:
        return f"an integer of {len(str(abs(value)))} digits"
    except ValueError:  # past sys.get_int_max_str_digits(), str() refuses it too
        return "an integer of thousands of digits"


def _env_problems(env: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    if not isinstance(env, dict):
        return
    for k, v in env.items():
        name = str(k)
        if not name or "=" in name or "\0" in name:
            yield path + [k], f"env name {name!r} — expected a name without `=` or NUL"
        if isinstance(v, str) and "\0" in v:
            yield path + [k], f"`{label(path + [k])}` contains NUL — expected text without NUL characters"


def _command_problems(command: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    parts = command if isinstance(command, list) else [command]
    for i, part in enumerate(parts):
        if isinstance(part, str) and "\0" in part:
            at = path + [i] if isinstance(command, list) else path
            yield at, f"`{label(at)}` contains NUL — a command cannot carry NUL characters"

