"""A step's page faults: counted around its timed steps, carried in each sample, and a note where a
step's time follows them from round (process) to round.

Real steps that take fresh pages from the kernel (an anonymous mmap written page by page, then
closed) against ones that reuse what they have; the compare at the end is the real CLI.
"""
from __future__ import annotations

import json
import mmap

from conftest import make_repo, run_cli

from profopt_ci.harness import timing as harness
from profopt_ci.pipeline.entries import fault_notes
from profopt_ci.words.i18n import say

PAGES = 256


def fresh_pages() -> None:
    m = mmap.mmap(-1, PAGES * mmap.PAGESIZE)
    for i in range(0, PAGES * mmap.PAGESIZE, mmap.PAGESIZE):
        m[i] = 1  # the kernel gives (and zeroes) the page now: one minor fault
    m.close()


KEPT = bytearray(PAGES * mmap.PAGESIZE)


def kept_pages() -> None:
    for i in range(0, len(KEPT), mmap.PAGESIZE):
        KEPT[i] = 1


def _faults_per_step(step) -> float:
    stepper = harness.Stepper(step, value_ms=1.0, warmup=2, warmup_ms=5.0)
    stepper.warm(3)
    for _ in range(5):
        stepper.value_ns()
    return stepper.finish()["page_faults"] / (3 * 5)


def test_the_stepper_counts_the_page_faults_of_its_timed_steps():
    assert _faults_per_step(fresh_pages) >= PAGES * 0.9
    assert _faults_per_step(kept_pages) < 5


def test_measure_counts_them_too():
    m = harness.measure(fresh_pages, warmup=1, values=3, min_time_ms=2.0)
    assert m.page_faults / (m.loops * 3) >= PAGES * 0.9
    assert harness.measure(kept_pages, warmup=1, values=3, min_time_ms=2.0).page_faults < 5 * 3 * 50


def _entry(rows: list[tuple[float | None, float]], name: str = "step") -> dict:
    samples = [{"round": i, "step_time_ms": ms, "faults_per_step": f} for i, (f, ms) in enumerate(rows)]
    return {"name": name, "decision": "no-change", "samples": {"base": samples, "head": samples[::-1]}}


def test_a_note_where_the_time_follows_the_faults_and_none_elsewhere():
    follows = [(0, 2.5), (300, 3.1), (450, 3.9), (20, 2.6), (380, 3.5), (500, 4.2), (0, 2.4), (410, 3.6)]
    [note] = fault_notes([_entry(follows)])
    assert note["id"] == "note.page_faults"
    args = note["args"]
    assert args["name"] == "step" and args["rounds"] == 8 and args["rho"] >= 0.9
    assert (args["faults_low"], args["faults_high"], args["ms_low"], args["ms_high"]) == (0, 500, 2.4, 4.2)
    assert "page faults" in note["text"] and "MALLOC_TRIM_THRESHOLD_" in note["text"]
    assert "缺页" in say("zh", note)

    unrelated = [(0, 3.0), (300, 2.5), (450, 2.6), (20, 3.9), (380, 2.4), (500, 3.1), (0, 3.6), (410, 2.9)]
    few = [(f / 50, ms) for f, ms in follows]  # the same order, but a handful of faults a step
    short = follows[:5]
    uncounted = [(None, ms) for _, ms in follows]
    failed = {**_entry(follows), "decision": "failed"}
    assert fault_notes([_entry(unrelated), _entry(few), _entry(short), _entry(uncounted), failed]) == []


def test_paired_rounds_are_read_within_each_round_so_the_machines_drift_cancels():
    """Both sides drift together from 2 to 4 ms across rounds (no side's time follows its own faults),
    but within each round the side with more faults is the slower one: the paired note."""
    drift = [2.0, 4.0, 2.2, 3.8, 2.5, 3.5, 2.1, 3.9, 2.4, 3.6]
    extra = [0, 300, 50, 0, 400, 100, 250, 0, 350, 150]  # head's faults beyond base's, per round
    base = [{"round": i, "step_time_ms": d, "faults_per_step": 100.0} for i, d in enumerate(drift)]
    head = [{"round": i, "step_time_ms": d * (1 + x / 2000), "faults_per_step": 100.0 + x}
            for i, (d, x) in enumerate(zip(drift, extra, strict=True))]
    [note] = fault_notes([{"name": "step", "decision": "no-change", "samples": {"base": base, "head": head}}])
    assert note["id"] == "note.page_faults_paired"
    args = note["args"]
    assert args["rounds"] == 10 and args["rho"] == 1.0 and (args["diff_low"], args["diff_high"]) == (0, 400)
    assert (args["ratio_low_pct"], args["ratio_high_pct"]) == (0.0, 20.0)
    assert "within a round" in note["text"] and "缺页" in say("zh", note)
    # the same rounds with the extra faults unrelated to the ratio: nothing (and no side follows its own)
    shuffled = [{**h, "faults_per_step": 100.0 + x} for h, x in zip(head, [300, 0, 400, 50, 0, 250, 100, 350, 0, 150], strict=True)]
    assert fault_notes([{"name": "step", "decision": "no-change", "samples": {"base": base, "head": shuffled}}]) == []


STEP = f"""\
import mmap
import os

# each round's process takes a different number of fresh pages, and they are most of its step: the
# time must follow them on a loaded runner too, where a step of mostly arithmetic hid it once
PAGES = 128 * (os.getpid() % 5)


def make_step():
    def step():
        if PAGES:
            m = mmap.mmap(-1, PAGES * {mmap.PAGESIZE})
            for i in range(0, PAGES * {mmap.PAGESIZE}, {mmap.PAGESIZE}):
                m[i] = 1
            m.close()
        sum(range(300))
    return step
"""


def test_a_compare_carries_each_rounds_faults_and_says_when_the_time_follows_them(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"pages.py": STEP, "profopt.yml": "version: 1\ndefaults: {rounds: 10, max_rounds: 10, "
                      "profile: \"off\"}\nbenchmarks:\n  - {name: pages, callable: 'pages:make_step'}\n"}])
    # one process per side a round: a round's sample is then one process's pages and time, where two
    # pooled (rounds.process_pairs) would blur the two on a loaded runner (one CI run in four read no note)
    proc = run_cli(["compare", "--base", "HEAD", "--head", "HEAD", "--fail-on", "none"], root,
                   env={"PROFOPT_ROUND_PAIRS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((root / ".profopt" / "comparison.json").read_text())
    entry = doc["benchmarks"][0]
    for side in ("base", "head"):
        faults = [s["faults_per_step"] for s in entry["samples"][side]]
        assert len(faults) == 10 and all(f is not None and f >= 0 for f in faults), faults
        assert max(faults) >= 128 * 0.9 and len({round(f / 128) for f in faults}) >= 2, faults
    # each round's processes take different pages (their pids differ): within a round or across
    notes = [n for n in doc["notes"] if isinstance(n, dict) and n.get("id") in ("note.page_faults_paired",
                                                                                 "note.page_faults")]
    assert len(notes) == 1 and notes[0]["args"]["name"] == "pages", doc["notes"]
    assert "follows its page faults" in (root / ".profopt" / "report.md").read_text()
