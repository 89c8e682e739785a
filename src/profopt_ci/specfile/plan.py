"""One plan per run: the spec, the command line's overrides, and each side's own spec, resolved once.

In: the spec the user passed, `Overrides` (CLI flags; the action's inputs arrive as the same flags
and as PROFOPT_HARDWARE_LABEL), and for compare the `Side`s with the specs their checkouts hold.
Out: a `Plan` every stage reads — compare, rounds, lockstep, profiling, decide, baseline, run —
instead of each stage choosing between `side.spec` and the spec itself.

Rules:
- how to measure and judge (every key of `Settings`, the hardware label, the CPU set) comes from
  the spec passed plus the overrides, the same for both sides: pairing needs both measured alike;
- what the code is (callable or command, params, env, setup, constraints, goal) comes from each
  side's own spec, so a pull request that changes its params is measured as it says;
- a side whose own spec is missing or invalid runs the passed spec's definitions, and a side whose
  settings differ is measured with the plan's: both are recorded (`notes`, `differences`), never
  swapped silently.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from msgspec.structs import asdict

from profopt_ci.cpulists import parse_cpuset
from profopt_ci.errors import UsageError
from profopt_ci.machine_label import resolve as resolve_label
from profopt_ci.specfile.model import Benchmark, Spec, parse_percent, resolve_settings
from profopt_ci.words.i18n import message


@dataclass(frozen=True)
class Overrides:
    """What the command line says over the spec (None: the spec decides)."""

    threshold: str | None = None
    rounds: int | None = None
    max_rounds: int | None = None
    pairing: str | None = None
    cpuset: str | None = None
    hardware_label: str | None = None
    instrument: tuple[str, ...] | None = None
    profile: str | None = None  # bisect's probes: "off", so a probe is only its rounds
    confirm: bool | None = None  # `--confirm`: flagged benchmarks are re-measured in a fresh run

    def settings(self) -> dict[str, Any]:
        """The overrides as setting keys: `--rounds N` alone means exactly N rounds (one look)."""
        out: dict[str, Any] = {}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.pairing is not None:
            out["pairing"] = self.pairing
        if self.instrument is not None:
            out["instrument"] = list(self.instrument)
        if self.profile is not None:
            out["profile"] = self.profile
        if self.confirm is not None:
            out["confirm"] = self.confirm
        if self.rounds is not None:
            out["rounds"] = self.rounds
            out["max_rounds"] = max(self.max_rounds or self.rounds, self.rounds)
        elif self.max_rounds is not None:
            out["max_rounds"] = self.max_rounds
        return out


def overrides(*, threshold: str | None = None, rounds: int | None = None, max_rounds: int | None = None,
              pairing: str | None = None, cpus: str | None = None, hardware_label: str | None = None,
              instrument: tuple[str, ...] | None = None, environ: dict[str, str] | None = None,
              confirm: bool | None = None) -> Overrides:
    """Checked overrides; the hardware label falls back to PROFOPT_HARDWARE_LABEL (the action's input),
    `auto` derived from the machine (machine_label.py)."""
    env = os.environ if environ is None else environ
    if threshold is not None:
        try:
            parse_percent(threshold)
        except ValueError as exc:
            raise UsageError(f"--threshold: {exc}") from None
    if cpus is not None:
        try:
            parse_cpuset(cpus)
        except ValueError as exc:
            raise UsageError(f"--cpuset: {exc}") from None
    label = resolve_label(hardware_label or env.get("PROFOPT_HARDWARE_LABEL") or None)  # `auto`: this machine's
    return Overrides(threshold=threshold, rounds=rounds, max_rounds=max_rounds, pairing=pairing, cpuset=cpus,
                     hardware_label=label, instrument=instrument, confirm=confirm)


def _raw_benches(spec: Spec) -> dict[str, dict]:
    return {b.get("name"): b for b in spec.raw.get("benchmarks") or [] if isinstance(b, dict)}


def apply(spec: Spec, ov: Overrides, settings_from: Spec | None = None) -> Spec:
    """A copy of `spec` whose settings are re-resolved from `settings_from`'s keys (default: its own;
    a benchmark `settings_from` lacks keeps its own) plus the overrides; label and CPU set likewise."""
    src = settings_from or spec
    extra = ov.settings()
    src_raw, own_raw = _raw_benches(src), _raw_benches(spec)
    benches = []
    for b in spec.benchmarks:
        if b.name in src_raw:
            settings = resolve_settings(src.raw.get("defaults") or {}, {**src_raw[b.name], **extra})
        else:
            settings = resolve_settings(spec.raw.get("defaults") or {}, {**own_raw.get(b.name, {}), **extra})
        benches.append(replace(b, settings=settings))
    return replace(spec, benchmarks=benches, hardware_label=ov.hardware_label or src.hardware_label,
                   cpuset=ov.cpuset or src.cpuset)


@dataclass(frozen=True)
class Plan:
    """Frozen: a stage that learns something (`attach`, suite expansion) returns a new Plan made by
    `dataclasses.replace`, so a plan a stage holds never changes under it."""

    spec: Spec  # the spec passed, overrides applied
    overrides: Overrides = field(default_factory=Overrides)
    sides: Mapping[str, Spec] = field(default_factory=lambda: MappingProxyType({}))  # side → what it runs
    notes: tuple[dict | str, ...] = ()  # messages; a suite's own words as strings
    differences: tuple[dict, ...] = ()
    # suites (profopt_ci.suites.expand): what failed before any round ({name: {side: error}}), why a
    # benchmark is new in the PR (the base cannot collect or run it), the suite benchmarks base runs
    failures: Mapping[str, dict[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    new_causes: Mapping[str, dict] = field(default_factory=lambda: MappingProxyType({}))  # messages
    base_suite: frozenset[str] = frozenset()
    # compare, measure: changed — the base's collectors' answers by suite, each with its reach record
    collected: Mapping[str, dict] = field(default_factory=lambda: MappingProxyType({}))
    overlaid: tuple[str, ...] = ()  # suite paths (from the spec's directory) the head's files were laid over the base at

    @property
    def hardware_label(self) -> str:
        return self.spec.hardware_label

    def side_spec(self, side: str) -> Spec:
        return self.sides.get(side, self.spec)

    def bench(self, side: str, name: str) -> Benchmark:
        """The side's definition of a benchmark with the plan's settings."""
        for b in self.side_spec(side).benchmarks:
            if b.name == name:
                return b
        return self.judged(name)

    def judged(self, name: str) -> Benchmark:
        """What decide reads: head's definition (constraints, goal) when it has one, the plan's settings."""
        spec = self.sides.get("head", self.spec)
        for b in spec.benchmarks:
            if b.name == name:
                return b
        return next(b for b in self.spec.benchmarks if b.name == name)

    def attach(self, name: str, own: Spec | None, problem: str | None = None) -> Plan:
        """A new plan with side `name` resolved: its own spec's definitions under the plan's settings
        (see module doc), and the notes and differences saying where they part."""
        if own is None:
            said = (message("note.own_spec_unused", side=name, why=problem, spec=self.spec.path.name)
                    if problem else message("note.own_spec_missing", side=name, spec=self.spec.path.name))
            return replace(self, sides=MappingProxyType({**self.sides, name: self.spec}), notes=(*self.notes, said))
        known = {b.name: b.settings for b in self.spec.benchmarks}
        other = "head" if name == "base" else "base"  # it runs the plan's setting
        diffs, notes = [], []
        for b in apply(own, self.overrides).benchmarks:
            if b.name in known and b.settings != known[b.name]:
                mine, planned = asdict(b.settings), asdict(known[b.name])
                keys = [k for k in mine if mine[k] != planned[k]]
                diffs += [{"scope": "settings", "benchmark": b.name, "key": k, name: mine[k], other: planned[k]}
                          for k in keys]
                notes.append(message("note.own_spec_differs", side=name, keys=keys, name=b.name))
        resolved = apply(own, self.overrides, settings_from=self.spec)
        return replace(self, sides=MappingProxyType({**self.sides, name: resolved}), notes=(*self.notes, *notes),
                       differences=(*self.differences, *diffs))


def make_plan(spec: Spec, ov: Overrides | None = None) -> Plan:
    ov = ov or Overrides()
    return Plan(spec=apply(spec, ov), overrides=ov)
