"""The passes between `build_entry` and the built comparison return new entries (issue 29: one entry,
built once): resolving the unpaired metrics, multiplicity and the decisions (`finish`), instruction
counts (`merge`, `mark_failures`), the profile (`annotate`) and confirmation (`confirm.apply`). Each
is run here on entries from the real builder, and the entries it was given must read as before.
"""
from __future__ import annotations

import copy

import msgspec
import pytest

from profopt_ci.analyze import instruction_entries
from profopt_ci.analyze.bottleneck import annotate
from profopt_ci.analyze.judge import build_entry, finish
from profopt_ci.documents.comparison import revised
from profopt_ci.documents.types import Message
from profopt_ci.documents.types_comparison import Confirm, Entry, EntryError, ProfilePair
from profopt_ci.pipeline import confirm
from profopt_ci.specfile.load import parse_spec

SPEC = """\
version: 1
defaults: {threshold: 5, confirm: true}
benchmarks:
  - {name: slower, callable: 'm:f'}
  - {name: same, callable: 'm:f'}
"""


def _side(ms: list[float]) -> dict:
    return {"status": "ok", "error": None, "samples": [{"round": r, "step_time_ms": v} for r, v in enumerate(ms)]}


def _entries(benches: dict, factor: float, *, paired: bool) -> list[dict]:
    base = [10.0 + r / 100 for r in range(12)]
    return [build_entry(benches[name], _side(base), _side([b * (f + r / 1000) for r, b in enumerate(base)]),
                        paired=paired) for name, f in (("slower", factor), ("same", 1.0))]


def _unchanged(before: list[dict], after: list[dict]) -> None:
    assert len(before) == len(after)
    for b, a in zip(before, after, strict=True):
        assert b.keys() == a.keys() and b == a


def test_every_pass_returns_new_entries_and_leaves_the_given_ones_as_they_were(tmp_path):
    spec = parse_spec(SPEC, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")
    benches = {b.name: b for b in spec.benchmarks}
    for paired in (True, False):
        built = _entries(benches, 1.3, paired=paired)
        kept = copy.deepcopy(built)
        done = finish(built, benches)
        _unchanged(kept, built)
        assert [e["decision"] for e in done] == ["reject", "no-change"], [e.get("reason") for e in done]
        assert all(type(e) is Entry for e in done)  # decided: the frozen Entry the comparison holds
        # every level typed as a read comparison's is: a metric's reason is a Message, not a dict
        assert all(type(m.reason_msg) is Message for e in done for m in e.metrics.values())

        # the instructions go into the judge's draft, before `finish`; a failed run is marked after it
        failed_run = {"base": {"status": "ok", "instructions": 100}, "head": {"status": "failed", "error": "boom\nmore"}}
        drafts = _entries(benches, 1.3, paired=paired)
        kept_drafts = copy.deepcopy(drafts)
        merged = finish([instruction_entries.merge(drafts[0], benches["slower"], failed_run), drafts[1]], benches)
        _unchanged(kept_drafts, drafts)
        assert "instructions" not in drafts[0] and merged[0]["decision"] == "reject"
        kept = copy.deepcopy(merged)
        marked = instruction_entries.mark_failures(merged)
        _unchanged(kept, merged)
        assert marked[0]["decision"] == "failed" and marked[0]["error"]["instrument"] == "instructions"
        assert marked[1] is merged[1]  # nothing to mark: the same entry
        assert type(marked[0]) is Entry and type(marked[0].error) is EntryError

        kept = copy.deepcopy(done)
        profiled = annotate(done[0], {"base": {"kind": "none", "reason": "off"}, "head": {"kind": "none", "reason": "off"}})
        _unchanged(kept, done)
        assert profiled["profile"]["head"]["kind"] == "none" and done[0]["profile"] is None
        assert type(profiled) is Entry and type(profiled.profile) is ProfilePair

        second = finish(_entries(benches, 1.0, paired=paired), benches)  # the second run sees no change
        held, notes = confirm.apply(done, second, benches, seed=5)
        _unchanged(kept, done)
        assert held[0]["decision"] == "inconclusive" and held[0]["confirm"]["agreed"] is False
        assert held[0]["metrics"]["step_time_ms"]["verdict"] == "inconclusive"
        assert done[0]["metrics"]["step_time_ms"]["verdict"] == "regressed" and "confirm" not in done[0]
        assert [n["id"] for n in notes] == ["note.not_confirmed"]
        assert type(held[0]) is Entry and type(held[0].confirm) is Confirm and type(held[0].reason_msg) is Message
        assert type(held[0].metrics["step_time_ms"].reason_msg) is Message  # changed_metric keeps it typed


def test_a_pass_that_writes_what_the_model_lacks_raises(tmp_path):
    """`revised` checks each change against the Entry's field: a bug in a pass, never input."""
    spec = parse_spec(SPEC, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")
    benches = {b.name: b for b in spec.benchmarks}
    [entry, _] = finish(_entries(benches, 1.3, paired=True), benches)
    for changes in ({"decision": "maybe"}, {"rounds": -1}, {"confirm": {"seed": 1, "colour": "red"}},
                    {"no_such_field": 1}):
        with pytest.raises(msgspec.ValidationError):
            revised(entry, **changes)
    assert revised(entry, rounds=3)["rounds"] == 3 and entry["rounds"] == 12


def test_an_outlier_note_says_its_nested_message_in_each_language():
    from profopt_ci.analyze.stats import paired_change
    from profopt_ci.pipeline.entries import outlier_notes
    from profopt_ci.words.i18n import say

    base = [10.0 + r / 100 for r in range(12)]
    head = [b * (1.3 + r / 1000) for r, b in enumerate(base[:10])] + [b * 3.0 for b in base[10:]]
    speed = paired_change(base, head, threshold_pct=5)
    assert speed["verdict"] == "regressed" and speed["outlier_note"], speed
    [note] = outlier_notes([{"name": "busy", "metrics": {"step_time_ms": speed}}])
    for lang in ("en", "zh"):
        said = say(lang, note)
        assert said.startswith("busy") and "{" not in said and "why.outliers" not in said, said
    assert speed["outlier_note"] in say("en", note)


def test_a_looks_outlier_note_and_reasons_say_the_reports_confidence_level():
    """A sequential look's CI is at its spent alpha (99.748% at a look of five), which keeps 99% over
    all looks: the note and the reasons say 99%, as every heading of the report does; the look's own
    level stays in the metric's `confidence` (the parser PR's report, issue 40)."""
    from profopt_ci.analyze.look_schedule import spent_alpha
    from profopt_ci.analyze.stats import paired_change

    base = [10.0 + r / 100 for r in range(12)]
    head = [b * (1.3 + r / 1000) for r, b in enumerate(base[:10])] + [b * 3.0 for b in base[10:]]
    alpha = spent_alpha(5, 5, 0.01)
    speed = paired_change(base, head, threshold_pct=5, alpha=alpha)
    assert speed["verdict"] == "regressed" and speed["confidence"] == pytest.approx(1 - alpha)
    assert f"{(1 - alpha) * 100:.3f}" not in speed["outlier_note"] + speed["reason"]
    assert "the 99% CI decides regardless" in speed["outlier_note"]
    assert "(99% CI " in speed["reason"]
