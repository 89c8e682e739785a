"""baseline@1, sides@1 and bisect@1 as typed Structs (documents/types.py has the shared types).

In: nothing. Out: `Baseline`, `Sides`, `Bisect` and their parts.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from profopt_ci.documents.types import (
    Commit,
    Count,
    Free,
    Note,
    Number,
    QualityTrace,
    Runner,
    SideName,
    Tally,
    _Closed,
    keyed,
)


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
    """One benchmark of a stored run, compacted by store.stored_baselines.bench_summary."""

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
    tool_version: str
    created: str
    commit: Commit
    ref: str | None
    dirty: bool
    spec_hash: str | None
    hardware_label: str
    fingerprint: Free
    env: dict[str, str]
    rounds: Count | None
    seed: Count | None
    runner: Runner | None | UnsetType = UNSET
    benchmarks: dict[str, StoredBenchmark]
    failed: dict[str, str]  # benchmarks that did not finish: not stored


# ------------------------------------------------------------------------------------------ sides@1
class PreparedSide(_Closed, kw_only=True):
    name: SideName
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
    reached: bool | UnsetType = UNSET  # False: the commit's change does not reach the benchmark's code (not measured)


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
    notes: list[Note]  # messages (words/i18n.message); plain strings in a file from before them
    seconds: Number
    change_point: ChangePoint | UnsetType = UNSET


keyed(globals())
