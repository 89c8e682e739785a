"""The typed model of profopt's documents: results@1, comparison@1, baseline@1, sides@1, bisect@1.

In: nothing. Out: msgspec Structs, the one source of the documents' JSON Schemas (the packaged
`schema/<name>.schema.json` files are generated from them: `python -m profopt_ci.documents.types
--write`; tests/test_document_types.py fails when a file differs) and the types `documents.read`
decodes every document into. A struct lists every key profopt writes at its level and refuses any
other (`forbid_unknown_fields`), so a document read and written again loses nothing; what profopt
leaves open (params, fingerprints, profile summaries, the bottleneck note) is `dict[str, Any]`.

`Sample` and `Metric` stay Structs after reading (a read document is otherwise plain dicts and
lists): a diff of 10⁵ benchmarks holds 10⁶ samples and 3·10⁵ metrics, which as dicts take
close to twice the memory (docs/data-model.md). They read like the
dicts the stages build (`s["step_time_ms"]`, `m.get("verdict")`, `dict(m)`, `==` a dict).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from operator import itemgetter
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.structs import astuple

from profopt_ci.documents.names import (
    BASELINE_SCHEMA,
    BISECT_SCHEMA,
    COMPARISON_SCHEMA,
    RESULTS_SCHEMA,
    SCHEMA_FILES,
    SIDES_SCHEMA,
)

# Figures past ±1e100 overflow the statistics (squares, products) into inf/NaN; JSON has no NaN/inf.
Finite = Annotated[float, Meta(ge=-1e100, le=1e100)]
Count = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Number = Finite | Count  # an integer stays one: the report prints 5, not 5.0
Tally = Annotated[int, Meta(ge=0, le=2**63 - 1)]
Positive = Annotated[float, Meta(gt=0, le=1e100)] | Annotated[int, Meta(gt=0, le=2**63 - 1)]
Commit = Annotated[str, Meta(pattern="^[0-9a-f]{7,40}$")]
Status = Literal["ok", "failed", "timeout"]
Decision = Literal["keep", "reject", "trade-off", "no-change", "inconclusive", "failed"]
Verdict = Literal["improved", "regressed", "unchanged", "inconclusive", "unstable"]
Side = Literal["base", "head"]
Free = dict[str, Any]  # an object profopt leaves open


class Message(Struct, kw_only=True, forbid_unknown_fields=True):
    """A statement profopt makes in a document, as data: the message id (`bottleneck.python`), its
    fields, and `text`, the English rendering kept beside them for machines (report catalogs render
    `id` + `args` in any language)."""

    id: str
    args: dict[str, Any] = {}
    text: str


# A note the report shows: a message, or (a file from before notes were messages) its English alone.
Note = Message | str


class _Closed(Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """A level of a document: every key profopt writes there, no other."""


class Record(Struct, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """Reads like the dict the stages build; absent keys (UNSET) stay absent, also when written."""

    _keys: ClassVar[frozenset[str]] = frozenset()  # the fields, set per class below: a key, never a method's name

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key) if key in self._keys else UNSET
        if value is UNSET:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.__struct_fields__:  # a key the model lacks: a bug, not data
            raise KeyError(f"{key!r} is not a key of {type(self).__name__}")
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key) if key in self._keys else UNSET
        return default if value is UNSET else value

    def __contains__(self, key: object) -> bool:
        return key in self._keys and getattr(self, key) is not UNSET  # type: ignore[arg-type]

    # astuple is C: a getattr per field in Python was most of a `len(m)` or `m.items()`.
    def keys(self) -> list[str]:
        return [f for f, v in zip(self.__struct_fields__, astuple(self), strict=True) if v is not UNSET]

    def items(self) -> list[tuple[str, Any]]:
        return [(f, v) for f, v in zip(self.__struct_fields__, astuple(self), strict=True) if v is not UNSET]

    def values(self) -> list[Any]:
        return [v for v in astuple(self) if v is not UNSET]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.__struct_fields__) - astuple(self).count(UNSET)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Record, Mapping)):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a dict, so unhashable like one

    def to_dict(self) -> dict[str, Any]:
        return dict(self.items())


Mapping.register(Record)


class Runner(_Closed, kw_only=True):
    """The runner probe (measure/runner.py): a fixed pure-Python workload timed in profopt's own
    process before and after the run, best of 7, in ms; compare adds the label's stored history."""

    probe: str | UnsetType = UNSET
    ms: Number | UnsetType = UNSET
    python: str | UnsetType = UNSET
    samples: Tally | UnsetType = UNSET
    history_ms: Number | None | UnsetType = UNSET
    history_n: Tally | UnsetType = UNSET
    off_pct: Number | None | UnsetType = UNSET
    state: Literal["slow", "fast", "usual", "no history"] | UnsetType = UNSET


# ---------------------------------------------------------------------------------------- results@1
class Sample(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """One sample: one worker's round (measure/processes.py, measure/lockstep.py), in the order
    measure writes the keys; the lockstep keys (pairing, pairs, first_share, forked, preload) only
    there."""

    round: Tally | UnsetType = UNSET
    order: Tally | UnsetType = UNSET
    pairing: Literal["lockstep"] | UnsetType = UNSET
    pairs: Tally | UnsetType = UNSET
    first_share: Number | None | UnsetType = UNSET
    step_time_ms: Positive
    values_ms: Annotated[list[Number], Meta(min_length=1)] | UnsetType = UNSET
    loops: Annotated[int, Meta(ge=1, le=2**63 - 1)] | UnsetType = UNSET
    throughput: Number | None | UnsetType = UNSET
    peak_memory_mb: Number | None | UnsetType = UNSET
    cpu_time_ms: Number | None | UnsetType = UNSET
    cuda_max_allocated_mb: Number | None | UnsetType = UNSET
    cuda_max_reserved_mb: Number | None | UnsetType = UNSET
    phases_ms: dict[str, Number] | UnsetType = UNSET
    quality: Free | UnsetType = UNSET
    forked: bool | UnsetType = UNSET
    preload: list[str] | UnsetType = UNSET


class QualityTrace(_Closed, kw_only=True):
    """The quality pass: each recorded value step by step, both sides from the same seeds and step
    count; or {status: failed, error} when that pass failed."""

    steps: Tally | UnsetType = UNSET
    values: dict[str, list[Any]] | UnsetType = UNSET
    status: Status | UnsetType = UNSET
    error: str | None | UnsetType = UNSET


class Counted(_Closed, kw_only=True):
    """instrument: instructions — callgrind's count of one benchmark on one side."""

    status: Status
    error: str | None | UnsetType = UNSET  # valgrind's log tail and the worker's stderr when not ok
    n: Annotated[int, Meta(ge=1)] | UnsetType = UNSET  # the regions held N and 2N steps
    runs: list[Number]  # Ir per step, one per valgrind run
    est_cycles_runs: list[Number] | UnsetType = UNSET  # with cache_sim: estimated cycles per step
    instructions: Number | UnsetType = UNSET  # median Ir per step over the runs
    est_cycles: Number | None | UnsetType = UNSET  # L1 hits + 5·LL hits + 35·RAM accesses per step
    functions: dict[str, Number] | UnsetType = UNSET  # self Ir per step of the top C functions
    objects: dict[str, str] | UnsetType = UNSET  # the object file of each function
    quality: Free | UnsetType = UNSET


class ResultsEntry(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """One benchmark of a run: its samples, their medians, the profile and quality pass."""

    # Read, an entry stays this Struct (it reads like a dict): a diff of 10⁵ holds 2·10⁵ of them.

    kind: Literal["callable", "command"] | UnsetType = UNSET
    params: Free | UnsetType = UNSET
    unit: str | None | UnsetType = UNSET
    items_per_iteration: Number | None | UnsetType = UNSET
    status: Status
    error: str | None | UnsetType = UNSET  # stderr tail when not ok
    samples: list[Sample]
    summary: dict[str, Number] | UnsetType = UNSET  # medians; instructions and est_cycles when counted
    profile: Free | None | UnsetType = UNSET  # the profile summary when one was taken
    quality: QualityTrace | None | UnsetType = UNSET
    instructions: Counted | None | UnsetType = UNSET


ResultsEntry._keys = frozenset(ResultsEntry.__struct_fields__)


class Results(_Closed, kw_only=True):
    """profopt/results@1: what one side measured (`run`, `merge`, each side of `compare`)."""

    schema: Literal["profopt/results@1"]
    tool_version: str | UnsetType = UNSET
    created: str | UnsetType = UNSET
    commit: str | None | UnsetType = UNSET
    dirty: bool | UnsetType = UNSET
    spec_hash: str | UnsetType = UNSET
    hardware_label: str | UnsetType = UNSET
    seed: Count | None | UnsetType = UNSET
    fingerprint: Free | UnsetType = UNSET
    env: dict[str, str] | UnsetType = UNSET
    rounds: Tally | UnsetType = UNSET
    shard: Free | str | None | UnsetType = UNSET  # `run --shard`: which benchmarks this shard ran
    merged_from: list[Any] | UnsetType = UNSET  # `merge`: the shards
    runner: Runner | None | UnsetType = UNSET
    stored_baseline: bool | UnsetType = UNSET  # a stored baseline@1 read as results (store.baseline)
    benchmarks: dict[str, ResultsEntry]


Sample._keys = frozenset(Sample.__struct_fields__)


class _Empty(dict):
    """The one empty `phases_ms` / `quality` of every read sample that has none (most: 2 × 64 bytes
    a row, ~130 MB at 10⁶ rows). Shared, so it refuses to change."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> None:
        raise TypeError("a read sample's empty phases_ms/quality is shared: copy it to change it")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]


EMPTY: dict = _Empty()


def share_empty(rows: list[Sample]) -> list[Sample]:
    """`rows` with each empty `phases_ms` / `quality` the shared EMPTY (written back as `{}`)."""
    for r in rows:
        if type(r.phases_ms) is dict and not r.phases_ms:
            r.phases_ms = EMPTY
        if type(r.quality) is dict and not r.quality:
            r.quality = EMPTY
    return rows


# ------------------------------------------------------------------------------------- comparison@1
class Metric(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """One metric of a comparison entry (analyze/stats.py, measure/instruction_runs.py), in their key
    order. Counts (instructions, est_cycles) add `interval: runs_range` and the noise floor."""

    base: Number | None | UnsetType = UNSET
    head: Number | None | UnsetType = UNSET
    delta_pct: Number | None | UnsetType = UNSET
    ci_low_pct: Number | None | UnsetType = UNSET
    ci_high_pct: Number | None | UnsetType = UNSET
    p_value: Number | None | UnsetType = UNSET
    verdict: Verdict | None | UnsetType = UNSET
    better: Literal["lower", "higher"] | None | UnsetType = UNSET
    n: Tally | None | UnsetType = UNSET
    n_base: Tally | None | UnsetType = UNSET
    n_head: Tally | None | UnsetType = UNSET
    outliers: Tally | None | UnsetType = UNSET
    outlier_note: str | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    paired: bool | None | UnsetType = UNSET
    confidence: Number | None | UnsetType = UNSET
    p_adjusted: Number | None | UnsetType = UNSET
    p_holm: Number | None | UnsetType = UNSET
    delta_mb: Number | None | UnsetType = UNSET
    tolerance_mb: Number | None | UnsetType = UNSET
    interval: Literal["runs_range"] | UnsetType = UNSET
    threshold_pct: Number | None | UnsetType = UNSET
    noise_floor_pct: Number | None | UnsetType = UNSET
    noise_floor_min_pct: Number | None | UnsetType = UNSET
    noise_floor_by_side: dict[str, Number | None] | UnsetType = UNSET
    runs: dict[str, list[Number]] | UnsetType = UNSET
    spread_pct: dict[str, Number | None] | UnsetType = UNSET


Metric._keys = frozenset(Metric.__struct_fields__)


class SideInfo(_Closed, kw_only=True):
    """One side of a comparison: the ref as given, its commit, the machine and the environment."""

    ref: str | None | UnsetType = UNSET
    commit: str | None | UnsetType = UNSET
    fingerprint: Free | UnsetType = UNSET
    env: Free | UnsetType = UNSET


class Difference(_Closed, kw_only=True):
    """Something besides the code that differs between the sides."""

    scope: str
    benchmark: str | None | UnsetType = UNSET
    key: str | None | UnsetType = UNSET
    base: Any = UNSET
    head: Any = UNSET
    material: bool | UnsetType = UNSET  # fingerprint: a key that changes speed (measure.fingerprint)


class NewBenchmark(_Closed, kw_only=True):
    """compare: a benchmark the base lacks, measured on head only."""

    name: str
    status: Status
    error: str | None | UnsetType = UNSET
    rounds: Tally
    head: dict[str, Number | None] | None | UnsetType = UNSET
    cause: str | UnsetType = UNSET  # why the base did not run it (a suite's benchmark the base cannot collect or run)


class Policy(_Closed, kw_only=True):
    """The `--fail-on` rule and the benchmarks that broke it: exit 1 when `failing` is not empty."""

    fail_on: Literal["regression", "constraint", "none"]
    failing: list[str]


class Pairing(_Closed, kw_only=True):
    """compare: how the rounds ran; `cpuset` a list when the benchmarks' sets differ."""

    kind: Literal["lockstep", "rounds", "mixed"]
    cpuset: str | list[str] | None | UnsetType = UNSET


class StoredBaseline(_Closed, kw_only=True):
    """compare --baseline stored|both: the stored run the head was compared with."""

    mode: Literal["stored", "both"]
    store: str
    path: str | None | UnsetType = UNSET
    commit: str | None | UnsetType = UNSET
    created: str | None | UnsetType = UNSET
    age_days: Number | None | UnsetType = UNSET
    commits_before_base: Count | None | UnsetType = UNSET
    base_commit: str | UnsetType = UNSET


class HistoryChangePoint(_Closed, kw_only=True):
    """A step in a benchmark's stored history (analyze/changepoints.py)."""

    index: Annotated[int, Meta(ge=1)]
    from_commit: str | UnsetType = UNSET
    to_commit: str | UnsetType = UNSET
    delta_pct: Number
    p_value: Number | None | UnsetType = UNSET


class History(_Closed, kw_only=True):
    """One benchmark's stored values of a metric, oldest first, and the change points in them."""

    metric: str
    values: list[Number]
    commits: list[str]
    dates: list[str] | UnsetType = UNSET
    head: Number | None | UnsetType = UNSET
    head_commit: str | UnsetType = UNSET
    change_points: list[HistoryChangePoint] | UnsetType = UNSET


class Drift(_Closed, kw_only=True):
    """compare --baseline both: the fresh base run against the stored history of its label."""

    fresh: Number | None
    n: Tally
    history_median: Number | None | UnsetType = UNSET
    history_min: Number | None | UnsetType = UNSET
    history_max: Number | None | UnsetType = UNSET
    delta_pct: Number | None | UnsetType = UNSET
    z: Number | None | UnsetType = UNSET
    drifted: bool | None
    reason: str | None | UnsetType = UNSET
    commits: list[str] | UnsetType = UNSET


class EntryError(_Closed, kw_only=True):
    """Why a benchmark failed: the side, its status and the stderr (or valgrind) tail."""

    side: str | None | UnsetType = UNSET
    status: str | None | UnsetType = UNSET
    message: str | None | UnsetType = UNSET
    instrument: Literal["instructions"] | UnsetType = UNSET


class Steps(_Closed, kw_only=True):
    first: Count
    last: Count
    count: Tally


class Constraint(_Closed, kw_only=True):
    """One quality constraint, checked step by step on the quality pass (analyze/quality.py);
    `problem` when it could not be compared as asked."""

    metric: str
    rule: str | UnsetType = UNSET
    limit: Any = UNSET
    base: Any = UNSET
    head: Any = UNSET
    ok: bool
    steps: Steps | None | UnsetType = UNSET
    worst_step: Count | None | UnsetType = UNSET
    max_delta: Number | None | UnsetType = UNSET
    first_broken_step: Count | None | UnsetType = UNSET
    detail: str | UnsetType = UNSET
    problem: Literal["pass_failed", "not_recorded", "never_same", "not_a_number", "one_side"] | UnsetType = UNSET
    failed_side: Side | UnsetType = UNSET
    one_side_step: Annotated[int, Meta(ge=1)] | UnsetType = UNSET


class FunctionDiff(_Closed, kw_only=True):
    name: str | None | UnsetType = UNSET
    object: str | None | UnsetType = UNSET
    base_ir: Number | None | UnsetType = UNSET
    head_ir: Number | None | UnsetType = UNSET
    delta_ir: Number | None | UnsetType = UNSET
    delta_pct: Number | None | UnsetType = UNSET
    only_in: Side | None | UnsetType = UNSET


class CountedPair(_Closed, kw_only=True):
    """instrument: instructions — both sides' counts and the C functions whose Ir changed."""

    base: Free | None | UnsetType = UNSET
    head: Free | None | UnsetType = UNSET
    function_diff: list[FunctionDiff] | UnsetType = UNSET
    notes: list[Note] | UnsetType = UNSET


class QualityPair(_Closed, kw_only=True):
    base: QualityTrace | None | UnsetType = UNSET
    head: QualityTrace | None | UnsetType = UNSET


class ProfilePair(_Closed, kw_only=True):
    """The profile summary of each side (docs/data-model.md) and the hot ops that changed."""

    base: Free | None | UnsetType = UNSET
    head: Free | None | UnsetType = UNSET
    hot_diff: list[Free] | None | UnsetType = UNSET


class ConfirmRun(_Closed, kw_only=True):
    delta_pct: Number | None | UnsetType = UNSET
    ci_low_pct: Number | None | UnsetType = UNSET
    ci_high_pct: Number | None | UnsetType = UNSET
    p_value: Number | None | UnsetType = UNSET
    verdict: Verdict | None | UnsetType = UNSET


class ConfirmPair(_Closed, kw_only=True):
    first: ConfirmRun
    second: ConfirmRun


class Confirm(_Closed, kw_only=True):
    """confirm: true — the flagged metrics measured again in an independent run (new processes,
    order and seed); agreed false: their verdicts became inconclusive."""

    seed: Count
    rounds: Count | None | UnsetType = UNSET
    agreed: bool
    metrics: dict[str, ConfirmPair]


class Entry(_Closed, kw_only=True):
    """One benchmark of a comparison: its decision, metrics, constraints and both sides' samples."""

    name: str
    unit: str | None | UnsetType = UNSET
    goal: Free | None | UnsetType = UNSET
    status: dict[str, str] | UnsetType = UNSET
    error: EntryError | None | UnsetType = UNSET
    rounds: Tally | UnsetType = UNSET
    outlier_rounds: Tally | UnsetType = UNSET
    metrics: dict[str, Metric] | UnsetType = UNSET
    constraints: list[Constraint] | UnsetType = UNSET
    bottleneck: Free | None | UnsetType = UNSET
    profile: ProfilePair | None | UnsetType = UNSET
    samples: dict[str, list[Sample]] | UnsetType = UNSET
    quality: QualityPair | UnsetType = UNSET
    instructions: CountedPair | None | UnsetType = UNSET
    confirm: Confirm | UnsetType = UNSET
    pairing: Literal["lockstep", "rounds"] | UnsetType = UNSET
    cpuset: str | None | UnsetType = UNSET
    threads: Free | None | UnsetType = UNSET  # lockstep: the step's own parallelism, per side
    decision: Decision
    reason: str | None | UnsetType = UNSET


class Counts(_Closed, kw_only=True):
    benchmarks: Tally | UnsetType = UNSET
    regressed: Tally | UnsetType = UNSET
    improved: Tally | UnsetType = UNSET
    constraint_failures: Tally | UnsetType = UNSET
    failed: Tally | UnsetType = UNSET
    inconclusive: Tally | UnsetType = UNSET


class Comparison(_Closed, kw_only=True):
    """profopt/comparison@1: base vs head (`compare`, `diff`); the sections a verb does not produce
    are absent (docs/data-model.md says which verb writes which)."""

    schema: Literal["profopt/comparison@1"]
    tool_version: str | UnsetType = UNSET
    created: str | UnsetType = UNSET
    mode: Literal["paired", "unpaired"] | UnsetType = UNSET
    hardware_label: str | None | UnsetType = UNSET
    seed: Count | None | UnsetType = UNSET
    rounds: Tally | UnsetType = UNSET
    threshold_pct: Number | None | UnsetType = UNSET
    confidence: Number | None | UnsetType = UNSET
    base: SideInfo | UnsetType = UNSET
    head: SideInfo | UnsetType = UNSET
    differences: list[Difference] | UnsetType = UNSET
    decision: Decision
    summary: str | UnsetType = UNSET
    counts: Counts | UnsetType = UNSET
    notes: list[Note] | UnsetType = UNSET
    benchmarks: list[Entry]
    pairing: Pairing | UnsetType = UNSET
    dirty: bool | UnsetType = UNSET
    new_in_pr: list[NewBenchmark] | UnsetType = UNSET
    runner: Runner | None | UnsetType = UNSET
    policy: Policy | UnsetType = UNSET
    baseline: StoredBaseline | UnsetType = UNSET
    history: dict[str, History] | UnsetType = UNSET
    drift: dict[str, Drift] | UnsetType = UNSET


# --------------------------------------------------------------------------------------- baseline@1
class StoredMetric(_Closed, kw_only=True):
    """One metric of a stored benchmark: the per-round values, their median and CI."""

    median: Number
    ci_low: Number | None | UnsetType = UNSET
    ci_high: Number | None | UnsetType = UNSET
    confidence: Annotated[float, Meta(gt=0, le=1)] | UnsetType = UNSET
    n: Annotated[int, Meta(ge=1)]
    values: Annotated[list[Number], Meta(min_length=1)]


class StoredBenchmark(_Closed, kw_only=True):
    """One benchmark of a stored run, compacted by store.baseline.bench_summary."""

    kind: Literal["callable", "command"] | None | UnsetType = UNSET
    params: Free | UnsetType = UNSET
    unit: str | None | UnsetType = UNSET
    items_per_iteration: Number | None | UnsetType = UNSET
    rounds: Tally
    round_cost_ms: Number | None | UnsetType = UNSET
    metrics: dict[str, StoredMetric]
    quality: dict[str, list[Any]] | UnsetType = UNSET
    instructions: Free | UnsetType = UNSET
    quality_trace: QualityTrace | None | UnsetType = UNSET


class Baseline(_Closed, kw_only=True):
    """profopt/baseline@1: one stored nightly run (`profopt baseline refresh`), compacted from its
    results@1 (docs/baselines.md)."""

    schema: Literal["profopt/baseline@1"]
    tool_version: str | UnsetType = UNSET
    created: str | UnsetType = UNSET
    commit: Commit
    ref: str | None | UnsetType = UNSET
    dirty: bool | UnsetType = UNSET
    spec_hash: str | None | UnsetType = UNSET
    hardware_label: str
    fingerprint: Free | UnsetType = UNSET
    env: dict[str, str] | UnsetType = UNSET
    rounds: Count | None | UnsetType = UNSET
    seed: Count | None | UnsetType = UNSET
    runner: Runner | None | UnsetType = UNSET
    benchmarks: dict[str, StoredBenchmark]
    failed: dict[str, str] | UnsetType = UNSET  # benchmarks that did not finish: not stored


# ------------------------------------------------------------------------------------------ sides@1
class PreparedSide(_Closed, kw_only=True):
    name: Side
    root: str
    python: str
    env: dict[str, str]
    ref: str | None
    commit: Commit


class Sides(_Closed, kw_only=True):
    """profopt/sides@1 (profopt-sides.json): the checkouts `compare --phase setup` prepared, read by
    `compare --phase measure` in the same --workdir."""

    schema: Literal["profopt/sides@1"]
    repo: str
    sides: Annotated[list[PreparedSide], Meta(min_length=2)]
    setup_failures: dict[str, str]  # {side: error}: the measure phase reports them as failed


# ----------------------------------------------------------------------------------------- bisect@1
Pct = Number | None


class End(_Closed, kw_only=True):
    ref: str | None
    commit: str


class Estimate(_Closed, kw_only=True):
    """One paired compare of a bisection: the verdict and Δ of the searched metric."""

    verdict: Literal["regressed", "improved", "unchanged", "inconclusive", "unstable", "failed"]
    delta_pct: Pct
    ci_low_pct: Pct
    ci_high_pct: Pct
    rounds: Count | None
    error: str | UnsetType = UNSET


class EndChange(_Closed, kw_only=True):
    """The good end against the bad end for one benchmark: what established the change."""

    benchmark: str
    estimate: Estimate
    attempts: list[Estimate] | UnsetType = UNSET
    searched: bool


class Candidate(_Closed, kw_only=True):
    commit: str
    subject: str
    author_date: str
    pr: Count | None


class Step(_Closed, kw_only=True):
    """The first commit where a benchmark changed, its effect and the commits it could also be."""

    benchmark: str
    commit: str
    subject: str
    author_date: str
    pr: Count | None
    good_end: str
    effect: Estimate
    candidates: list[Candidate]


class Probe(_Closed, kw_only=True):
    benchmark: str
    good_end: str
    commit: str
    subject: str
    class_: Literal["bad", "good", "inconclusive", "skip", "step-check"] = msgspec.field(name="class")
    estimate: Estimate
    attempts: list[Estimate]
    seconds: Number


class ChangePoint(_Closed, kw_only=True):
    """baseline refresh --bisect: the step in the nightly history a bisection explains."""

    label: str
    benchmark: str
    from_commit: str  # the last nightly before the step (12 hex)
    to_commit: str  # the first nightly after it (12 hex)
    delta_pct: Number
    p_value: Number | UnsetType = UNSET
    before: Number  # median step time (ms) of the nightlies before
    after: Number  # median step time (ms) of the nightlies after
    from_date: str | UnsetType = UNSET
    to_date: str | UnsetType = UNSET


class Bisect(_Closed, kw_only=True):
    """profopt/bisect@1 (bisect.json): the first-parent commits between a good and a bad end searched
    for the commit that changed a benchmark (`profopt bisect`, `profopt baseline refresh --bisect`)."""

    schema: Literal["profopt/bisect@1"]
    tool_version: str
    created: str  # when the bisection started, ISO 8601 UTC
    good: End
    bad: End
    metric: str  # step_time_ms, instructions, peak_memory_mb or a recorded quality value
    threshold_pct: Number  # τ: the smallest change that counts
    hardware_label: str
    commits: Tally  # first-parent commits after the good end up to the bad end
    ends: list[EndChange]
    first_bad: Step | None
    steps: list[Step]
    probes: list[Probe]
    notes: list[str]
    seconds: Number
    change_point: ChangePoint | UnsetType = UNSET


def picked(rows: list[Sample], keys: tuple[str, ...]) -> list[tuple]:
    """Each Sample's values of `keys` (None where absent), without a Python call per value: what the
    unpaired statistics read of 10⁶ read rows."""
    fields = Sample.__struct_fields__
    if len(keys) < 2 or any(k not in fields for k in keys):
        return [tuple(r.get(k) for k in keys) for r in rows]
    get = itemgetter(*[fields.index(k) for k in keys])
    out = list(map(get, map(astuple, rows)))
    if any(UNSET in t for t in out):  # a row without one of the keys (a command's, an older profopt's)
        out = [tuple(None if v is UNSET else v for v in t) for t in out]
    return out


def compact_metrics(entries: list[dict]) -> None:
    """Each entry's metric dicts as `Metric`s (~30% of their memory; a diff of 10⁵ benchmarks holds
    3·10⁵ of them through the report). A metric with a key `Metric` lacks stays a dict."""
    convert = msgspec.convert
    for entry in entries:
        metrics = entry.get("metrics")
        for name, m in (metrics or {}).items():
            if isinstance(m, dict):
                try:
                    metrics[name] = convert(m, Metric)
                except msgspec.ValidationError:
                    pass


def json_default(value: Any) -> Any:
    """`default=` for json.dumps of a document that holds Structs (a read one's samples and metrics):
    a Struct as its dict, anything else as str() (what json's default=str did)."""
    if isinstance(value, Struct):
        return msgspec.to_builtins(value)
    return str(value)


DOCUMENTS: dict[str, type[Struct]] = {RESULTS_SCHEMA: Results, COMPARISON_SCHEMA: Comparison,
                                      BASELINE_SCHEMA: Baseline, SIDES_SCHEMA: Sides, BISECT_SCHEMA: Bisect}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one document, generated from its Struct."""
    generated = msgspec.json.schema(DOCUMENTS[name])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": name,
            "description": f"Generated from profopt_ci.documents.types.{DOCUMENTS[name].__name__}: "
                           "`python -m profopt_ci.documents.types --write`; do not edit by hand.",
            **generated}


def schema_text(name: str) -> str:
    """The packaged file's exact text for one document."""
    return json.dumps(json_schema(name), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """`--write`: regenerate the packaged schema files; `--check`: exit 1 when one differs."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "schema"
    stale = [n for n in DOCUMENTS if (folder / f"{SCHEMA_FILES[n]}.schema.json").read_text() != schema_text(n)]
    if "--write" in argv:
        for name in DOCUMENTS:
            (folder / f"{SCHEMA_FILES[name]}.schema.json").write_text(schema_text(name), encoding="utf-8")
        print(f"wrote {len(DOCUMENTS)} schemas to {folder}")
        return 0
    for name in stale:
        print(f"{folder / SCHEMA_FILES[name]}.schema.json differs from documents/types.py (run with --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
