"""The spec as the rest of profopt reads it: resolved dataclasses and the value parsers.

In: a spec checked and converted by specfile/checks.py (`resolve`; the keys, types and defaults are
the model's, specfile/keys.py), or one setting's raw value (`parse_percent`, `parse_instrument`,
`resolve_settings`). Out: `Spec` → `Benchmark` → its resolved `Settings` (keys.py's one class),
`Goal`, `Constraint`, with every default merged in and percentages as numbers; a bad raw value is
a `ValueError` the caller turns into its own message.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from profopt_ci.errors import UsageError
from profopt_ci.machine_label import resolve as resolve_label
from profopt_ci.specfile.keys import (
    DEFAULTS,
    GOAL_METRICS,
    INSTRUMENTS,
    LOCKSTEP_DEFAULTS,
    PERCENT_KEYS,
    SETTING_KEYS,
    SUITE_KINDS,
    Settings,
    SpecKeys,
)

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


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
    # A collected suite benchmark (suites/): the metrics that decide it, when not all (asv's
    # peakmem_ judges peak memory only, track_/mem_ only their recorded value); None: all of them.
    judged: tuple[str, ...] | None = None
    suite: str | None = None  # pytest | asv | pyperf: which kind of suite collected it

    @property
    def kind(self) -> str:
        return "callable" if self.callable else "command"


@dataclass
class Suite:
    """One `suites:` item: a suite written for another tool, collected into benchmarks (suites/)."""

    kind: str  # pytest | asv | pyperf
    path: str  # as written, relative to the spec's directory
    select: str | None  # pytest: a -k expression; asv, pyperf: a regex on the name
    item: dict[str, Any]  # the item's own keys (settings, env, constraints, params filter, …)
    index: int  # its place in `suites:`, for messages


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
    suites: list[Suite] = field(default_factory=list)
    benchmarks_from: str | None = None  # head | each; None: suites head, callables each
    measure: str = "changed"  # compare: changed (what the change reaches) | all
    time_budget_s: float | None = None  # compare: the wall time it may take (defaults.time_budget)

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


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|sec|m|min|h)?\s*$")
_UNIT_S = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """'25s' → 25.0, '10m' → 600.0, '1h' → 3600.0, 90 → 90.0 (seconds); else ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 90s, 10m or 1h")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a duration — expected one such as 90s, 10m or 1h")
        seconds = float(m.group(1)) * _UNIT_S[m.group(2)]
    if not 0 < seconds <= 30 * 86400:
        raise ValueError(f"{value!r} — expected a duration above 0 and at most 30 days")
    return seconds


def parse_instrument(value: str | list[str]) -> tuple[str, ...]:
    """`walltime`, `instructions` or a list of them → the set in a fixed order; else ValueError."""
    chosen = [value] if isinstance(value, str) else list(value)
    unknown = [v for v in chosen if v not in INSTRUMENTS]
    if unknown or not chosen:
        raise ValueError(f"{', '.join(map(str, unknown)) or 'nothing'} — expected walltime, instructions, or both")
    return tuple(i for i in INSTRUMENTS if i in chosen)


_DEFAULTS = msgspec.structs.asdict(DEFAULTS)
# how each setting's resolved value is read from its raw one: a percentage as its number, the rest by type
_READ = {key: parse_percent if key in PERCENT_KEYS else parse_instrument if key == "instrument" else type(value)
         for key, value in _DEFAULTS.items() if value is not UNSET}


def resolve_settings(defaults: dict[str, Any], override: dict[str, Any]) -> Settings:
    """Settings from the model's defaults, then a spec's `defaults:`, then the benchmark's (or the
    command line's) own keys; every default applied here, those that depend on another key too
    (keys.LOCKSTEP_DEFAULTS, short_round_ms)."""
    given = {k: v for k, v in defaults.items() if k in SETTING_KEYS}
    given.update({k: v for k, v in override.items() if k in SETTING_KEYS})
    pairing = str(given.get("pairing", DEFAULTS.pairing))
    merged = {**_DEFAULTS, **(LOCKSTEP_DEFAULTS if pairing == "lockstep" else {}), **given}
    merged["max_rounds"] = max(int(merged["max_rounds"]), int(merged["rounds"]))
    merged["short_round_ms"] = given.get("short_round_ms", given.get("round_ms", DEFAULTS.short_round_ms))
    return Settings(**{key: _READ[key](value) for key, value in merged.items()})


def parse_constraints(items: list[dict[str, Any]] | None) -> list[Constraint]:
    """Checked `constraints:` items → `Constraint`s (one rule each)."""
    out = []
    for c in items or []:
        rule = next(k for k in ("rel_tol", "abs_tol", "equal") if k in c)
        out.append(Constraint(metric=c["metric"], rule=rule, limit=c[rule]))
    return out


def env_of(mapping: dict[str, Any] | None) -> dict[str, str]:
    """An `env:` mapping as strings (booleans as 1/0)."""
    out = {}
    for k, v in (mapping or {}).items():
        out[str(k)] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    return out


def resolve(keys: SpecKeys, data: dict[str, Any], path: Path) -> Spec:
    """A checked spec (`keys`, converted from `data`) → the `Spec` every stage reads; settings are
    resolved from the raw mappings, as the command line's overrides and suites are."""
    defaults = data.get("defaults") or {}
    benchmarks = []
    for b, raw in zip(keys.benchmarks or [], data.get("benchmarks") or [], strict=True):
        goal = None
        if b.goal:
            metric = GOAL_METRICS[b.goal.metric]
            direction = b.goal.direction or ("increase" if metric == "throughput" else "decrease")
            target = parse_percent(raw["goal"]["target"]) if b.goal.target is not UNSET else None
            goal = Goal(metric=metric, direction=direction, target_pct=target)
        benchmarks.append(Benchmark(
            name=b.name, callable=_given(b.callable), command=_given(b.command),
            params=copy.deepcopy(_given(b.params, {})), items_per_iteration=_given(b.items_per_iteration), unit=b.unit,
            goal=goal, constraints=parse_constraints(raw.get("constraints")), env=env_of(raw.get("env")),
            settings=resolve_settings(defaults, raw)))
    setup = _given(keys.setup, [])
    return Spec(
        path=path, version=keys.version, hardware_label=resolve_label(keys.hardware_label) or keys.hardware_label,
        setup=[setup] if isinstance(setup, str) else list(setup), env=env_of(data.get("env")),
        seed=_given(keys.defaults.seed) if keys.defaults else None, benchmarks=benchmarks, raw=data,
        cpuset=_given(keys.cpuset), suites=[_suite(i, item) for i, item in enumerate(data.get("suites") or [])],
        benchmarks_from=_given(keys.benchmarks_from),
        measure=_given(keys.defaults.measure, "changed") if keys.defaults else "changed",
        time_budget_s=parse_duration(keys.defaults.time_budget) if keys.defaults and keys.defaults.time_budget
        is not UNSET else None)


def _given(value: Any, absent: Any = None) -> Any:
    return absent if value is UNSET else value

def _suite(index: int, item: dict[str, Any]) -> Suite:
    kind = next(k for k in SUITE_KINDS if k in item)
    return Suite(kind=kind, path=str(item[kind]), select=item.get("select"), item=dict(item), index=index)
