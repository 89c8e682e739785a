"""The whole loop through the real CLI: compare → report (md, html, zh) → publish to a loopback GitHub."""
from __future__ import annotations

import json
import secrets

import pytest
from conftest import git, make_repo, run_cli

WORK = """\
import profopt_ci

def make_step(n=20000):
    def step():
        x = 0
        for i in range(n):
            x += i
        profopt_ci.record(loss=0.25)
    return step
"""
SPEC = """\
version: 1
hardware_label: cpu-test
defaults: {warmup: 1, min_time_ms: 20, values: 3, value_ms: 1, round_ms: 150, rounds: 12, max_rounds: 12, seed: 3}
benchmarks:
  - name: loop
    callable: bench.work:make_step
    params: {n: 20000}
    items_per_iteration: 100
    unit: rows
    constraints: [{metric: loss, abs_tol: 0.001}]
"""


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("flow") / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": WORK, "profopt.yml": SPEC},
                     {"bench/work.py": WORK.replace("range(n)", "range(n // 2)")}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--report", "report.md", "--html", "report.html"], root)
    return root, proc


def test_compare_writes_report_and_html(compared):
    root, proc = compared
    assert proc.returncode == 0, proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    # what no flag named went to .profopt/, which ignores itself: only the explicit files are untracked
    assert (root / ".profopt" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert sorted(git(root, "status", "--porcelain").split()) == ["??", "??", "report.html", "report.md"]
    assert (root / ".profopt" / "profiles").is_dir()
    assert ".profopt/comparison.json" in proc.stderr
    assert c["decision"] == "keep", c["summary"]
    md = (root / "report.md").read_text()
    assert md.splitlines()[0].startswith("✅ keep")
    assert "| step time (ms) |" in md and "🟢 improved" in md
    html = (root / "report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "<svg" in html


def test_report_verb_formats_and_languages(compared):
    root, _ = compared
    zh = run_cli(["report", ".profopt/comparison.json", "--lang", "zh"], root)
    assert zh.returncode == 0 and "指标" in zh.stdout and "判断" in zh.stdout
    js = run_cli(["report", ".profopt/comparison.json", "--format", "json"], root)
    assert json.loads(js.stdout)["schema"] == "profopt/comparison@1"
    bad = run_cli(["report", "missing.json"], root)
    assert bad.returncode == 2 and "missing.json" in bad.stderr


def test_publish_posts_one_sticky_comment_and_writes_outputs(compared, gh, tmp_path):
    root, _ = compared
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": "abc123"}}}))
    outputs, summary = tmp_path / "out.txt", tmp_path / "summary.md"
    env = {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event),
           "GITHUB_TOKEN": token, "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_ACTIONS": "true", "NO_PROXY": "*"}
    for _ in range(2):
        proc = run_cli(["publish", "--report", "report.md", "--comparison", ".profopt/comparison.json"], root, env=env)
        assert proc.returncode == 0, proc.stderr
        assert token not in proc.stdout.replace(f"::add-mask::{token}", "") and token not in proc.stderr
    comments = gh.comments("o/r", 7)
    assert len(comments) == 1 and "✅ keep" in comments[0]["body"]
    text = outputs.read_text()
    assert "decision<<" in text and "keep" in text
    assert summary.read_text().count("✅ keep") == 2
    missing = run_cli(["publish", "--report", "report.md"], root, env={**env, "GITHUB_REPOSITORY": ""})
    assert missing.returncode == 2
