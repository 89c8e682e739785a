"""profopt.yml as one typed model: every key, its type, range, default and description.

In: nothing. Out: msgspec Structs — `SpecKeys` (the document) → `Defaults`, `BenchmarkKeys`,
`SuiteKeys` (each with the `Settings`), `GoalKeys`, `ConstraintKeys` — and `DEFAULTS`, the one
place the settings' defaults live. They are the one source of the packaged
`schema/profopt.schema.json` (specfile/schema.py generates it) and the type specfile/checks.py
converts a parsed spec into (`msgspec.convert`). A setting absent at a level is UNSET, so
defaults → benchmark or suite item → command line can layer (specfile/model.py resolves them).
A Meta's `extra["expected"]` is what an error says was expected where the type alone says it badly.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

# A metric as a user names it (a spec's goal.metric, `profopt bisect --metric`) → its key in results@1
# and comparison@1; each use takes the names it allows from here.
METRIC_KEYS = {"step_time": "step_time_ms", "throughput": "throughput", "peak_memory": "peak_memory_mb",
               "step_time_ms": "step_time_ms", "peak_memory_mb": "peak_memory_mb", "instructions": "instructions"}
# A goal is what the user wants of the step itself; an instruction count only stands in for its time.
GOAL_METRICS = {name: key for name, key in METRIC_KEYS.items() if name != "instructions"}
SUITE_KINDS = ("pytest", "asv", "pyperf")
Instrument = Literal["walltime", "instructions"]
Pairing = Literal["lockstep", "rounds"]
INSTRUMENTS, PAIRINGS = get_args(Instrument), get_args(Pairing)
_PERCENT = Meta(description="a percentage such as 3% (a bare number is read as percent)")
Percent = Annotated[str | float, _PERCENT]
Scalar = Annotated[str | int | float | bool, Meta(extra={"expected": "a string, a number or true/false"})]
Env = dict[str, Scalar]
Text = Annotated[str, Meta(min_length=1)]
Tolerance = Annotated[float, Meta(ge=0)]
DAY_MS = 86400e3  # limits far past any real benchmark: a typo'd exponent is an error, not an OverflowError later


def _whole(low: int, high: int, text: str) -> Any:
    return Annotated[int, Meta(ge=low, le=high, description=text)] | UnsetType


def _positive(high: float, text: str) -> Any:
    return Annotated[float, Meta(gt=0, le=high, description=text)] | UnsetType


class Settings(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """How to measure and judge: the keys allowed in `defaults`, per benchmark and per suite item,
    and the one class every stage reads them as. In a spec, a key not given is UNSET;
    specfile/model.py's `resolve_settings` makes the resolved one, where every key is set, from
    `DEFAULTS` (and, for lockstep, `LOCKSTEP_DEFAULTS`), then `defaults:`, then the benchmark's own
    keys (or the command line's): a percentage is then its number (3.0 for "3%") and `instrument`
    a tuple in `INSTRUMENTS`' order."""

    warmup: _whole(0, 10**7, "untimed values before measuring") = UNSET
    min_time_ms: _positive(DAY_MS, "calibrate the inner loop so one value takes at least this long") = UNSET
    values: _whole(1, 10**7, "timed values per worker process (pairing: rounds, and profopt run)") = UNSET
    rounds: _whole(1, 10**6, "rounds before compare's first look, a fresh worker per side each") = UNSET
    max_rounds: _whole(1, 10**6, "compare extends rounds up to this while a metric is inconclusive") = UNSET
    threshold: Annotated[Percent, Meta(description=(
        "τ: the smallest change of step time and throughput that counts; a metric is flagged when its CI "
        "excludes 0 and its estimate reaches τ, unchanged when the whole CI lies within ±τ"))] | UnsetType = UNSET
    memory_tolerance: Annotated[Percent, Meta(description=(
        "peak memory counts as changed beyond max(this share of base, 4 MB), judged on the medians"))
    ] | UnsetType = UNSET
    timeout_s: _positive(30 * 86400, "seconds a worker process may run before it is stopped") = UNSET
    profile: Annotated[Literal["auto", "torch", "cprofile", "off"], Meta(description=(
        "the profiled run after the rounds: auto (torch.profiler when the step loaded torch, else cProfile), "
        "torch, cprofile or off"))] | UnsetType = UNSET
    instrument: Annotated[Instrument | Annotated[list[Instrument], Meta(min_length=1)], Meta(
        description="what is measured: walltime (step time in paired rounds), instructions (Ir per step under "
                    "valgrind's callgrind: deterministic, not time), or both as a list",
        extra={"expected": "walltime, instructions, or a list of both"})] | UnsetType = UNSET
    instructions_threshold: Annotated[Percent, Meta(
        description="smallest change of instructions per step that counts")] | UnsetType = UNSET
    cache_sim: Annotated[bool, Meta(description="instructions: also simulate fixed I1/D1/LL caches and report "
                                                "est_cycles (an estimate; about 3x slower)")] | UnsetType = UNSET
    pairing: Annotated[Pairing, Meta(description=(
        "compare's design. lockstep: each round starts one worker per side, pinned to the same CPUs, and drives "
        "them value by value in random order within each pair (commands: whole processes, 3 pairs a round); "
        "rounds: one fresh process per side per round, `values` × `min_time_ms` each, for steps too long to pair "
        "within a round or sides that do not fit in memory together"))] | UnsetType = UNSET
    value_ms: _positive(DAY_MS, "pairing: lockstep — one value is calibrated to about this long, or one step "
                                "when a step is longer") = UNSET
    round_ms: _positive(DAY_MS, "pairing: lockstep — each round takes enough pairs to fill about this long, "
                                "at least 10 (a step under 1 ms: short_round_ms)") = UNSET
    short_round_ms: _positive(DAY_MS, "pairing: lockstep — round_ms for a step under 1 ms, which makes enough "
                                      "pairs in a shorter round") = UNSET
    quality_steps: _whole(1, 100_000, "the quality pass: steps each side runs from a fresh factory and the same "
                                      "seeds, after the timed rounds; constraints compare the recorded values "
                                      "step by step") = UNSET
    confirm: Annotated[bool, Meta(description=(
        "re-measure the benchmarks a compare flagged (regressed or improved) in a fresh independent run (new "
        "processes, order and seed); the verdict holds only when both runs agree, else it is inconclusive"))
    ] | UnsetType = UNSET

    @property
    def timed(self) -> bool:
        """Wall time is measured (instrument walltime, alone or beside instructions)."""
        return "walltime" in self.instrument


DEFAULTS = Settings(warmup=3, min_time_ms=100.0, values=5, rounds=20, max_rounds=60, threshold="3%",
                       memory_tolerance="5%", timeout_s=600.0, profile="auto", instrument="walltime",
                       instructions_threshold="0.5%", cache_sim=False, pairing="lockstep", value_ms=2.0,
                       round_ms=400.0, short_round_ms=150.0, quality_steps=100, confirm=False)
# The defaults that depend on another key, beside the table (model.resolve_settings applies all three).
# Lockstep rounds are an order of magnitude less noisy (docs/accuracy.md), so fewer of them decide;
# these apply when the spec does not set rounds / max_rounds itself (bench/verdict_accuracy.py --variants).
LOCKSTEP_DEFAULTS: dict[str, Any] = {"rounds": 12, "max_rounds": 48}
# A step under SHORT_STEP_MS gets rounds of short_round_ms, which follows round_ms where only that is
# set. A suite of such steps then takes about half the time, with the same verdicts (docs/experiments.md).
SHORT_STEP_MS = 1.0
SETTING_KEYS = Settings.__struct_fields__


def metas(tp: Any) -> list[Meta]:
    """The Metas of a field's type, through Annotated and unions."""
    found = list(getattr(tp, "__metadata__", ()))
    return [m for m in found if isinstance(m, Meta)] + [m for a in get_args(tp) for m in metas(a)]


PERCENT_KEYS = tuple(f.name for f in msgspec.structs.fields(Settings) if _PERCENT in metas(f.type))


class Defaults(Settings, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Settings of every benchmark and suite item that does not set its own."""

    seed: Annotated[int, Meta(ge=-(2**63), le=2**63 - 1,
                              description="seed of the round order (random when absent)")] | UnsetType = UNSET
    time_budget: Annotated[str | float, Meta(description=(
        "compare: the wall time the whole compare may take, e.g. 25s, 10m or 1h (a bare number is seconds); "
        "the rounds are ordered and sized to fit, a benchmark still undecided when it is spent is inconclusive "
        "('time budget spent after N rounds'), and the comparison and report are written before it ends"),
        extra={"expected": "a duration such as 90s, 10m or 1h"})] | UnsetType = UNSET
    measure: Annotated[Literal["changed", "all"], Meta(description=(
        "compare: changed (default) measures only the benchmarks whose code the change reaches — each "
        "benchmark's process is recorded once on the base (the code units it runs, the files it reads) and a "
        "benchmark none of whose units or files changed is not measured; all measures every benchmark"))
    ] | UnsetType = UNSET


class GoalKeys(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """What the change is meant to do; the report says whether it met it."""

    metric: Annotated[Literal[tuple(GOAL_METRICS)], Meta(  # type: ignore[valid-type]
        description="the metric the goal is about")]
    direction: Annotated[Literal["decrease", "increase"], Meta(description=(
        "which way is better (default: increase for throughput, else decrease)"))] | UnsetType = UNSET
    target: Annotated[Percent, Meta(description="the change the goal asks for, e.g. 10%")] | UnsetType = UNSET


class ConstraintKeys(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A quality metric compared between the sides: exactly one of rel_tol, abs_tol, equal."""

    metric: Annotated[Text, Meta(description=(
        "a value the step record()s (or a command prints as PROFOPT_METRIC name=value), e.g. loss"))]
    rel_tol: Annotated[Tolerance, Meta(description="holds while |head − base| ≤ this share of |base| at every "
                                                   "step, e.g. 0.01")] | UnsetType = UNSET
    abs_tol: Annotated[Tolerance, Meta(description="holds while |head − base| ≤ this at every step")
                       ] | UnsetType = UNSET
    equal: Annotated[bool, Meta(description="true: holds while the values are identical at every step")
                     ] | UnsetType = UNSET


class BenchmarkKeys(Settings, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """One benchmark: exactly one of `callable` and `command`."""

    name: Annotated[str, Meta(pattern="^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100, description=(
        "the benchmark's name in reports and stored results, unique in the spec"), extra={
        "expected": "letters, digits, '.', '_' or '-' (no spaces)"})]
    callable: Annotated[str, Meta(
        pattern="^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$",
        description="module:factory; factory(**params) returns a zero-argument step",
        extra={"expected": "`module:function` (e.g. bench.train:make_step)"})] | UnsetType = UNSET
    command: Annotated[Text | Annotated[list[str], Meta(min_length=1)], Meta(
        description="a whole process, measured from outside",
        extra={"expected": "a command string or a list of arguments"})] | UnsetType = UNSET
    params: Annotated[dict[str, Any], Meta(
        description="the fixed variables, passed to the factory as keyword arguments")] | UnsetType = UNSET
    items_per_iteration: _positive(1e18, "throughput = items / s") = UNSET
    unit: Annotated[Text, Meta(description="what an item is, for the throughput's unit (items/s)")] = "items"
    goal: Annotated[GoalKeys, Meta(description="what the change is meant to do")] | UnsetType = UNSET
    constraints: Annotated[list[ConstraintKeys], Meta(description=(
        "quality values compared between the sides, step by step, in the quality pass"))] | UnsetType = UNSET
    env: Annotated[Env, Meta(description="environment of this benchmark's runs, over the spec's env")
                   ] | UnsetType = UNSET


class SuiteKeys(Settings, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A suite written for another tool, run unchanged: exactly one of pytest, asv, pyperf."""

    pytest: Annotated[Text, Meta(description=(
        "a pytest path (file or directory): tests using the pytest-benchmark `benchmark` fixture or the "
        "pytest-codspeed `@pytest.mark.benchmark` marker"))] | UnsetType = UNSET
    asv: Annotated[Text, Meta(description="an asv benchmark directory, or an asv.conf.json (its benchmark_dir)")
                   ] | UnsetType = UNSET
    pyperf: Annotated[Text, Meta(description="a script that calls pyperf.Runner (bench_func, bench_time_func, "
                                             "timeit, bench_command)")] | UnsetType = UNSET
    select: Annotated[Text, Meta(description="pytest: a -k expression; asv and pyperf: a regular expression "
                                             "searched in the benchmark's name")] | UnsetType = UNSET
    params: Annotated[dict[str, Any], Meta(description=(
        "keep only the benchmarks whose parameters match: name → a value or a list of values (compared as text)"))
    ] | UnsetType = UNSET
    env: Annotated[Env, Meta(description="environment of this suite's runs, over the spec's env")
                   ] | UnsetType = UNSET
    constraints: Annotated[list[ConstraintKeys], Meta(description=(
        "quality values compared between the sides, for every benchmark of the suite"))] | UnsetType = UNSET


class SpecKeys(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A profopt benchmark spec: what to run on both sides of a change and how to judge it."""

    schema_: Annotated[str, Meta(description="ignored by profopt: the JSON Schema an editor checks the file "
                                             "against")] | UnsetType = msgspec.field(default=UNSET, name="$schema")
    version: Annotated[Literal[1], Meta(description="spec format version; only 1 exists",
                                        extra={"expected": "1 (the only spec version)"})]
    hardware_label: Annotated[Text, Meta(description="results are compared only within one label; `auto`: derived "
                                                     "from the CPU model, its logical CPU count and the GPUs, e.g. "
                                                     "cpu-amd-epyc-7763-4c")] = "default"
    setup: Annotated[str | list[str], Meta(
        description="shell command(s) run once per checkout before measuring",
        extra={"expected": "a shell command or a list of them"})] | UnsetType = UNSET
    env: Annotated[Env, Meta(description="fixed environment of every run")] | UnsetType = UNSET
    cpuset: Annotated[Text, Meta(description=(
        "CPUs both sides are pinned to under pairing: lockstep, e.g. 3 or 2-3 (default: one CPU per thread the "
        "step is given by PROFOPT_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS, the last of the CPUs profopt may "
        "use, which the action's cpuset input limits); --cpuset overrides"))] | UnsetType = UNSET
    defaults: Annotated[Defaults, Meta(description="settings of every benchmark and suite item that does not "
                                                   "set its own")] | UnsetType = UNSET
    benchmarks: Annotated[list[BenchmarkKeys], Meta(min_length=1, description=(
        "the benchmarks: a callable (a step function built by a factory) or a command"))] | UnsetType = UNSET
    benchmarks_from: Annotated[Literal["head", "each"], Meta(description=(
        "which side's definitions run on both sides: head (the head's suite or callables run against each "
        "side's code, as asv does) or each (each side runs its own). Default: head for suites, each for "
        "callables"))] | UnsetType = UNSET
    suites: Annotated[list[SuiteKeys], Meta(min_length=1, description=(
        "suites written for another tool, run unchanged: each collected benchmark is an ordinary profopt "
        "benchmark"))] | UnsetType = UNSET


def _limits() -> dict[str, float]:
    out = {}
    for cls in (Defaults, BenchmarkKeys):
        for f in msgspec.structs.fields(cls):
            out.update((f.encode_name, m.le) for m in metas(f.type) if m.le is not None)
    return out


NUMBER_LIMITS = _limits()  # key → the largest value the model allows (`--rounds` has the spec's limit)
