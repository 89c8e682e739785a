"""A label event changes the policy, not the measurement: the comparison of the same two commits,
spec and hardware label is kept after every compare and, for a `labeled` / `unlabeled` event,
judged again from the cache instead of measured again.

In: the event that `GITHUB_EVENT_PATH` names (the pull request's labels and the event's action),
the accept label's name (`--accept-label`, the action input `accept-label`), the plan, the refs and
what else decides what a compare measures (`--measure`, the time budget, `--baseline both`). Out:
`Labels` (whether the pull request carries the accept label, whether the event is a label event);
`keep`, the finished comparison stored under its key in `$PROFOPT_CACHE_DIR/compare/` (by
`profopt compare`, once its outputs are written); `reused`,
for a label event whose key is stored, that comparison with its policy judged anew under this run's
`--fail-on` and labels (`documents.comparison.rejudged`: no round, no checkout, no setup).

The key is everything a measurement depends on that a label cannot change: profopt's version, the
base and head commits, the spec file's bytes and the suites the command line adds, the overrides
(threshold, rounds, pairing, CPU set, instrument, confirm), the hardware label, `measure`, the time
budget and whether the base's nightlies were read. A file this version cannot read is ignored (the
compare measures); a cache that cannot be written is skipped.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import msgspec

from profopt_ci import __version__
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.errors import ProfoptError
from profopt_ci.gitutil import toplevel
from profopt_ci.measure.checkouts import resolve_refs
from profopt_ci.measure.tree_env import cache_root
from profopt_ci.pipeline.entries import accepted_note, policy
from profopt_ci.publish.event import event_action, pull_request_labels, read_event
from profopt_ci.specfile.plan import Plan
from profopt_ci.words.i18n import message

DEFAULT_LABEL = "profopt-accept"
LABEL_EVENTS = ("labeled", "unlabeled")
KEEP = 64  # comparisons kept: a few open PRs' latest heads on each of a few machines
KEEP_MAX_BENCHMARKS = 5000  # a comparison of more is a scale test's, not a PR's: not written twice
POLICY_NOTES = ("note.accepted", "note.reused")  # said anew each time the policy is judged


@dataclass(frozen=True)
class Labels:
    """What the event says of the accept label: its name, whether the pull request carries it, and
    the event's action (`labeled`, `synchronize`…; None outside a pull request's event)."""

    label: str = DEFAULT_LABEL
    on: bool = False
    action: str | None = None

    @property
    def accept(self) -> str | None:
        """The label when it makes a failing policy pass, else None."""
        return self.label if self.on else None

    @property
    def relabel(self) -> bool:
        """A label was added or removed: the measurement stands, only the policy is judged again."""
        return self.action in LABEL_EVENTS


def labels_of(environ: Mapping[str, str], label: str = DEFAULT_LABEL) -> Labels:
    """The accept label as the triggering event has it; an unreadable event file is a usage error
    (a policy must not pass or fail on a file profopt could not read)."""
    event = read_event(environ, strict=True)
    return Labels(label=label, on=label in pull_request_labels(event), action=event_action(event))


@dataclass(frozen=True)
class Measured:
    """What a compare measures besides the plan: the inputs of its key."""

    measure: str  # changed | all
    time_budget: float | None
    nightly: bool  # --baseline both


def measured_of(plan: Plan, measure: str | None, time_budget: float | None, nightly: bool) -> Measured:
    """The key's inputs as the compare resolves them: a flag, else the spec's."""
    return Measured(measure=measure or plan.spec.measure, time_budget=time_budget or plan.spec.time_budget_s,
                    nightly=nightly)


def key(plan: Plan, base: str, head: str, measured: Measured) -> str:
    """The cache key of a comparison: what its rounds depend on, and nothing a label changes."""
    try:
        spec_bytes = plan.spec.path.read_bytes()
    except OSError:
        spec_bytes = b""
    data = {"version": __version__, "base": base, "head": head,
            "spec": hashlib.sha256(spec_bytes).hexdigest(), "suites": [repr(s) for s in plan.spec.suites],
            "overrides": asdict(plan.overrides), "label": plan.hardware_label, **asdict(measured)}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:32]


def where(root: Path) -> Path:
    return root / "compare"


def keep(doc: Comparison, plan: Plan, measured: Measured) -> None:
    """Store a finished comparison under its key (atomically; beyond KEEP the oldest go). One a
    benchmark failed in is not kept: a label event measures again rather than repeat a failure."""
    if doc.counts.failed or doc.mode != "paired" or len(doc.benchmarks) > KEEP_MAX_BENCHMARKS:
        return
    folder = where(cache_root())
    path = folder / f"{key(plan, doc.base.commit, doc.head.commit, measured)}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{path.name}.{os.getpid()}"
        tmp.write_bytes(msgspec.json.encode(doc))
        os.replace(tmp, path)
        _prune(folder)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[KEEP:]:
        old.unlink(missing_ok=True)


def reused(plan: Plan, *, refs: tuple[str | None, str | None], labels: Labels, fail_on: str | None,
           measured: Measured, log: Callable[[str], None]) -> Comparison | None:
    """For a label event, the kept comparison of these commits with its policy judged anew; None
    when the event is not a label event or nothing of this key is kept (the compare measures)."""
    if not labels.relabel:
        return None
    repo = toplevel(plan.spec.path.resolve().parent)
    if repo is None:
        return None
    try:
        resolved = resolve_refs(repo, *refs)
    except ProfoptError:
        return None  # the compare says what is wrong with the refs
    (_, base), (_, head) = resolved["base"], resolved["head"]
    path = where(cache_root()) / f"{key(plan, base, head, measured)}.json"
    try:
        doc = msgspec.json.decode(path.read_bytes(), type=Comparison)
    except (OSError, msgspec.MsgspecError):
        return None
    if (doc.base.commit, doc.head.commit) != (base, head):
        return None
    log(f"profopt: a {labels.action} event: the comparison of base {base[:12]} and head {head[:12]} measured at "
        f"{doc.created} is reused — the policy is judged again, nothing is measured")
    return rejudge(doc, labels, fail_on)


def rejudge(doc: Comparison, labels: Labels, fail_on: str | None) -> Comparison:
    """`doc`'s figures under this run's policy and labels, said in its notes."""
    judged = policy(list(doc.benchmarks), fail_on, labels.accept)
    said = [*accepted_note(judged), message("note.reused", measured=doc.created, action=labels.action)]
    return comparison_doc.rejudged(doc, policy=judged, reused={"measured": doc.created, "action": labels.action},
                                   notes=said, drop=POLICY_NOTES)

