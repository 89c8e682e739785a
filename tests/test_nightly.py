"""The nightly: a change point between two nightlies bisected to its commit, and its one issue on the
loopback GitHub (tests/ghserver.py) — opened, updated, never duplicated, closed once reverted.

The history is a folder store of baseline@1 runs at real commits of a real repository whose code
really slows down at one commit; the bisection measures those commits for real.
"""
from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import CPU_STEP, make_repo, run_cli
from test_store import fake_doc

from profopt_ci.pipeline.nightly import bisect_new, new_change_points
from profopt_ci.publish import issues
from profopt_ci.specfile.load import load_spec
from profopt_ci.specfile.plan import make_plan, overrides
from profopt_ci.store import stores as store

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {round_ms: 100, rounds: 10, max_rounds: 20, threshold: 10, seed: 3}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {us: 2000}
"""
SLOWER = CPU_STEP.replace("int(us * 20)", "int(us * 26)")
NOISE = [0.0, 0.5, -0.4, 0.3, -0.6, 0.2, 0.4, -0.3]
REPO = "octo/bench"


def _repo(tmp_path):
    commits = [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC, ".gitignore": ".profopt/\n"}]
    commits += [{f"docs/{i}.txt": str(i)} for i in range(1, 12)]
    commits[5]["bench/work.py"] = SLOWER  # the culprit: c5
    root = tmp_path / "repo"
    return root, make_repo(root, commits)


def _night(target, sha: str, value: float, day: int) -> None:
    store.save(target, fake_doc(sha, value * (1 + NOISE[day % len(NOISE)] / 100),
                                created=f"2026-11-{day + 1:02d}T03:00:00+00:00"))


def _issues(root, gh, token, summary):
    env = {"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": token, "GITHUB_REPOSITORY": REPO,
           "GITHUB_STEP_SUMMARY": str(summary)}
    proc = run_cli(["baseline", "issues", "--store", f"dir:{root.parent / 's'}"], root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert token not in proc.stderr + proc.stdout
    return proc


@pytest.mark.slow
def test_a_change_point_is_bisected_and_its_one_issue_opened_updated_and_closed_when_reverted(tmp_path, gh):
    root, shas = _repo(tmp_path)
    target = store.DirStore(tmp_path / "s")
    # nightlies at c0..c3 (20 ms), then at c5, c6, c7 (26 ms): the step entered in c4 or c5
    for day, i in enumerate((0, 1, 2, 3, 5, 6, 7)):
        _night(target, shas[i], 26.0 if i >= 5 else 20.0, day)
    spec = load_spec(root / "profopt.yml")
    written = bisect_new(make_plan(spec, overrides(environ={})), store=f"dir:{tmp_path / 's'}", repo=root,
                         tau=3.0, out_dir=root / ".profopt" / "bisect", log=lambda _: None)
    [path] = written
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, _schema())
    assert doc["change_point"]["from_commit"] == shas[3][:12] and doc["change_point"]["to_commit"] == shas[5][:12]
    assert doc["first_bad"]["commit"] == shas[5]
    # the ends (c3 against c5) changed; c4, the one commit between, is probed and good; c5 is the bad end
    assert [(p["commit"], p["class"]) for p in doc["probes"]] == [(shas[4], "good")]
    [(kept_path, kept)] = store.changes(target, "test-cpu")   # also kept in the store, for the site
    assert kept_path.startswith("test-cpu/changes/") and kept["first_bad"]["commit"] == shas[5]

    token = "ghs_nightlybot0123456789"
    gh.add_token(token)
    for n in range(120):  # someone else's issues first: ours is found past the first page
        gh.seed_issue(REPO, f"unrelated {n}", "text", login="someone")
    summary = tmp_path / "summary.md"
    _issues(root, gh, token, summary)
    ours = [i for i in gh.issues(REPO) if i["body"].startswith(issues.PREFIX)]
    assert len(ours) == 1 and ours[0]["state"] == "open"
    assert shas[5][:12] in ours[0]["title"] and shas[5][:12] in ours[0]["body"]
    assert shas[5][:12] in summary.read_text()  # the culprit in the job summary

    # the next nightly finds the same change point: the issue is updated, not duplicated
    _issues(root, gh, token, summary)
    ours = [i for i in gh.issues(REPO) if i["body"].startswith(issues.PREFIX)]
    assert len(ours) == 1 and ours[0]["state"] == "open"
    assert gh.requests_for("PATCH", rf"/repos/{REPO}/issues/{ours[0]['number']}")

    # the change is reverted: the newest nightly is back at 20 ms, and the issue is closed with a comment
    _night(target, shas[10], 20.1, 8)
    proc = _issues(root, gh, token, summary)
    [closed] = [i for i in gh.issues(REPO) if i["body"].startswith(issues.PREFIX)]
    assert closed["state"] == "closed" and "closed" in proc.stderr
    assert "reverted" in gh.comments(REPO, closed["number"])[0]["body"]

    # and a closed issue stays closed: no new one for the same change point
    _issues(root, gh, token, summary)
    assert len([i for i in gh.issues(REPO) if i["body"].startswith(issues.PREFIX)]) == 1


def _schema() -> dict:
    from importlib import resources

    return json.loads(resources.files("profopt_ci").joinpath("schema/bisect.schema.json").read_text())


def test_only_a_new_change_point_is_bisected(tmp_path):
    series = {"busy": {"values": [20.0, 20.1, 19.9, 20.0, 26.0, 26.1, 25.9, 26.0, 26.2, 25.8, 26.1, 26.0],
                       "commits": [f"{i:012x}" for i in range(12)], "dates": ["2026-11-01"] * 12}}
    assert new_change_points(series, 3.0) == []  # the step at index 4 is 8 runs old: an earlier nightly found it
    [cp] = new_change_points(series, 3.0, recent=8)
    assert cp["from_commit"] == f"{3:012x}" and cp["to_commit"] == f"{4:012x}"
    assert cp["before"] == pytest.approx(20.0, abs=0.1) and cp["after"] == pytest.approx(26.0, abs=0.1)


def test_reverted_means_back_within_tau_of_the_level_before():
    assert issues.reverted(20.2, 20.0, 26.0, 3.0)
    assert not issues.reverted(21.0, 20.0, 26.0, 3.0)  # 5% off the level before
    assert not issues.reverted(25.9, 20.0, 26.0, 3.0)
    assert not issues.reverted(0.0, 20.0, 26.0, 3.0)  # no figure: nothing to tell


def test_refresh_with_bisect_and_no_history_stores_and_says_so(tmp_path):
    root, shas = _repo(tmp_path)
    proc = run_cli(["baseline", "refresh", "--bisect", "--store", f"dir:{tmp_path / 's'}", "--rounds", "1"], root)
    assert proc.returncode == 0, proc.stderr
    assert "no new change point" in proc.stderr
    assert not (root / ".profopt" / "bisect").exists()


def test_issues_without_a_token_is_a_usage_error(tmp_path):
    root, _ = _repo(tmp_path)
    proc = run_cli(["baseline", "issues", "--store", f"dir:{tmp_path / 's'}"], root,
                   env={"GITHUB_TOKEN": "", "GH_TOKEN": "", "GITHUB_REPOSITORY": REPO})
    assert proc.returncode == 2 and "token" in proc.stderr
