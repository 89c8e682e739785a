"""comparison@1's sections beside its entries, as typed Structs: each side (its environment, the
suite runners in it), what differs besides the code, the PR's new benchmarks, the policy, a reused
comparison, the pairing, a stored baseline, the history and its drift. documents/types_comparison.py
holds the entries and the `Comparison` built from these.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from profopt_ci.documents.types import Count, Free, Message, Number, Status, Tally, _Closed


class SuiteRunner(_Closed, kw_only=True):
    """A suite's runner in a side's setup venv (pytest, asv_runner, pyperf): its version, and
    whether profopt added it because the setup did not install it."""

    version: str
    added: bool


class SideEnvironment(_Closed, kw_only=True):
    """Where a side's workers ran: the interpreter, whether in a venv of the side's own (its `setup`
    installed it: nothing of profopt's but its worker) or in profopt's environment, the
    versions of the installed packages its steps imported (each benchmark's first round), its
    suites' runners, and what profopt installed there besides the setup (a runner and what it requires)."""

    python: str
    own: bool
    packages: dict[str, str] | UnsetType = UNSET
    runners: dict[str, SuiteRunner] | UnsetType = UNSET
    added: dict[str, str] | UnsetType = UNSET


class SideInfo(_Closed, kw_only=True):
    """One side of a comparison: the ref as given, its commit, the machine and the environment."""

    ref: str | None
    commit: str | None
    fingerprint: Free
    env: Free
    environment: SideEnvironment | UnsetType = UNSET


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
    cause_msg: Message | UnsetType = UNSET


class Policy(_Closed, kw_only=True):
    """The `--fail-on` rule and the benchmarks that broke it: exit 1 when `failing` is not empty,
    unless the pull request carries the accept label (`label`, then `accepted` says whether it turned
    a failing policy into a pass)."""

    fail_on: Literal["regression", "constraint", "none"]
    failing: list[str]
    accepted: bool | UnsetType = UNSET
    label: str | UnsetType = UNSET


class Reused(_Closed, kw_only=True):
    """compare: a label event's comparison, taken from the cache without new rounds: when the rounds
    were measured (their comparison's `created`) and the event's action."""

    measured: str
    action: str | None


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
    reason_msg: Message | UnsetType = UNSET
    commits: list[str] | UnsetType = UNSET
