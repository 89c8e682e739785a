"""The typed model of profopt's documents, its core: the shared types and results@1.

In: nothing. Out: msgspec Structs — here the figures' types, `Message`, `Record` (a Struct that
reads like the dict the stages build), `Runner` and results@1; comparison@1 is in
documents/types_comparison.py, baseline@1, sides@1 and bisect@1 in documents/types_stored.py. They
are the one source of the documents' JSON Schemas (documents/schemas.py generates the packaged
`schema/<name>.schema.json` files: `python -m profopt_ci.documents.schemas --write`;
tests/test_document_types.py fails when a file differs) and the types `documents.read` decodes
every document into. A struct lists every key profopt writes at its level and refuses any other
(`forbid_unknown_fields`), so a document read and written again loses nothing; what profopt leaves
open (params, fingerprints, profile summaries, the bottleneck note) is `dict[str, Any]`.

`Sample` and `Metric` stay Structs after reading (a read document is otherwise plain dicts and
lists): a large diff holds ten samples and three metrics per benchmark, which as dicts take
close to twice the memory (docs/data-model.md). They read like the
dicts the stages build (`s["step_time_ms"]`, `m.get("verdict")`, `dict(m)`, `==` a dict).
"""
from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from operator import itemgetter
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.structs import astuple

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
SideName = Literal["base", "head"]
Free = dict[str, Any]  # an object profopt leaves open


class Message(Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """A statement profopt makes in a document, as data: the message id (`bottleneck.python`), its
    fields, and `text`, the English rendering kept beside them for machines (report catalogs render
    `id` + `args` in any language)."""

    id: str
    args: dict[str, Any] = {}
    text: str


# A note the report shows: a message, or (a file from before notes were messages) its English alone.
Note = Message | str


class Record(Struct, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False, frozen=True):
    """Reads like the dict the stages build; absent keys (UNSET) stay absent, also when written."""

    _keys: ClassVar[frozenset[str]] = frozenset()  # the fields, set per class below: a key, never a method's name

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key) if key in self._keys else UNSET
        if value is UNSET:
            raise KeyError(key)
        return value

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
        # as their files read: a nested Message Struct equals the dict a producer wrote
        if isinstance(other, (Record, Mapping)):
            try:
                return msgspec.to_builtins(self) == msgspec.to_builtins(other)
            except TypeError:  # a value with no JSON form (a numpy scalar a test compares with)
                return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a dict, so unhashable like one


Mapping.register(Record)


class _Closed(Record, kw_only=True, forbid_unknown_fields=True, gc=False, frozen=True):
    """A level of a document: every key profopt writes there, no other. Reads like the dict the
    stages build (an entry's blocks are read so before its view is made)."""


def keyed(namespace: dict[str, Any]) -> None:
    """Each Record class defined in `namespace` told its own keys (a module's last line)."""
    for cls in list(namespace.values()):
        if isinstance(cls, type) and issubclass(cls, Record):
            cls._keys = frozenset(cls.__struct_fields__)


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
class GpuTelemetry(_Closed, kw_only=True):
    """A lockstep round's NVML reads on the device the step used, for one side (measure/gpu.py):
    read by the parent between values, never inside one. `unavailable` (and nothing else) where NVML
    could not be read."""

    reads: Tally
    unavailable: str | UnsetType = UNSET  # why there are no reads (no nvidia-ml-py, no driver)
    sm_mhz_min: Number | None | UnsetType = UNSET
    sm_mhz_max: Number | None | UnsetType = UNSET
    mem_mhz_min: Number | None | UnsetType = UNSET
    mem_mhz_max: Number | None | UnsetType = UNSET
    power_w: Number | None | UnsetType = UNSET  # mean of the reads
    temperature_c: Number | None | UnsetType = UNSET  # highest read
    throttle: list[Literal["power_cap", "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal",
                           "power_brake"]] | UnsetType = UNSET  # reasons active in this side's reads
    clocks_held: bool | UnsetType = UNSET  # a clocks setting (nvidia-smi -ac / -lgc) held the clocks
    throttled: bool | UnsetType = UNSET  # the round: a reason was active in either side's reads
    energy_mj: Count | UnsetType = UNSET  # the energy counter's delta over the side's energy block
    energy_steps: Tally | UnsetType = UNSET  # steps in that block
    energy_ms: Number | UnsetType = UNSET  # its wall time
    energy_period_ms: Number | None | UnsetType = UNSET  # how often the counter moved this round


class CompileCounts(_Closed, kw_only=True):
    """A torch.compile step's compiles in one worker (torch._dynamo's counters; harness/compiles.py
    Compiles), none of them inside a timed value."""

    frames: Tally  # frames dynamo compiled, recompiles included
    recompiles: Tally  # frames compiled after the first call's
    graph_breaks: Tally  # graph breaks dynamo counted while compiling (each compile of a frame with one)
    break_reasons: list[str]  # the first line of each distinct reason, at most 5
    graphs: Tally  # graphs captured
    retaken: Tally  # timed values taken again because something compiled during them
    settle_calls: Tally  # untimed calls until the compiles stopped


class Sample(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False, frozen=True):
    """One sample: one worker's round (measure/processes.py, measure/lockstep.py), in the order
    measure writes the keys; the lockstep keys (pairing, pairs, first_share, forked, ahead, preload,
    gpu, energy_per_step_j) only there."""

    round: Tally | UnsetType = UNSET
    order: Tally | UnsetType = UNSET
    pairing: Literal["lockstep"] | UnsetType = UNSET
    pairs: Tally | UnsetType = UNSET
    process_pairs: Tally | UnsetType = UNSET  # lockstep: pairs of worker processes the round's values came from (1: absent)
    first_share: Number | None | UnsetType = UNSET
    step_time_ms: Positive
    values_ms: Annotated[list[Number], Meta(min_length=1)] | UnsetType = UNSET
    loops: Annotated[int, Meta(ge=1, le=2**63 - 1)] | UnsetType = UNSET
    throughput: Number | None | UnsetType = UNSET
    peak_memory_mb: Number | None | UnsetType = UNSET
    cpu_time_ms: Number | None | UnsetType = UNSET
    faults_per_step: Number | None | UnsetType = UNSET  # minor page faults a timed step took (the allocator)
    cuda_max_allocated_mb: Number | None | UnsetType = UNSET
    cuda_max_reserved_mb: Number | None | UnsetType = UNSET
    energy_per_step_j: Number | None | UnsetType = UNSET  # a GPU step's energy (its energy block)
    phases_ms: dict[str, Number] | UnsetType = UNSET
    quality: Free | UnsetType = UNSET
    compile: CompileCounts | UnsetType = UNSET
    gpu: GpuTelemetry | UnsetType = UNSET
    forked: bool | UnsetType = UNSET
    ahead: bool | UnsetType = UNSET
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


class ResultsEntry(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False, frozen=True):
    """One benchmark of a run: its samples, their medians, the profile and quality pass."""

    # Read, an entry stays this Struct (it reads like a dict): a diff holds two per benchmark.

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
    stored_baseline: bool | UnsetType = UNSET  # a stored baseline@1 read as results (store.stored_baselines)
    benchmarks: dict[str, ResultsEntry]


class _Empty(dict):
    """The one empty `phases_ms` / `quality` of every read sample that has none (most: two empty dicts
    a row otherwise). Shared, so it refuses to change."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> None:
        raise TypeError("a read sample's empty phases_ms/quality is shared: copy it to change it")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]


EMPTY: dict = _Empty()


# The slots themselves: a Sample is frozen, and the reader finishes one it has just decoded, before
# anyone holds it (a `replace` per row was a new Struct for each of 10⁶ rows).
_SET_PHASES = Sample.__dict__["phases_ms"].__set__
_SET_QUALITY = Sample.__dict__["quality"].__set__


def share_empty(rows: list[Sample]) -> list[Sample]:
    """`rows`, just decoded, with each empty `phases_ms` / `quality` the shared EMPTY (written back as
    `{}`). Only the reader calls it."""
    for r in rows:
        if type(r.phases_ms) is dict and not r.phases_ms:
            _SET_PHASES(r, EMPTY)
        if type(r.quality) is dict and not r.quality:
            _SET_QUALITY(r, EMPTY)
    return rows


def picked(rows: list[Sample], keys: tuple[str, ...]) -> list[tuple]:
    """Each Sample's values of `keys`, UNSET where a row lacks one (a command's, an older
    profopt's, a CPU run's CUDA memory), without a Python call per value: what the unpaired
    statistics read of 10⁶ read rows. They take UNSET as absent: mapping it to None here was a
    second pass over every row of a group that lacks a key."""
    get = _getter(keys)
    if get is None:
        return [tuple(r.get(k, UNSET) for k in keys) for r in rows]
    return list(map(get, map(astuple, rows)))


@functools.lru_cache(maxsize=8)
def _getter(keys: tuple[str, ...]) -> itemgetter | None:
    """The fields `keys` of a Sample's astuple, or None when they are not all its fields."""
    fields = Sample.__struct_fields__
    if len(keys) < 2 or any(k not in fields for k in keys):
        return None
    return itemgetter(*[fields.index(k) for k in keys])


def json_default(value: Any) -> Any:
    """`default=` for json.dumps of a document that holds Structs (a read one's samples and metrics):
    a Struct as its dict, anything else as str() (what json's default=str did)."""
    if isinstance(value, Struct):
        return msgspec.to_builtins(value)
    return str(value)


keyed(globals())
