"""The action end to end in a real Docker engine: entrypoint.py run as action.yml runs it, the image
built from the Dockerfile and then reused, both sides measured inside the container with no
network, one sticky comment on the loopback GitHub, no token in the container; and the container
failures (a failed build, out of memory, out of time) as exit 3 with what was measured kept.

Needs an engine and `PROFOPT_TEST_BASE_IMAGE` (a local image to build FROM; .ci/run sets it from
../shared/tools/docker-up). The image is built once per session: its layers stay cached under the
default tag, so a new session's build is a cache hit of a few seconds.
"""
from __future__ import annotations

import json
import os
import secrets
import uuid
from pathlib import Path

import pytest
from actionkit import (
    INJECTED,
    PR,
    REPO,
    action_env,
    bench_files,
    injecting_setup,
    make_pr_repo,
    pr_event,
    read_outputs,
    run_entrypoint,
    workflow_commands,
)
from conftest import ROOT

from profopt_ci.action import image as action_image
from profopt_ci.action import inputs as action_inputs
from profopt_ci.action import runs
from profopt_ci.words.i18n import say

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BASE_IMAGE = os.environ.get("PROFOPT_TEST_BASE_IMAGE")
E2E_REPO = "profopt-runner-e2e"


def _client():
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except DockerException:  # no engine answers: the fixture skips, saying so
        return None


@pytest.fixture(scope="module")
def engine():
    if not BASE_IMAGE:
        pytest.skip("PROFOPT_TEST_BASE_IMAGE is not set (.ci/run sets it from ../shared/tools/docker-up)")
    client = _client()
    if client is None:
        pytest.skip("no Docker engine answers")
    tag, digest = action_image.image_tag(ROOT, base_image=BASE_IMAGE, repo=E2E_REPO)
    _untag(client, tag)  # a leftover from an interrupted session would hide the build
    yield client
    # Keep the layers as the default tag (what the action itself would leave), drop the test tag.
    from docker.errors import ImageNotFound

    try:
        client.images.get(tag).tag(action_inputs.DEFAULT_IMAGE_REPO, tag.split(":")[1])
    except ImageNotFound:  # the build under test failed: nothing to keep
        pass
    _untag(client, tag)
    client.close()


def _untag(client, tag: str) -> None:
    from docker.errors import ImageNotFound

    try:
        client.images.remove(tag, noprune=True)
    except ImageNotFound:
        pass


@pytest.fixture
def run_ids(engine):
    ids: list[str] = []
    yield ids
    for run_id in ids:
        for c in engine.containers.list(all=True, filters={"label": f"{runs.RUN_LABEL}={run_id}"}):
            c.remove(force=True)


def docker_env(tmp: Path, ws: Path, run_ids: list[str], **kw) -> dict[str, str]:
    run_id = f"e2e-{uuid.uuid4().hex[:12]}"
    run_ids.append(run_id)
    extra = {"PROFOPT_IMAGE_REPO": E2E_REPO, "PROFOPT_KEEP_CONTAINERS": "1", "PROFOPT_RUN_ID": run_id,
             **kw.pop("extra", {})}
    inputs = {"base-image": BASE_IMAGE, **kw.pop("inputs", {})}
    return action_env(tmp, ws, inputs=inputs, extra=extra, **kw)


def containers(engine, env: dict[str, str]) -> dict[str, object]:
    found = engine.containers.list(all=True, filters={"label": f"{runs.RUN_LABEL}={env['PROFOPT_RUN_ID']}"})
    return {c.labels[runs.PHASE_LABEL]: c for c in found}


def test_pr_run_builds_then_reuses_the_image_measures_inside_and_comments_once(engine, gh, run_ids, tmp_path):
    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(2), bench_files(1))
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    runtime_secret = "rt-" + secrets.token_hex(8)
    event = pr_event(tmp_path / "event.json", base, head)
    env = docker_env(tmp_path, ws, run_ids, token=token, api_url=gh.url, event=event,
                     inputs={"hardware-label": "cpu-e2e", "memory": "1g", "timeout-minutes": "10"},
                     extra={"ACTIONS_RUNTIME_TOKEN": runtime_secret})

    # First run: the image is built from the Dockerfile.
    first = run_entrypoint(env, timeout=400)
    log = first.stdout + first.stderr
    assert first.returncode in (0, 1), log[-4000:]
    tag, digest = action_image.image_tag(ROOT, base_image=BASE_IMAGE, repo=E2E_REPO)
    assert f"building image {tag}" in log and f"built image {tag}" in log
    image = engine.images.get(tag)
    assert image.labels[action_image.HASH_LABEL] == digest
    assert image.attrs["Config"]["Entrypoint"] == ["profopt"] and image.attrs["Config"]["User"] == "10001:10001"
    assert "Step 1/" in (ws / ".profopt" / "logs" / "image-build.log").read_text()

    # Both phases ran in containers of that image: setup with the network, measure without.
    phases = containers(engine, env)
    assert set(phases) == {"setup", "measure"}
    for phase, c in phases.items():
        attrs = c.attrs
        assert attrs["Image"] == image.id
        env_list = attrs["Config"]["Env"]
        assert not any(token in e or runtime_secret in e for e in env_list), env_list
        assert not any(e.split("=", 1)[0] in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "INPUT_GITHUB_TOKEN")
                       for e in env_list)
        (mount,) = attrs["Mounts"]  # the workspace only: not the event file, not $GITHUB_OUTPUT, no socket
        assert (mount["Source"], mount["Destination"], mount["RW"]) == (str(ws), "/work", True)
        assert attrs["Config"]["User"] == "10001:10001"  # root-owned workspace → the image's own user
        assert attrs["HostConfig"]["CapDrop"] == ["ALL"] and attrs["HostConfig"]["Memory"] == 2**30
        assert attrs["State"]["ExitCode"] == (0 if phase == "setup" else first.returncode)
    assert phases["measure"].attrs["HostConfig"]["NetworkMode"] == "none"
    assert phases["setup"].attrs["HostConfig"]["NetworkMode"] in ("default", "bridge")

    comparison = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert (comparison["base"]["commit"], comparison["head"]["commit"]) == (base, head)
    samples = comparison["benchmarks"][0]["samples"]
    quality = [s["quality"] for side in ("base", "head") for s in samples[side]]
    assert len(quality) >= 2 * 10
    # Measured in the measure container: its hostname, loopback only, not root, no credentials.
    assert {(q["host"], q["nics"], q["uid"], q["secrets_seen"]) for q in quality} == {("profopt-measure", 1, 10001, "")}
    # Head does half the work of base: the comparison must see it.
    step = comparison["benchmarks"][0]["metrics"]["step_time_ms"]
    assert step["delta_pct"] < -25, step

    (comment,) = gh.comments(REPO, PR)
    assert comment["body"].startswith("<!-- profopt:cpu-e2e -->")
    report = (ws / ".profopt" / "report.md").read_text()
    assert report.splitlines()[0] in comment["body"] and comparison["decision"] in report.splitlines()[0]
    out = read_outputs(tmp_path / "github_output")
    assert out["decision"] == comparison["decision"]
    assert out["regressed"] == str(comparison["counts"]["regressed"])
    assert out["report_path"] == str(ws / ".profopt" / "report.md")
    assert out["results_path"] == str(ws / ".profopt" / "comparison.json")
    assert first.returncode == (1 if comparison["counts"]["regressed"] else 0)
    # The workspace is the runner's again (root here), nothing left owned by the container's user.
    assert all(p.lstat().st_uid == 0 for p in [ws / ".profopt", *(ws / ".profopt").rglob("*")])
    # GitHub saw the token only from the host, and only in the Authorization header.
    assert all(token not in r.body and token not in r.target for r in gh.requests)

    # Second run, same sources: the same image, no build; the comment is updated, not duplicated.
    (tmp_path / "github_output").unlink()
    env2 = docker_env(tmp_path, ws, run_ids, token=token, api_url=gh.url, event=event,
                      inputs={"hardware-label": "cpu-e2e", "memory": "1g"})
    second = run_entrypoint(env2, timeout=400)
    log2 = second.stdout + second.stderr
    assert second.returncode in (0, 1), log2[-4000:]
    assert f"reusing image {tag}" in log2 and "building image" not in log2 and "[build]" not in log2
    assert engine.images.get(tag).id == image.id
    assert {c.attrs["Image"] for c in containers(engine, env2).values()} == {image.id}
    (again,) = gh.comments(REPO, PR)
    assert again["id"] == comment["id"]
    assert read_outputs(tmp_path / "github_output")["decision"] == json.loads(
        (ws / ".profopt" / "comparison.json").read_text())["decision"]


def test_the_accept_label_reuses_the_comparison_the_containers_kept(engine, run_ids, tmp_path):
    """A real regression measured in the containers fails the policy; the `labeled` event's run finds
    the comparison in .profopt/cache (the container's PROFOPT_CACHE_DIR), sets nothing up, measures
    nothing, and passes; the container saw the event's action and labels alone."""
    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(1), bench_files(3))  # head does three times the work
    event = pr_event(tmp_path / "event.json", base, head)
    inputs = {"hardware-label": "cpu-e2e", "timeout-minutes": "10", "comment": "false"}
    first = run_entrypoint(docker_env(tmp_path, ws, run_ids, event=event, inputs=inputs), timeout=400)
    assert first.returncode == 1, (first.stdout + first.stderr)[-4000:]
    measured = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert list((ws / ".profopt" / "cache" / "compare").glob("*.json"))

    data = json.loads(event.read_text())
    data.update(action="labeled", label={"name": "profopt-accept"}, sender={"login": "octo"})
    data["pull_request"]["labels"] = [{"name": "profopt-accept"}]
    event.write_text(json.dumps(data))
    env = docker_env(tmp_path, ws, run_ids, event=event, inputs=inputs)
    second = run_entrypoint(env, timeout=400)
    log = second.stdout + second.stderr
    assert second.returncode == 0, log[-4000:]
    assert "nothing to set up" in log and "is reused" in log
    doc = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert doc["reused"]["action"] == "labeled" and doc["policy"]["accepted"] is True
    assert doc["benchmarks"][0]["samples"] == measured["benchmarks"][0]["samples"]
    assert "regression accepted (label profopt-accept)" in (ws / ".profopt" / "report.md").read_text()
    env_list = containers(engine, env)["measure"].attrs["Config"]["Env"]
    assert "GITHUB_EVENT_PATH=/work/.profopt/event.json" in env_list
    assert "PROFOPT_CACHE_DIR=/work/.profopt/cache" in env_list
    assert json.loads((ws / ".profopt" / "event.json").read_text()) == {
        "action": "labeled", "pull_request": {"number": PR, "labels": [{"name": "profopt-accept"}]}}


def test_a_failed_build_is_exit_3_naming_the_build(engine, run_ids, tmp_path):
    ctx = tmp_path / "action"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo compiling-the-runner && exit 7\n")
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2), bench_files(1))
    env = docker_env(tmp_path, ws, run_ids, inputs={"mode": "compare", "base": "main", "comment": "false"},
                     extra={"GITHUB_ACTION_PATH": str(ctx), "PROFOPT_IMAGE_REPO": f"profopt-broken-{uuid.uuid4().hex[:8]}"})
    proc = run_entrypoint(env, timeout=180)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the image build failed" in proc.stderr and "non-zero code: 7" in proc.stderr
    assert "compiling-the-runner" in (ws / ".profopt" / "logs" / "image-build.log").read_text()
    assert containers(engine, env) == {}  # nothing ran
    assert "Traceback" not in proc.stderr
    report = (ws / ".profopt" / "report.md").read_text()
    assert "the image build failed" in report
    assert read_outputs(tmp_path / "github_output")["decision"] == "failed"


def test_out_of_memory_is_exit_3_and_keeps_what_was_measured(engine, run_ids, tmp_path):
    ws = tmp_path / "ws"
    # Head allocates 600 MB per worker; the container may use 250 MB.
    make_pr_repo(ws, bench_files(2, rounds=4), bench_files(1, rounds=4, allocate_mb=600))
    env = docker_env(tmp_path, ws, run_ids, inputs={"mode": "compare", "base": "main", "comment": "false",
                                                     "memory": "250m"})
    proc = run_entrypoint(env, timeout=300)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "out of memory" in proc.stderr and "250m" in proc.stderr
    assert containers(engine, env)["measure"].attrs["State"]["OOMKilled"] is True
    comparison = json.loads((ws / ".profopt" / "comparison.json").read_text())
    entry = comparison["benchmarks"][0]
    assert entry["status"]["head"] == "failed" and entry["samples"]["base"]  # what base measured is kept
    report = (ws / ".profopt" / "report.md").read_text()
    assert report.startswith("## profopt: the benchmark run failed") and "out of memory" in report
    out = read_outputs(tmp_path / "github_output")
    assert out["decision"] == comparison["decision"] == "failed"


def test_a_container_past_its_time_limit_is_exit_3_and_keeps_partial_results(engine, run_ids, tmp_path):
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2, rounds=300, sleep_s=0.05), bench_files(1, rounds=300, sleep_s=0.05))
    env = docker_env(tmp_path, ws, run_ids, inputs={"mode": "compare", "base": "main", "comment": "false",
                                                     "timeout-minutes": "0.2"})
    proc = run_entrypoint(env, timeout=300)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "timed out" in proc.stderr and "measure container" in proc.stderr
    measure = containers(engine, env)["measure"]
    assert measure.attrs["State"]["Status"] == "exited"
    comparison = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert any("interrupted" in say("en", n) for n in comparison["notes"])
    assert 0 < len(comparison["benchmarks"][0]["samples"]["base"]) < 300
    assert "timed out" in (ws / ".profopt" / "report.md").read_text()


def test_container_output_cannot_issue_workflow_commands(engine, run_ids, tmp_path):
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2, rounds=2), injecting_setup(bench_files(1, rounds=2)))
    env = docker_env(tmp_path, ws, run_ids, inputs={"mode": "compare", "base": "main", "comment": "false"})
    proc = run_entrypoint(env, timeout=300, merged=True)
    assert f"[setup] {INJECTED}" in proc.stdout  # the PR's line is in the log, behind the prefix
    assert not any(INJECTED in c for c in workflow_commands(proc.stdout)), proc.stdout[-3000:]


def test_gpus_reach_the_engine_as_a_device_request(engine, run_ids, tmp_path):
    # This engine has no GPU runtime: the request must reach it, and its refusal be exit 3.
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2), bench_files(1))
    env = docker_env(tmp_path, ws, run_ids, inputs={"mode": "compare", "base": "main", "comment": "false",
                                                     "gpus": "0,1", "cpuset": "0"})
    proc = run_entrypoint(env, timeout=300)
    if proc.returncode == 0:
        pytest.skip("this engine has a GPU runtime; the refusal cannot be shown here")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "the setup container could not start" in proc.stderr and "NVIDIA Container Toolkit" in proc.stderr
    (created,) = containers(engine, env).values()  # kept for inspection: created, never started
    host = created.attrs["HostConfig"]
    assert host["DeviceRequests"] == [{"Driver": "", "Count": 0, "DeviceIDs": ["0", "1"],
                                       "Capabilities": [["gpu"]], "Options": {}}]
    assert host["CpusetCpus"] == "0"
