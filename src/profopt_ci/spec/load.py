"""Load and check profopt.yml (version 1).

In: a path. Out: a `Spec` with every benchmark's settings resolved (defaults merged in), or a
`SpecError` listing every problem as `FILE:LINE:COL: what is wrong — what was expected`.

Checks run in three layers, each pointing at the YAML node it is about: YAML syntax and duplicate
keys (while composing), the JSON Schema shipped in the package (types, unknown keys with a
close-match suggestion, required names), then rules a schema cannot say (duplicate benchmark names,
exactly one of callable/command, percentages, rounds ≤ max_rounds, one rule per constraint).
"""
from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from profopt_ci.errors import SpecError, UsageError
from profopt_ci.gc_pause import paused
from profopt_ci.spec.guard import check_graph, check_nesting, read_capped, value_problems

SPEC_NAMES = ("profopt.yml", "profopt.yaml")
SCHEMA_URL = "https://raw.githubusercontent.com/org/profopt-action/v1/src/profopt_ci/schema/profopt.schema.json"

DEFAULTS: dict[str, Any] = {
    "warmup": 3,
    "min_time_ms": 100.0,
    "values": 5,
    "rounds": 20,
    "max_rounds": 60,
    "threshold": "3%",
    "memory_tolerance": "5%",
    "timeout_s": 600.0,
    "profile": "auto",
    "instrument": "walltime",
    "instructions_threshold": "0.5%",
    "cache_sim": False,
    "pairing": "lockstep",
    "value_ms": 2.0,
    "round_ms": 1000.0,
}
INSTRUMENTS = ("walltime", "instructions")
SETTING_KEYS = tuple(DEFAULTS)
PAIRINGS = ("lockstep", "rounds")
# Lockstep rounds are an order of magnitude less noisy (docs/accuracy.md), so fewer of them decide;
# these apply when the spec does not set rounds / max_rounds itself.
LOCKSTEP_DEFAULTS: dict[str, Any] = {"rounds": 16, "max_rounds": 48}
GOAL_METRICS = {
    "step_time": "step_time_ms",
    "step_time_ms": "step_time_ms",
    "throughput": "throughput",
    "peak_memory": "peak_memory_mb",
    "peak_memory_mb": "peak_memory_mb",
}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: 10x faster on big specs
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


@dataclass
class Settings:
    warmup: int
    min_time_ms: float
    values: int
    rounds: int
    max_rounds: int
    threshold_pct: float
    memory_tolerance_pct: float
    timeout_s: float
    profile: str
    instrument: tuple[str, ...] = ("walltime",)  # walltime and/or instructions, in that order
    instructions_threshold_pct: float = 0.5
    cache_sim: bool = False
    pairing: str = "lockstep"  # lockstep | rounds (design.md)
    value_ms: float = 2.0  # lockstep: one value is about this long (one step when a step is longer)
    round_ms: float = 1000.0  # lockstep: pairs per round fill about this long


@dataclass
class Constraint:
    metric: str
    rule: str  # rel_tol | abs_tol | equal
    limit: float | bool


@dataclass
class Goal:
    metric: str  # a metric key: step_time_ms | throughput | peak_memory_mb
    direction: str  # decrease | increase
    target_pct: float | None


@dataclass
class Benchmark:
    name: str
    callable: str | None
    command: str | list[str] | None
    params: dict[str, Any]
    items_per_iteration: float | None
    unit: str
    goal: Goal | None
    constraints: list[Constraint]
    env: dict[str, str]
    settings: Settings

    @property
    def kind(self) -> str:
        return "callable" if self.callable else "command"


@dataclass
class Spec:
    path: Path
    version: int
    hardware_label: str
    setup: list[str]
    env: dict[str, str]
    seed: int | None
    benchmarks: list[Benchmark]
    raw: dict[str, Any] = field(repr=False)
    cpuset: str | None = None  # the CPUs lockstep pins both sides to (default: chosen per benchmark)

    @property
    def hash(self) -> str:
        """Stable across formatting and key order, so two checkouts of one spec agree."""
        text = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def select(self, names: list[str] | None) -> list[Benchmark]:
        if not names:
            return list(self.benchmarks)
        known = {b.name: b for b in self.benchmarks}
        missing = [n for n in names if n not in known]
        if missing:
            raise UsageError(
                f"--only {', '.join(missing)}: no such benchmark in {self.path} — expected one of "
                f"{', '.join(known)}"
            )
        return [known[n] for n in names]


def schema() -> dict[str, Any]:
    text = resources.files("profopt_ci").joinpath("schema/profopt.schema.json").read_text()
    return json.loads(text)


def find_spec(path: str | Path | None, cwd: Path | None = None) -> Path:
    """The spec the user named, else profopt.yml / profopt.yaml in cwd."""
    base = cwd or Path.cwd()
    if path is not None:
        p = Path(path)
        return p if p.is_absolute() else base / p
    for name in SPEC_NAMES:
        if (base / name).is_file():
            return base / name
    raise UsageError(f"no spec found: {base / SPEC_NAMES[0]} does not exist — pass --spec FILE")


def load_spec(path: str | Path, *, display: str | None = None) -> Spec:
    """Read, check and resolve a spec. `display` is the name used in messages (default: the path)."""
    p = Path(path)
    shown = display or str(path)
    text = read_capped(p, shown)
    return parse_spec(text, shown, path=p)


def parse_spec(text: str, shown: str, *, path: Path | None = None) -> Spec:
    with paused():  # millions of live nodes: GC passes would make this quadratic
        check_nesting(text, shown)
        node = _compose(text, shown)
        data = _construct(node, text, shown)
        problems = _check(data, node, shown)
        if problems:
            raise SpecError(problems)
        return _resolve(data, path or Path(shown))


# ---- layer 1: YAML ---------------------------------------------------------------------------


def _where(shown: str, mark: yaml.Mark | None) -> str:
    if mark is None:
        return f"{shown}:1:1"
    return f"{shown}:{mark.line + 1}:{mark.column + 1}"


def _compose(text: str, shown: str) -> yaml.Node | None:
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        raise SpecError([f"{_where(shown, mark)}: YAML syntax error: {what} — expected valid YAML"]) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"{shown}:1:1: YAML error: {exc} — expected valid YAML"]) from None
    if node is not None:
        # aliases walked once, bounded in expansion and depth; duplicate keys compared by value
        problems = check_graph(node, shown)
        if problems:
            raise SpecError(problems)
    return node


def _construct(node: yaml.Node | None, text: str, shown: str) -> Any:
    if node is None:
        raise SpecError([f"{shown}:1:1: the spec is empty — expected `version: 1` and a `benchmarks` list"])
    try:
        return yaml.SafeLoader("").construct_document(node)  # the node already composed: no second parse
    except yaml.YAMLError as exc:  # constructor errors (bad tags) that compose let through
        mark = getattr(exc, "problem_mark", None)
        raise SpecError([f"{_where(shown, mark)}: YAML error: {exc} — expected plain YAML values"]) from None
    except ValueError as exc:  # an integer of 4,300+ digits (int() refuses to convert it)
        raise SpecError([f"{shown}:1:1: a value cannot be read ({str(exc)[:200]}) — expected plain YAML values"]) from None


def _node_at(node: yaml.Node | None, path: list[Any], *, key: bool = False) -> yaml.Node | None:
    """The YAML node at a JSON path; with key=True the key node of the last step."""
    cur = node
    for i, step in enumerate(path):
        last = i == len(path) - 1
        if isinstance(cur, yaml.MappingNode):
            for k, v in cur.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(step):
                    cur = k if (last and key) else v
                    break
            else:
                return cur
        elif isinstance(cur, yaml.SequenceNode) and isinstance(step, int) and step < len(cur.value):
            cur = cur.value[step]
        else:
            return cur
    return cur


# ---- layer 2: the JSON Schema ------------------------------------------------------------------


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


# ---- layer 3: rules a schema cannot say ---------------------------------------------------------


def parse_percent(value: Any) -> float:
    """'3%' → 3.0; 3 → 3.0. A fraction such as 0.03 is refused as ambiguous."""
    if isinstance(value, bool):
        raise ValueError("expected a percentage such as 3%")
    if isinstance(value, (int, float)):
        if not 0 <= value < 1e6:  # negative, NaN, inf, absurd
            raise ValueError(f"{value} — expected a percentage ≥ 0 such as 3%")
        if 0 < value < 1:
            raise ValueError(f"{value} is ambiguous — write a percentage such as {value * 100:g}%")
        return float(value)
    if isinstance(value, str):
        m = _PERCENT.match(value)
        if m:
            return float(m.group(1))
    raise ValueError(f"{value!r} is not a percentage — expected a value such as 3%")


def _semantic(data: dict[str, Any]):
    yield from value_problems(data)
    for key in ("threshold", "memory_tolerance", "instructions_threshold"):
        if key in (data.get("defaults") or {}):
            yield from _percent_problem(data["defaults"][key], ["defaults", key])
    if isinstance(data.get("cpuset"), str):
        from profopt_ci.measure.cpus import parse_cpuset

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


def _percent_problem(value: Any, path: list[Any]):
    try:
        parse_percent(value)
    except ValueError as exc:
        yield path, f"`{_label(path)}`: {exc}"


def _check(data: Any, node: yaml.Node, shown: str) -> list[str]:
    if not isinstance(data, dict):
        return [f"{_where(shown, node.start_mark)}: the spec is {_type_name(data)} — expected a mapping with `version` and `benchmarks`"]
    sch = schema()
    found: list[tuple[list[Any], str, bool]] = []
    suggested: set[tuple[Any, ...]] = set()  # (path…, key) a typo already points at
    for path, msg in _unknown_keys(data, sch, sch, []):
        found.append((path, msg, True))
        if "did you mean `" in msg:
            suggested.add((*path[:-1], msg.split("did you mean `")[1].split("`")[0]))
    validator = jsonschema.Draft202012Validator(sch)
    for err in validator.iter_errors(data):
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
        target = _node_at(node, path, key=is_key)
        mark = target.start_mark if target is not None else None
        lines.append((mark.line if mark else 0, mark.column if mark else 0, f"{_where(shown, mark)}: {msg}"))
    return [text for _, _, text in sorted(set(lines))]


# ---- resolve ------------------------------------------------------------------------------------


def resolve_settings(defaults: dict[str, Any], override: dict[str, Any]) -> Settings:
    given = {k: v for k, v in defaults.items() if k in SETTING_KEYS}
    given.update({k: v for k, v in override.items() if k in SETTING_KEYS})
    pairing = str(given.get("pairing", DEFAULTS["pairing"]))
    merged = {**DEFAULTS, **(LOCKSTEP_DEFAULTS if pairing == "lockstep" else {}), **given}
    rounds = int(merged["rounds"])
    max_rounds = max(int(merged["max_rounds"]), rounds)
    return Settings(
        warmup=int(merged["warmup"]),
        min_time_ms=float(merged["min_time_ms"]),
        values=int(merged["values"]),
        rounds=rounds,
        max_rounds=max_rounds,
        threshold_pct=parse_percent(merged["threshold"]),
        memory_tolerance_pct=parse_percent(merged["memory_tolerance"]),
        timeout_s=float(merged["timeout_s"]),
        profile=str(merged["profile"]),
        instrument=parse_instrument(merged["instrument"]),
        instructions_threshold_pct=parse_percent(merged["instructions_threshold"]),
        cache_sim=bool(merged["cache_sim"]),
        pairing=pairing,
        value_ms=float(merged["value_ms"]),
        round_ms=float(merged["round_ms"]),
    )


def parse_instrument(value: str | list[str]) -> tuple[str, ...]:
    """`walltime`, `instructions` or a list of them → the set in a fixed order; else ValueError."""
    chosen = [value] if isinstance(value, str) else list(value)
    unknown = [v for v in chosen if v not in INSTRUMENTS]
    if unknown or not chosen:
        raise ValueError(f"{', '.join(map(str, unknown)) or 'nothing'} — expected walltime, instructions, or both")
    return tuple(i for i in INSTRUMENTS if i in chosen)


def _env(mapping: dict[str, Any] | None) -> dict[str, str]:
    out = {}
    for k, v in (mapping or {}).items():
        out[str(k)] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    return out


def _resolve(data: dict[str, Any], path: Path) -> Spec:
    defaults = data.get("defaults") or {}
    benchmarks = []
    for b in data["benchmarks"]:
        goal = None
        if b.get("goal"):
            g = b["goal"]
            metric = GOAL_METRICS[g["metric"]]
            default_dir = "increase" if metric == "throughput" else "decrease"
            target = parse_percent(g["target"]) if "target" in g else None
            goal = Goal(metric=metric, direction=g.get("direction", default_dir), target_pct=target)
        constraints = []
        for c in b.get("constraints") or []:
            rule = next(k for k in ("rel_tol", "abs_tol", "equal") if k in c)
            constraints.append(Constraint(metric=c["metric"], rule=rule, limit=c[rule]))
        benchmarks.append(
            Benchmark(
                name=b["name"],
                callable=b.get("callable"),
                command=b.get("command"),
                params=copy.deepcopy(b.get("params") or {}),
                items_per_iteration=b.get("items_per_iteration"),
                unit=b.get("unit", "items"),
                goal=goal,
                constraints=constraints,
                env=_env(b.get("env")),
                settings=resolve_settings(defaults, b),
            )
        )
    setup = data.get("setup") or []
    return Spec(
        path=path,
        version=data["version"],
        hardware_label=data.get("hardware_label") or "default",
        setup=[setup] if isinstance(setup, str) else list(setup),
        env=_env(data.get("env")),
        seed=defaults.get("seed"),
        benchmarks=benchmarks,
        raw=data,
        cpuset=data.get("cpuset"),
    )
