"""`profopt bisect` on generated repositories of real commits.

The first two tests run the real CLI: real worktrees, real lockstep compares of a CPU-bound step.
The search itself (steps, inconclusive probes re-run with more rounds, what stays untestable) is
tested with a `measure` that returns literal estimates for the real commits of a real repository,
so each test says exactly which probe decides what.
"""
from __future__ import annotations

import json
import time
from importlib import resources

import jsonschema
import pytest
from conftest import CPU_STEP, make_repo, run_cli

from profopt_ci.analyze.bisection import Search
from profopt_ci.documents.read import view
from profopt_ci.pipeline.bisect_refs import BisectRange, run_bisect
from profopt_ci.publish import issues
from profopt_ci.report.bisect_md import render_bisect
from profopt_ci.specfile.load import load_spec
from profopt_ci.specfile.plan import overrides
from profopt_ci.words.i18n import say

SCHEMA = json.loads(resources.files("profopt_ci").joinpath("schema/bisect.schema.json").read_text())
SPEC_DEFAULTS = """\
version: 1
hardware_label: test-cpu
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {us: 2000}
"""
SLOWER = CPU_STEP.replace("int(us * 20)", "int(us * 26)")  # 30% more work a step
BROKEN = CPU_STEP.replace("    n = int(us * 20)\n", "    raise RuntimeError('this commit does not run')\n")


def _history(tmp_path, changes: dict[int, dict[str, str]], n: int = 9, spec: str = SPEC_DEFAULTS):
    """c0 … c(n-1); `changes[i]` are the files commit i changes (else a docs-only commit)."""
    commits = []
    for i in range(n):
        files = {"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": spec} if i == 0 else {}
        files.update(changes.get(i, {}))
        files[f"docs/c{i}.txt"] = f"commit {i}\n"
        commits.append(files)
    root = tmp_path / "repo"
    return root, make_repo(root, commits)


# a first look at 10 rounds can decide (8 cannot at its share of α); τ 10% against the 30% step
QUICK = SPEC_DEFAULTS.replace(
    "benchmarks:", "defaults: {round_ms: 100, rounds: 10, max_rounds: 20, threshold: 10, seed: 3}\nbenchmarks:")


@pytest.mark.slow
def test_bisect_names_the_commit_that_made_the_step_30_percent_slower_and_skips_one_that_does_not_run(tmp_path):
    """One real bisect (real worktrees and lockstep compares) of c0..c4: c2 does not run, c3 makes the
    step 30% slower. The ends first; then c2, the middle, fails and is skipped; c1 (the untested
    commit nearest the middle) is good, c3 bad; c3 against the bad end c4 did not change: one step.
    (The search over longer ranges is the literal tests' below.)"""
    root, shas = _history(tmp_path, {2: {"bench/work.py": BROKEN}, 3: {"bench/work.py": SLOWER}}, n=5, spec=QUICK)
    t0 = time.monotonic()
    proc = run_cli(["bisect", "--good", "HEAD~4", "--bad", "HEAD", "--out", "b.json", "--report", "b.md",
                    "--lang", "zh"], root, timeout=600)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((root / "b.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    by_commit = {p["commit"]: p for p in doc["probes"]}
    assert by_commit[shas[2]]["class"] == "skip" and by_commit[shas[2]]["estimate"]["verdict"] == "failed"
    assert "does not run" in by_commit[shas[2]]["estimate"]["error"]
    assert by_commit[shas[1]]["class"] == "good" and by_commit[shas[3]]["class"] == "bad"
    # c1 changes docs only: it runs as the good end does, so it is not measured, and the notes list it
    assert by_commit[shas[1]]["estimate"]["reached"] is False and by_commit[shas[1]]["estimate"]["rounds"] == 0
    assert by_commit[shas[3]]["estimate"].get("reached") is not False
    assert any(n["id"] == "note.bisect_unreached" and shas[1][:12] in n["args"]["commits"] for n in doc["notes"])
    assert doc["first_bad"]["commit"] == shas[3], proc.stderr
    assert doc["first_bad"]["subject"] == "commit 3"
    assert 10 < doc["first_bad"]["effect"]["delta_pct"] < 70 and doc["first_bad"]["effect"]["ci_low_pct"] > 0
    # c2 could not be tested, so the culprit is c2 or c3, as git bisect would say
    assert [c["commit"] for c in doc["first_bad"]["candidates"]] == [shas[2], shas[3]]
    assert any(n["id"] == "note.bisect_untestable" and "could not be tested" in n["text"] for n in doc["notes"])
    assert [s["commit"] for s in doc["steps"]] == [shas[3]]  # one step: c3 against c4 did not change
    assert [(p["commit"], p["class"]) for p in doc["probes"]] == [
        (shas[2], "skip"), (shas[1], "good"), (shas[3], "bad"), (shas[4], "step-check")]
    assert all(p["estimate"]["rounds"] for p in doc["probes"] if p["class"] != "skip" and p["estimate"].get("reached") is not False)
    assert seconds < 120, f"bisect took {seconds:.0f} s"  # ~50 s here, ~20 s of it the skipped commit's probe
    md = (root / "b.md").read_text()
    assert shas[3][:12] in md
    assert "跳过" in md and "无法测试" in md and "could not be tested" not in md
    assert "未测量" in md and shas[1][:12] in md  # the commit whose change does not reach it, said in zh
    print(f"bisect c0..c4: {len(doc['probes'])} probes, {seconds:.0f} s (the document says {doc['seconds']} s)")


# ---- the search, on literal estimates for real commits -------------------------------------------------


def _literal(levels: list[float], shas: list[str], *, undecided: dict[str, int] | None = None):
    """A `measure`: each commit's step time is levels[i] % above c0's; the verdict from τ = 3% and a ±1% CI.
    `undecided[sha] = k`: that commit's probes are inconclusive for their first k attempts."""
    calls: list[tuple[str, str, int]] = []
    at = dict(zip(shas, levels, strict=True))

    def measure(good: str, commit: str, names: list[str], attempt: int) -> dict[str, dict]:
        calls.append((good, commit, attempt))
        d = ((1 + at[commit] / 100) / (1 + at[good] / 100) - 1) * 100
        verdict = "regressed" if d > 3 else "improved" if d < -3 else "unchanged"
        if attempt < (undecided or {}).get(commit, 0):
            verdict = "inconclusive"
        return {n: {"verdict": verdict, "delta_pct": d, "ci_low_pct": d - 1, "ci_high_pct": d + 1,
                    "rounds": 12 * 2 ** attempt} for n in names}

    return measure, calls


def _run(tmp_path, levels: list[float], **kw):
    root, shas = _history(tmp_path, {}, n=len(levels))
    measure, calls = _literal(levels, shas, undecided=kw.pop("undecided", None))
    doc = view(run_bisect(load_spec(root / "profopt.yml"), overrides(environ={}), BisectRange(shas[0], shas[-1]),
                     measure=measure, log=lambda _: None, **kw))
    jsonschema.validate(doc, SCHEMA)
    return doc, shas, calls


def test_a_change_in_two_steps_reports_each_step(tmp_path):
    doc, shas, calls = _run(tmp_path, [0, 0, 0, 15, 15, 15, 32, 32, 32])
    assert [s["commit"] for s in doc["steps"]] == [shas[3], shas[6]]
    assert doc["first_bad"]["commit"] == shas[3]
    first, second = doc["steps"]
    assert first["good_end"] == shas[0] and second["good_end"] == shas[3]  # each step against its own good end
    assert 10 < second["effect"]["delta_pct"] < 20
    checks = [p for p in doc["probes"] if p["class"] == "step-check"]
    assert [(p["good_end"], p["commit"]) for p in checks] == [(shas[3], shas[8]), (shas[6], shas[8])]
    md = render_bisect(doc)
    assert shas[3][:12] in md and shas[6][:12] in md


def test_a_step_back_the_other_way_is_a_step_too(tmp_path):
    doc, shas, _ = _run(tmp_path, [0, 0, 40, 40, 40, 10, 10])
    assert [s["commit"] for s in doc["steps"]] == [shas[2], shas[5]]
    assert doc["steps"][1]["effect"]["verdict"] == "improved"


def test_an_inconclusive_probe_is_measured_again_with_more_rounds(tmp_path):
    root, shas = _history(tmp_path, {}, n=9)
    measure, calls = _literal([0, 0, 0, 0, 0, 30, 30, 30, 30], shas, undecided={shas[4]: 1})
    doc = view(run_bisect(load_spec(root / "profopt.yml"), overrides(environ={}), BisectRange(shas[0], shas[-1]),
                     measure=measure, log=lambda _: None))
    probe = next(p for p in doc["probes"] if p["commit"] == shas[4])
    assert [a["verdict"] for a in probe["attempts"]] == ["inconclusive", "unchanged"]
    assert [a["rounds"] for a in probe["attempts"]] == [12, 24]  # more rounds, then decided
    assert (shas[0], shas[4], 1) in calls
    assert probe["class"] == "good" and doc["first_bad"]["commit"] == shas[5]
    assert [c["commit"] for c in doc["first_bad"]["candidates"]] == [shas[5]]


def test_a_probe_still_inconclusive_after_its_extensions_is_never_a_boundary(tmp_path):
    root, shas = _history(tmp_path, {}, n=9)
    measure, _ = _literal([0, 0, 0, 0, 0, 30, 30, 30, 30], shas, undecided={shas[5]: 9})
    doc = view(run_bisect(load_spec(root / "profopt.yml"), overrides(environ={}), BisectRange(shas[0], shas[-1], extensions=2),
                     measure=measure, log=lambda _: None))
    c5 = next(p for p in doc["probes"] if p["commit"] == shas[5])
    assert c5["class"] == "inconclusive" and len(c5["attempts"]) == 3
    # c6 is the first commit known bad; c5 could not be told apart from noise, so it may be the one
    assert doc["first_bad"]["commit"] == shas[6]
    assert [c["commit"] for c in doc["first_bad"]["candidates"]] == [shas[5], shas[6]]
    assert [n["id"] for n in doc["notes"]] == ["note.bisect_untestable"]
    assert doc["notes"][0]["args"] == {"bench": "busy", "n": 1, "commit": shas[6][:12]}
    en, zh = render_bisect(doc), render_bisect(doc, "zh")
    assert doc["notes"][0]["text"] in en.replace("\\", "")
    assert "could not be tested" not in zh and f"{shas[6][:12]} 之前有 1 个提交无法测试" in zh


def test_a_bisect_file_whose_notes_are_plain_strings_still_renders(tmp_path):
    doc, _, _ = _run(tmp_path, [0, 1, 0, 1])
    doc["notes"] = ["a note worded by an older profopt"]
    assert "- a note worded by an older profopt" in render_bisect(doc, "zh")


def test_the_nightly_issue_is_made_of_messages_and_said_in_zh(tmp_path):
    doc, shas, _ = _run(tmp_path, [0, 0, 0, 15, 15, 15])
    doc["change_point"] = {"label": "cpu-x", "benchmark": "busy", "from_commit": shas[0], "to_commit": shas[-1],
                           "delta_pct": 15.0, "before": 20.0, "after": 23.0}
    title = issues.title_of(doc)
    assert title["id"] == "issue.title" and title["args"]["where"]["id"] == "issue.first_bad"
    assert say("en", title) == title["text"] == f"profopt: busy 15.0% slower on cpu-x — first bad commit {shas[3][:12]}"
    assert say("zh", title) == f"profopt：busy 在 cpu-x 上变慢 15.0% — 第一个变坏的提交 {shas[3][:12]}"
    en, zh = issues.body_of(doc), issues.body_of(doc, "zh")
    assert "history of **busy** moved +15.0% (median 20 → 23 ms)" in en and "## profopt bisect" in en
    assert "**busy** 在" in zh and "变化了 +15.0%（中位数 20 → 23 ms）" in zh and "## profopt 二分定位" in zh
    assert "moved" not in zh and "First bad commit" not in zh


def test_ends_that_do_not_differ_search_nothing(tmp_path):
    doc, _, calls = _run(tmp_path, [0, 1, 0, 1])
    assert doc["first_bad"] is None and doc["steps"] == [] and doc["probes"] == []
    assert len(calls) == 1 and not doc["ends"][0]["searched"]
    assert "nothing to search" in render_bisect(doc)
    assert [(n["id"], n["args"]) for n in doc["notes"]] == [("note.bisect_quiet", {"names": ["busy"]})]
    assert "两端之间的变化未超过 τ，未查找：busy" in render_bisect(doc, "zh")


def test_eight_commits_take_three_probes_and_512_take_nine():
    for n, most in ((8, 3), (64, 6), (512, 9)):
        for culprit in (0, n // 3, n - 2, n - 1):
            s = Search(n)
            probes = 0
            while (i := s.next_probe()) is not None:
                s.record(i, "bad" if i >= culprit else "good")
                probes += 1
            assert s.result()[0] == culprit and probes <= most, (n, culprit, probes)


def test_bad_ranges_are_usage_errors(tmp_path):
    root, shas = _history(tmp_path, {}, n=3)
    assert run_cli(["bisect", "--good", shas[2], "--bad", shas[0]], root).returncode == 2
    proc = run_cli(["bisect", "--good", shas[1], "--bad", shas[1]], root)
    assert proc.returncode == 2 and "same commit" in proc.stderr
    proc = run_cli(["bisect", "--good", shas[0], "--bad", shas[2], "--benchmark", "nope"], root)
    assert proc.returncode == 2 and "nope" in proc.stderr
    proc = run_cli(["bisect", "--good", shas[0], "--bad", shas[2], "--metric", "loss"], root)
    assert proc.returncode == 2 and "loss" in proc.stderr and "Traceback" not in proc.stderr
