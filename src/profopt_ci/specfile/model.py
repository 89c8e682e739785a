"""The spec as the rest of profopt reads it: resolved dataclasses, the defaults, and the value parsers.

In: a spec mapping that already passed specfile/checks.py (`resolve`), or one setting's raw value
(`parse_percent`, `parse_instrument`, `resolve_settings`). Out: `Spec` → `Benchmark` → `Settings`,
`Goal`, `Constraint`, with every default merged in and percentages as floats; a bad raw value is a
`ValueError` the caller turns into its own message.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profopt_ci.errors import UsageError

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
    "round_ms": 400.0,
    "quality_steps": 100,
    "confirm": False,
}
INSTRUMENTS = ("walltime", "instructions")
SETTING_KEYS = tuple(DEFAULTS)
PAIRINGS = ("lockstep", "rounds")
# Lockstep rounds are an order of magnitude less noisy (docs/accuracy.md), so fewer of them decide;
# these apply when the spec does not set rounds / max_rounds itself: a first look at 12 rounds
# decides a quiet A/A or a clear change (measured by bench/verdict_accuracy.py --variants).
LOCKSTEP_DEFAULTS: dict[str, Any] = {"rounds": 12, "max_rounds": 48}
# goal.metric as a spec may write it → the metric key of results@1 and comparison@1
GOAL_METRICS = {
    "step_time": "step_time_ms",
    "step_time_ms": "step_time_ms",
    "throughput": "throughput",
    "peak_memory": "peak_memory_mb",
    "peak_memory_mb": "peak_memory_mb",
}
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
    pairing: str = "lockstep"  # lockstep | rounds (README.md, "A spec")
    value_ms: float = 2.0  # lockstep: one value is about this long (one step when a step is longer)
    round_ms: float = 400.0  # lockstep: pairs per round fill about this long
    quality_steps: int = 100  # the quality pass: steps per side from fresh seeds (constraints)
    confirm: bool = False  # a flagged verdict holds only when a fresh independent run agrees

    @property
    def timed(self) -> bool:
        """Wall time is measured (instrument walltime, alone or beside instructions)."""
        return "walltime" in self.instrument


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
        quality_steps=int(merged["quality_steps"]),
        confirm=bool(merged["confirm"]),
    )


def parse_instrument(value: str | list[str]) -> tuple[str, ...]:
    """`walltime`, `instructions` or a list of them → the set in a fixed order; else ValueError."""
    chosen = [value] if isinstance(value, str) else list(value)
    unknown = [v for v in chosen if v not in INSTRUMENTS]
    if unknown or not chosen:
        raise ValueError(f"{', '.join(map(str, unknown)) or 'nothing'} — expected walltime, instructions, or both")
    return tuple(i for i in INSTRUMENTS if i in chosen)


def parse_constraints(items: list[dict[str, Any]] | None) -> list[Constraint]:
    """Checked `constraints:` items → `Constraint`s (one rule each)."""
    out = []
    for c in items or []:
        rule = next(k for k in ("rel_tol", "abs_tol", "equal") if k in c)
        out.append(Constraint(metric=c["metric"], rule=rule, limit=c[rule]))
    return out


def env_of(mapping: dict[str, Any] | None) -> dict[str, str]:
    """An `env:` mapping as strings (booleans as 1/0)."""
    return _env(mapping)


def _env(mapping: dict[str, Any] | None) -> dict[str, str]:
    out = {}
    for k, v in (mapping or {}).items():
        out[str(k)] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    return out


def resolve(data: dict[str, Any], path: Path) -> Spec:
    """A checked spec mapping → the `Spec` every stage reads (defaults merged per benchmark)."""
    defaults = data.get("defaults") or {}
    benchmarks = []
    for b in data.get("benchmarks") or []:
        goal = None
        if b.get("goal"):
            g = b["goal"]
            metric = GOAL_METRICS[g["metric"]]
            default_dir = "increase" if metric == "throughput" else "decrease"
            target = parse_percent(g["target"]) if "target" in g else None
            goal = Goal(metric=metric, direction=g.get("direction", default_dir), target_pct=target)
        constraints = parse_constraints(b.get("constraints"))
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
        suites=[_suite(i, item) for i, item in enumerate(data.get("suites") or [])],
        benchmarks_from=data.get("benchmarks_from"),
    )


SUITE_KINDS = ("pytest", "asv", "pyperf")


def _suite(index: int, item: dict[str, Any]) -> Suite:
    kind = next(k for k in SUITE_KINDS if k in item)
    return Suite(kind=kind, path=str(item[kind]), select=item.get("select"), item=dict(item), index=index)
