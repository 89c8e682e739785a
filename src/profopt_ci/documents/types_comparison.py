"""comparison@1 as typed Structs (documents/types.py has the shared types and why they are Structs).

In: nothing. Out: `Comparison` and its parts, and `Metric`: a metric entry, built as a Struct by its
producer (analyze/stats.py) and kept one after reading.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from profopt_ci.documents.types import (
    Count,
    Decision,
    Free,
    Message,
    Note,
    Number,
    QualityTrace,
    Record,
    Runner,
    Sample,
    SideName,
    Tally,
    Verdict,
    _Closed,
    keyed,
)
from profopt_ci.documents.types_sections import (
    Difference,
    Drift,
    History,
    NewBenchmark,
    Pairing,
    Policy,
    Reused,
    SideInfo,
    StoredBaseline,
)


# ------------------------------------------------------------------------------------- comparison@1
class Metric(Record, kw_only=True, gc=False, forbid_unknown_fields=True, eq=False, frozen=True):
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
    # the smallest change in % its rounds could have flagged, at their noise and α: max(τ, the CI's
    # half-width) for a paired or unpaired time; the tolerance for memory; max(τ, the noise floor) for counts
    mde: Number | None | UnsetType = UNSET
    reason_msg: Message | UnsetType = UNSET  # `reason` as a message (the report says it in its language)
    outlier_note_msg: Message | UnsetType = UNSET


def typed_messages(fields: dict[str, Any]) -> dict[str, Any]:
    """A producer's own `fields` of a Metric with each message it made as a dict a `Message` (sharing
    its args and text), as the model has it and a read Metric holds it."""
    for key in ("reason_msg", "outlier_note_msg"):
        msg = fields.get(key)
        if type(msg) is dict:
            fields[key] = Message(**msg)
    return fields


# The slots themselves: a Metric is frozen, and the reader finishes one it has just decoded, before
# anyone holds it (as documents.types does a Sample's empty dicts).
_SET_REASON = Metric.__dict__["reason"].__set__
_SET_REASON_MSG = Metric.__dict__["reason_msg"].__set__


def share_messages(metrics: dict[str, Metric], seen: dict[tuple[str, str], Message]) -> None:
    """Just-decoded metrics with each reason message the one `seen` already holds where they are
    equal (most benchmarks of a big comparison give the same reasons), and the English beside it
    the message's own text: one object each instead of one per metric. Only the reader calls it."""
    for m in metrics.values():
        msg = m.reason_msg
        if type(msg) is not Message:
            continue
        kept = seen.setdefault((msg.id, msg.text), msg)
        if kept is not msg and kept.args == msg.args:
            _SET_REASON_MSG(m, kept)
            msg = kept
        if m.reason == msg.text:
            _SET_REASON(m, msg.text)


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
    detail_msg: Message | UnsetType = UNSET
    problem: Literal["pass_failed", "not_recorded", "never_same", "not_a_number", "one_side"] | UnsetType = UNSET
    failed_side: SideName | UnsetType = UNSET
    one_side_step: Annotated[int, Meta(ge=1)] | UnsetType = UNSET


class FunctionDiff(_Closed, kw_only=True):
    name: str | None | UnsetType = UNSET
    object: str | None | UnsetType = UNSET
    base_ir: Number | None | UnsetType = UNSET
    head_ir: Number | None | UnsetType = UNSET
    delta_ir: Number | None | UnsetType = UNSET
    delta_pct: Number | None | UnsetType = UNSET
    only_in: SideName | None | UnsetType = UNSET


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


class Reach(_Closed, kw_only=True):
    """compare: whether the change reaches the benchmark's code (pipeline/reach_gate.py): measured or
    not, the units and files it reached (`file:qualname`, a file, a directory), and why."""

    measured: bool
    changed: list[str]
    why: Message
    nightly_ms: Number | UnsetType = UNSET  # not measured: its step time in the newest nightly at or before the base
    nightly_commit: str | UnsetType = UNSET


class ReachSummary(_Closed, kw_only=True):
    """compare: `measure` as it ran — how many benchmarks were measured and not, how many reach
    records were made now or reused (kept from an earlier run), and what making them took."""

    mode: Literal["changed", "all"]
    measured: Tally
    not_measured: Tally
    recorded: Tally | UnsetType = UNSET
    reused: Tally | UnsetType = UNSET
    seconds: Number | UnsetType = UNSET


# Made once its decision is (analyze/judge.finish); a later pass returns a new one
# (documents.comparison.revised). It reads like the dict the judging built, as every level does.
class Entry(_Closed, kw_only=True):
    """One benchmark of a comparison: its decision, metrics, constraints and both sides' samples."""

    name: str
    unit: str | None
    goal: Free | None
    status: dict[str, str]
    error: EntryError | None
    rounds: Tally
    outlier_rounds: Tally
    throttled_rounds: Tally | UnsetType = UNSET  # a GPU step's rounds whose clocks were throttled: not judged
    metrics: dict[str, Metric]
    constraints: list[Constraint]
    bottleneck: Free | None
    profile: ProfilePair | None
    samples: dict[str, list[Sample]]
    quality: QualityPair | UnsetType = UNSET
    instructions: CountedPair | None | UnsetType = UNSET
    confirm: Confirm | UnsetType = UNSET
    pairing: Literal["lockstep", "rounds"] | UnsetType = UNSET
    cpuset: str | None | UnsetType = UNSET
    threads: Free | None | UnsetType = UNSET  # lockstep: the step's own parallelism, per side
    reach: Reach | UnsetType = UNSET  # compare: whether the change reaches it (measure: changed)
    decision: Decision
    reason: str | None | UnsetType = UNSET
    reason_msg: Message | UnsetType = UNSET


class Counts(_Closed, kw_only=True):
    benchmarks: Tally
    regressed: Tally
    improved: Tally
    constraint_failures: Tally
    failed: Tally
    inconclusive: Tally
    not_measured: Tally | UnsetType = UNSET  # compare, measure: changed: the benchmarks the change does not reach


class Comparison(_Closed, kw_only=True):
    """profopt/comparison@1: base vs head (`compare`, `diff`); the sections a verb does not produce
    are absent (docs/data-model.md says which verb writes which)."""

    schema: Literal["profopt/comparison@1"]
    tool_version: str
    created: str
    mode: Literal["paired", "unpaired"]
    hardware_label: str | None
    seed: Count | None
    rounds: Tally
    threshold_pct: Number | None
    confidence: Number | None
    base: SideInfo
    head: SideInfo
    differences: list[Difference]
    decision: Decision
    summary: str
    summary_msg: Message | UnsetType = UNSET
    counts: Counts
    notes: list[Note]
    benchmarks: list[Entry]
    pairing: Pairing | UnsetType = UNSET
    reach: ReachSummary | UnsetType = UNSET
    dirty: bool | UnsetType = UNSET
    new_in_pr: list[NewBenchmark] | UnsetType = UNSET
    runner: Runner | None | UnsetType = UNSET
    policy: Policy | UnsetType = UNSET
    reused: Reused | UnsetType = UNSET
    baseline: StoredBaseline | UnsetType = UNSET
    history: dict[str, History] | UnsetType = UNSET
    drift: dict[str, Drift] | UnsetType = UNSET


keyed(globals())
