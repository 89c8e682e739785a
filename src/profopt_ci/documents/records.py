"""What a read results@1 / comparison@1 holds instead of some of its dicts and lists, to stay small.

In: the JSON of a side's sample rows and of a comparison's metrics. Out:
- `Rows`: one side's rows kept as their JSON text (a slice of the file's bytes) that reads like
  the list of dicts it is (len, iteration, indexing, `==`), decoded anew on each read;
- `Row`: the type that checks one row on reading (the keys measure/processes.py and
  measure/lockstep.py write, each at least as strict as the results@1 schema's sample);
- `Metric`: one metric, kept as a compact record that reads like its dict (`m["delta_pct"]`,
  `m.get("verdict")`, `"p_value" in m`, `dict(m)`, `==` a dict), absent keys still absent (UNSET).
msgspec writes all three back as the JSON they came from; `json_default` lets json.dumps do it.

Why: a diff of 10⁵ benchmarks holds 10⁶ rows and 3·10⁵ metrics. As dicts the rows alone took
~1 KB each; as text they cost the file's bytes and nothing more, and a metric as a `Metric` about
half its dict. documents/fast.py falls back to the plain reader (dicts and lists) for anything
these types do not take: unknown keys, other types, out-of-range numbers.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.structs import astuple

Finite = Annotated[float, Meta(ge=-1e100, le=1e100)]  # check.MAX_ABS: past it the statistics overflow
Count = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Number = Finite | Count  # an integer stays one: the report prints 5, not 5.0


class Record(Struct, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """Reads like the dict it was decoded from; absent keys (UNSET) stay absent, also when written."""

    def __getitem__(self, key: str) -> Any:
        try:
            value = getattr(self, key, UNSET)  # the field's slot; a method's name is no key (_NOT_KEYS)
        except TypeError:  # not a string: no key of a JSON object either
            raise KeyError(key) from None
        if value is UNSET or key in _NOT_KEYS:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.__struct_fields__:  # a key no schema knows: a bug, not data
            raise KeyError(f"{key!r} is not a key of {type(self).__name__}")
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            value = getattr(self, key, UNSET)
        except TypeError:
            return default
        return default if value is UNSET or key in _NOT_KEYS else value

    def __contains__(self, key: object) -> bool:
        return self.get(key, UNSET) is not UNSET  # type: ignore[arg-type]

    # astuple is C: 20 getattr calls in Python were most of a `len(m)`, `bool(m)` or `m.items()`.
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
            return self.to_dict() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a dict, so unhashable like one

    def to_dict(self) -> dict[str, Any]:
        return dict(self.items())


class Row(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """One sample (measure/processes.py, measure/lockstep.py), in the order measure writes the keys."""

    round: Count | UnsetType = UNSET
    order: Count | UnsetType = UNSET
    pairing: str | UnsetType = UNSET
    pairs: Count | UnsetType = UNSET
    first_share: Number | None | UnsetType = UNSET
    step_time_ms: Annotated[float, Meta(gt=0, le=1e100)] | Annotated[int, Meta(gt=0, le=2**63 - 1)]
    values_ms: Annotated[list[Number], Meta(min_length=1)] | UnsetType = UNSET
    loops: Annotated[int, Meta(ge=1, le=2**63 - 1)] | UnsetType = UNSET
    throughput: Number | None | UnsetType = UNSET
    peak_memory_mb: Number | None | UnsetType = UNSET
    cpu_time_ms: Number | None | UnsetType = UNSET
    cuda_max_allocated_mb: Number | None | UnsetType = UNSET
    cuda_max_reserved_mb: Number | None | UnsetType = UNSET
    phases_ms: dict[str, Number] | UnsetType = UNSET
    quality: dict[str, Any] | UnsetType = UNSET


Verdict = Literal["improved", "regressed", "unchanged", "inconclusive", "unstable"]
Tally = Annotated[int, Meta(ge=0, le=2**63 - 1)]


class Metric(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False):
    """One metric of a comparison entry (analyze/stats.py; schema $defs/metric), in stats' key order."""

    base: Number | None | UnsetType = UNSET
    head: Number | None | UnsetType = UNSET
    delta_pct: Number | None | UnsetType = UNSET
    ci_low_pct: Number | None | UnsetType = UNSET
    ci_high_pct: Number | None | UnsetType = UNSET
    p_value: Number | None | UnsetType = UNSET
    verdict: Verdict | None | UnsetType = UNSET
    better: str | UnsetType = UNSET
    n: Tally | None | UnsetType = UNSET
    n_base: Tally | None | UnsetType = UNSET
    n_head: Tally | None | UnsetType = UNSET
    outliers: Tally | None | UnsetType = UNSET
    outlier_note: str | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    paired: bool | UnsetType = UNSET
    confidence: Number | None | UnsetType = UNSET
    p_adjusted: Number | None | UnsetType = UNSET
    p_holm: Number | None | UnsetType = UNSET
    delta_mb: Number | None | UnsetType = UNSET
    tolerance_mb: Number | None | UnsetType = UNSET


Mapping.register(Record)
_NOT_KEYS = frozenset(dir(Record))  # methods and msgspec's own attributes: never a document's key
_DECODE_ROWS = msgspec.json.Decoder(list[Row]).decode
_DECODE_PLAIN = msgspec.json.Decoder(list[dict[str, Any]]).decode


@functools.lru_cache(maxsize=8)
def _picker(keys: tuple[str, ...]) -> Callable[[Any], list]:
    picked = msgspec.defstruct("Picked", [(k, Any, None) for k in keys], gc=False)
    return msgspec.json.Decoder(list[picked]).decode


class Rows(Sequence):
    """One side's sample rows as read: their JSON text (a zero-copy slice of the file's bytes),
    decoded into plain dicts on each read. At 10⁵ benchmarks the rows are 10⁶ objects that only the
    statistics (one benchmark at a time) and the shown part of the report ever look at; kept as
    text they cost nothing beyond the file, and msgspec writes them back verbatim."""

    __slots__ = ("raw", "n", "timed_phases")

    def __init__(self, raw: msgspec.Raw, rows: list[Row]) -> None:
        self.raw, self.n = raw, len(rows)
        # whether a row has a phase timing: the report asks it of every benchmark (details.phases)
        self.timed_phases = any([r.phases_ms for r in rows])

    @classmethod
    def checked(cls, raw: msgspec.Raw) -> tuple[Rows, list[Row]]:
        """Decode once to check every row's types (msgspec.ValidationError when one is wrong)."""
        rows = _DECODE_ROWS(raw)
        return cls(raw, rows), rows

    def rows(self) -> list[dict[str, Any]]:
        """Plain dicts, decoded anew: a reader gets what json.loads gives, and only for as long as it
        holds them (the Row types served to check them on reading)."""
        return _DECODE_PLAIN(self.raw)

    def pick(self, keys: tuple[str, ...]) -> list[tuple]:
        """Each row's values of `keys` (None where absent), decoded without the rest of the row:
        what the batch statistics read of 10⁶ rows, at half the cost of the dicts."""
        return list(map(astuple, _picker(keys)(self.raw)))

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0

    def __getitem__(self, index: Any) -> Any:
        return self.rows()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, list, tuple)):
            return self.rows() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({self.n} rows)"


TRUSTED = (Record, Rows)  # documents.check skips them: msgspec checked their types on reading


def compact_metrics(entries: list[dict]) -> None:
    """Each entry's metric dicts as `Metric`s (~40% of their memory; a diff of 10⁵ benchmarks holds
    3·10⁵ of them through the report). A metric with a key `Metric` lacks stays a dict."""
    convert = msgspec.convert
    for entry in entries:
        metrics = entry.get("metrics")
        for name, m in (metrics or {}).items():
            try:
                metrics[name] = convert(m, Metric)
            except msgspec.ValidationError:
                pass


def json_default(value: Any) -> Any:
    """`default=` for json.dumps of a document that may hold them: a Row or Metric as its dict,
    Rows as the list of row dicts, anything else as str() (what json's default=str did)."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Rows):
        return value.rows()
    return str(value)


def msgspec_default(value: Any) -> Any:
    """`enc_hook` for msgspec: Rows written back as the text they were read from, else str()."""
    if isinstance(value, Rows):
        return value.raw
    return str(value)
