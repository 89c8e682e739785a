"""The action's engine without a Docker engine: settings, the container's environment, the image
hash, the refusals, `runner: local` end to end and the no-engine failure, with real subprocesses
and the loopback GitHub server."""
from __future__ import annotations

import json
import secrets
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
from conftest import ROOT, git

from profopt_ci.action import image as action_image
from profopt_ci.action import inputs as action_inputs
from profopt_ci.action import local, runs, workspace
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.words.i18n import say


def settings(tmp_path: Path, argv: list[str] | None = None, env: dict[str, str] | None = None) -> action_inputs.ActionSettings:
    return action_inputs.settings_from_args(["--workspace", str(tmp_path), *(argv or [])], env or {})


# ---- settings ------------------------------------------------------------------------------------


def test_inputs_come_from_the_environment_and_flags_win(tmp_path):
    env = {"INPUT_MODE": "compare", "INPUT_BASE": "main", "INPUT_GPUS": "0,1", "INPUT_CPUSET": "2-3",
           "INPUT_MAX_ROUNDS": "40", "INPUT_COMMENT": "false", "INPUT_STORE": "dir:baselines",
           "INPUT_MEMORY": "8G", "INPUT_TIMEOUT_MINUTES": "1.5", "INPUT_LANG": "zh", "INPUT_HARDWARE_LABEL": ""}
    s = settings(tmp_path, ["--gpus", "all"], env)
    assert (s.mode, s.base, s.gpus, s.cpuset, s.max_rounds) == ("compare", "main", "all", "2-3", 40)
    assert (s.comment, s.store, s.memory, s.timeout_s, s.lang) == (False, "dir:baselines", "8g", 90.0, "zh")
    assert s.hardware_label is None  # an empty input is "not given"
    assert s.workdir == tmp_path.resolve() / ".profopt"


@pytest.mark.parametrize("env, fragment", [
    ({"INPUT_MODE": "nightly"}, "mode: expected one of pr, baseline, compare"),
    ({"INPUT_RUNNER": "k8s"}, "runner: expected one of docker, local"),
    ({"INPUT_GPUS": "0;rm -rf /"}, "gpus: expected none, all or comma-separated"),
    ({"INPUT_CPUSET": "two"}, "cpuset: expected CPU numbers"),
    ({"INPUT_STORE": "s3:bucket"}, "store: expected dir:PATH or git:BRANCH"),
    ({"INPUT_STORE": "git:../x"}, "not a usable branch name"),
    ({"INPUT_MAX_ROUNDS": "0"}, "max-rounds"),
    ({"INPUT_MEMORY": "lots"}, "memory: expected a size"),
    ({"INPUT_COMMENT": "maybe"}, "expected true or false"),
    ({"INPUT_TIMEOUT_MINUTES": "-1"}, "timeout-minutes"),
])
def test_bad_inputs_are_usage_errors_naming_the_input(tmp_path, env, fragment):
    with pytest.raises(UsageError, match=None) as info:
        settings(tmp_path, [], env)
    assert fragment in str(info.value)


def test_compare_argv_passes_the_inputs_through(tmp_path):
    s = settings(tmp_path, ["--threshold", "2%", "--max-rounds", "30", "--fail-on", "none"])
    s.base, s.head = "a" * 40, "b" * 40
    argv = workspace.compare_argv(s, "measure", "/work")
    assert argv[:7] == ["compare", "--spec", "profopt.yml", "--workdir", "/work/.profopt", "--phase", "measure"]
    joined = " ".join(argv)
    for part in ("--out /work/.profopt/comparison.json", "--report /work/.profopt/report.md",
                 "--fail-on none", "--threshold 2%", "--max-rounds 30", f"--base {'a' * 40}", f"--head {'b' * 40}"):
        assert part in joined


def test_device_requests_for_gpus():
    assert runs.device_requests("none") == []
    (all_gpus,) = runs.device_requests("all")
    assert all_gpus["Count"] == -1 and all_gpus["Capabilities"] == [["gpu"]]
    (some,) = runs.device_requests("0,2")
    assert some["DeviceIDs"] == ["0", "2"] and some.get("Count") in (None, 0)


# ---- what the container may see ------------------------------------------------------------------


def test_container_env_is_an_allowlist_without_the_token(tmp_path):
    token = "ghs_" + secrets.token_hex(16)
    host = {"GITHUB_TOKEN": token, "INPUT_GITHUB_TOKEN": token, "ACTIONS_RUNTIME_TOKEN": "rt",
            "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x", "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root",
            "PATH": "/usr/bin", "GITHUB_REPOSITORY": REPO, "GITHUB_SHA": "c" * 40, "CI": "true",
            "GITHUB_REF": token}  # an allowlisted name carrying the secret's value is dropped too
    s = settings(tmp_path, ["--hardware-label", "gpu-a100"])
    env = runs.container_env(host, s)
    assert token not in env.values() and "rt" not in env.values()
    assert not any("TOKEN" in k or "SECRET" in k for k in env)
    assert env["GITHUB_REPOSITORY"] == REPO and env["GITHUB_SHA"] == "c" * 40 and env["CI"] == "true"
    assert env["HOME"] == "/tmp" and env["PROFOPT_HARDWARE_LABEL"] == "gpu-a100"
    assert "PATH" not in env and "GITHUB_REF" not in env  # the image's PATH; the poisoned value left out


def test_local_runner_env_strips_credentials(tmp_path):
    token = "ghs_" + secrets.token_hex(16)
    host = {"GITHUB_TOKEN": token, "GH_TOKEN": token, "ACTIONS_RUNTIME_TOKEN": "rt", "OTHER": token,
            "PATH": "/usr/bin"}
    env = local.local_env(host, settings(tmp_path, ["--gpus", "1"]))
    assert token not in env.values() and "ACTIONS_RUNTIME_TOKEN" not in env
    assert env["PATH"] == "/usr/bin" and env["CUDA_VISIBLE_DEVICES"] == "1"


def test_a_token_persisted_by_checkout_is_refused(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(
        '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n')
    with pytest.raises(UsageError, match="persist-credentials: false"):
        workspace.check_no_persisted_token(tmp_path)
    (tmp_path / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/o/r\n')
    workspace.check_no_persisted_token(tmp_path)  # a plain remote is fine


def test_dir_store_outside_the_workspace_gets_its_own_mount(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    inside = settings(ws, ["--store", "dir:data/baselines"])
    assert runs.store_mount(inside) == ("dir:/work/data/baselines", {})
    outside = settings(ws, ["--store", f"dir:{tmp_path / 'store'}"])
    store, volumes = runs.store_mount(outside)
    assert store == "dir:/store" and volumes == {str(tmp_path / "store"): {"bind": "/store", "mode": "rw"}}
    assert runs.store_mount(settings(ws, ["--store", "git:profopt-data"])) == ("git:profopt-data", {})


# ---- the image tag -------------------------------------------------------------------------------


def _context(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "src" / "pkg").mkdir(parents=True)
    (ctx / "Dockerfile").write_text("FROM x\n")
    (ctx / "pyproject.toml").write_text("[project]\nname='p'\n")
    (ctx / "src" / "pkg" / "a.py").write_text("A = 1\n")
    (ctx / "README.md").write_text("readme\n")
    return ctx


def test_image_tag_follows_the_dockerfile_base_and_sources_only(tmp_path):
    ctx = _context(tmp_path)
    tag, digest = action_image.image_tag(ctx)
    assert tag == f"profopt-runner:{digest[:16]}" and len(digest) == 64
    # Not part of the image: the README, tests, caches.
    (ctx / "README.md").write_text("changed\n")
    (ctx / "tests").mkdir()
    (ctx / "tests" / "t.py").write_text("x\n")
    (ctx / "src" / "pkg" / "__pycache__").mkdir()
    (ctx / "src" / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert action_image.image_tag(ctx)[1] == digest
    seen = {digest}
    for change in (lambda: (ctx / "src" / "pkg" / "a.py").write_text("A = 2\n"),
                   lambda: (ctx / "src" / "pkg" / "b.py").write_text("B = 1\n"),
                   lambda: (ctx / "pyproject.toml").write_text("[project]\nname='q'\n"),
                   lambda: (ctx / "Dockerfile").write_text("FROM y\n")):
        change()
        new = action_image.image_tag(ctx)[1]
        assert new not in seen
        seen.add(new)
    assert action_image.image_tag(ctx, base_image="other:1")[1] not in seen
    assert action_image.image_tag(ctx, repo="mine")[0].startswith("mine:")


def test_the_real_context_hashes_the_repositorys_dockerfile():
    tag, _ = action_image.image_tag(ROOT)
    assert tag.startswith("profopt-runner:")
    names = {p.relative_to(ROOT).as_posix() for p in action_image.source_files(ROOT, ("Dockerfile", ".dockerignore"))}
    assert {"Dockerfile", "pyproject.toml", "src/profopt_ci/action/entry.py"} <= names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)


# ---- whole runs without an engine ----------------------------------------------------------------


def test_no_engine_is_exit_3_with_a_clear_message_and_a_failure_comment(tmp_path, gh):
    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(2), bench_files(1))
    token = "ghs_" + secrets.token_hex(16)
    gh.add_token(token)
    dead = f"unix://{tmp_path}/no-docker.sock"
    env = action_env(tmp_path, ws, token=token, api_url=gh.url, event=pr_event(tmp_path / "event.json", base, head),
                     extra={"DOCKER_HOST": dead})
    proc = run_entrypoint(env, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert f"no Docker engine answers at {dead}" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    # The PR still hears about it (an earlier run's verdict must not stand), from the host side.
    (comment,) = gh.comments(REPO, PR)
    assert "no Docker engine answers" in comment["body"]
    out = read_outputs(tmp_path / "github_output")
    assert out["decision"] == "failed" and out["results_path"] == ""
    # Only the runner's masking command may carry it (publish masks the token before anything else).
    shown = [ln for ln in (proc.stdout + proc.stderr).splitlines() if not ln.startswith("::add-mask::")]
    assert not any(token in ln for ln in shown)


def test_mode_compare_without_base_is_a_usage_error(tmp_path):
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2), bench_files(1))
    proc = run_entrypoint(action_env(tmp_path, ws, inputs={"mode": "compare", "runner": "local"}), timeout=60)
    assert proc.returncode == 2 and "mode compare needs `base`" in proc.stderr


def test_an_unexpected_error_is_exit_3_in_one_line_never_1(tmp_path):
    # A file where .profopt should be: an OSError no job expects. It must not read as "policy failed".
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2), bench_files(1))
    (ws / ".profopt").write_text("not a directory\n")
    proc = run_entrypoint(action_env(tmp_path, ws, inputs={"mode": "compare", "base": "main", "runner": "local"}),
                          timeout=60)
    assert proc.returncode == 3, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("profopt: internal error: FileExistsError") and "Traceback" not in proc.stderr


def test_the_failure_note_speaks_the_reports_language(tmp_path):
    from profopt_ci.action.host import finish_report
    from profopt_ci.action.outcome import Cause, Outcome

    s = action_inputs.settings_from_args(["--workspace", str(tmp_path)], {"INPUT_LANG": "zh"})
    s.workdir.mkdir()
    (s.workdir / "report.md").write_text("# 报告\n")  # compare's, before the cause was known: not kept
    outcome = Outcome(exit_code=3, cause=Cause("action.cause.local_timeout", {"minutes": "0.3"}))
    report, comparison = finish_report(s, outcome)
    text = report.read_text()
    assert comparison is None and text.startswith("## profopt：基准测试运行失败") and "0.3 分钟" in text
    assert "# 报告" not in text and "timed out" not in text and "以下是" not in text  # nothing measured follows
    assert outcome.cause_text("en").startswith("timed out: the run went past its limit of 0.3 min")


def test_a_failed_run_s_report_is_built_with_its_cause_first_and_within_the_limit(tmp_path):
    """The note is part of building the report from what the comparison holds, not text put before
    a finished report: in the report's language, and the whole within the comment's limit."""
    from comparison_fixtures import benchmark, comparison

    from profopt_ci.action.host import finish_report
    from profopt_ci.action.outcome import Cause, Outcome
    from profopt_ci.report.render import MAX_CHARS, render

    s = action_inputs.settings_from_args(["--workspace", str(tmp_path)], {"INPUT_LANG": "zh"})
    s.workdir.mkdir()
    # 400 benchmarks with long names: the report alone is cut to the limit
    doc = comparison([benchmark(f"step-{i:03d}-" + "x" * 60, 14.2, 12.4 + i % 3, seed=i, with_profile=False)
                      for i in range(400)])
    (s.workdir / "comparison.json").write_text(json.dumps(doc))
    alone = render(doc, "md", "zh")
    assert len(alone) > MAX_CHARS - 2000  # the report alone fills the comment
    (s.workdir / "report.md").write_text(alone)
    report, comparison_path = finish_report(s, Outcome(exit_code=3, cause=Cause("action.cause.oom_host", {"phase": "measure"})))
    text = report.read_text()
    assert comparison_path == s.workdir / "comparison.json"
    assert text.startswith("## profopt：基准测试运行失败") and "内存" in text
    assert alone.splitlines()[0] in text  # the headline of what was measured follows the note
    assert len(text) <= MAX_CHARS, len(text)  # put in front of the finished report, it went over


def test_base_is_the_prs_base_branch_merge_base_or_the_default_branchs(tmp_path):
    from profopt_ci.measure.checkouts import resolve_refs

    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(2), bench_files(1))
    git(ws, "branch", "release", head)  # a second branch: a PR into it has head as its own base
    assert resolve_refs(ws, None, None)["base"] == ("merge-base of main", base)
    assert resolve_refs(ws, None, None, base_branch="main")["base"] == ("merge-base of main", base)
    assert resolve_refs(ws, None, None, base_branch="release")["base"][1] == head
    assert resolve_refs(ws, None, None, base_branch="gone", base_sha=base)["base"] == (base, base)
    with pytest.raises(UsageError, match="base branch 'gone' is not in the checkout"):
        resolve_refs(ws, None, None, base_branch="gone")
    assert resolve_refs(ws, "main", head)["base"] == ("main", base)  # an explicit base wins


@pytest.mark.slow
def test_local_runner_end_to_end_posts_one_comment_without_the_token(tmp_path, gh):
    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(2, rounds=3), bench_files(1, rounds=3))
    token = "ghs_" + secrets.token_hex(16)
    gh.add_token(token)
    env = action_env(tmp_path, ws, token=token, api_url=gh.url, event=pr_event(tmp_path / "event.json", base, head),
                     inputs={"runner": "local", "hardware-label": "cpu-local", "fail-on": "none"},
                     extra={"ACTIONS_RUNTIME_TOKEN": "runtime-" + token})
    proc = run_entrypoint(env, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    comparison = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert (comparison["base"]["commit"], comparison["head"]["commit"]) == (base, head)  # merge-base of main
    samples = comparison["benchmarks"][0]["samples"]
    assert samples["base"] and samples["head"]
    # The benchmark ran without any credential in its environment.
    assert {s["quality"]["secrets_seen"] for side in samples.values() for s in side} == {""}
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"].startswith("<!-- profopt:cpu-local -->")
    out = read_outputs(tmp_path / "github_output")
    assert out["decision"] == comparison["decision"]
    assert out["results_path"] == str(ws / ".profopt" / "comparison.json")
    headline = Path(out["report_path"]).read_text().splitlines()[0]
    assert comparison["decision"] in headline and headline in comment["body"]
    assert (tmp_path / "step_summary.md").read_text().strip()


@pytest.mark.slow
def test_local_runner_timeout_is_exit_3_and_keeps_what_was_measured(tmp_path):
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2, rounds=200, sleep_s=0.05), bench_files(1, rounds=200, sleep_s=0.05))
    env = action_env(tmp_path, ws, inputs={"runner": "local", "mode": "compare", "base": "main",
                                           "timeout-minutes": "0.15", "comment": "false"})
    proc = run_entrypoint(env, timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "timed out" in proc.stderr
    comparison = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert any("interrupted" in say("en", n) for n in comparison["notes"])
    assert comparison["benchmarks"][0]["samples"]["base"]  # what ran before the limit is kept
    report = (ws / ".profopt" / "report.md").read_text()
    assert report.startswith("## profopt: the benchmark run failed") and "timed out" in report
    assert read_outputs(tmp_path / "github_output")["decision"] == comparison["decision"]


def test_connect_names_the_socket_it_tried(tmp_path):
    with pytest.raises(InfraError, match=r"no Docker engine answers at unix://.*nothing\.sock"):
        action_image.connect({"DOCKER_HOST": f"unix://{tmp_path}/nothing.sock"})


def test_root_owned_workspace_is_lent_to_the_image_user_and_given_back(tmp_path):
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2), bench_files(1))
    s = settings(ws)
    workspace.prepare_workdir(s)
    own = workspace.benchmark_user(s)
    assert own.user == f"{workspace.IMAGE_UID}:{workspace.IMAGE_UID}"
    assert (ws / ".profopt").stat().st_uid == workspace.IMAGE_UID
    assert (ws / ".git" / "worktrees").stat().st_uid == workspace.IMAGE_UID
    assert (ws / ".git" / "config").stat().st_uid == 0  # nothing else changes hands
    workspace.restore_ownership(own)
    assert all(p.lstat().st_uid == 0 for p in [ws / ".profopt", *(ws / ".profopt").rglob("*")])


def test_workspace_of_a_non_root_runner_keeps_its_owner(tmp_path):
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1001, 127)
    own = workspace.benchmark_user(settings(ws))
    assert own.user == "1001:127" and own.restore_to is None


def test_local_runner_output_cannot_issue_workflow_commands(tmp_path):
    ws = tmp_path / "ws"
    make_pr_repo(ws, bench_files(2, rounds=3), injecting_setup(bench_files(1, rounds=3)))
    env = action_env(tmp_path, ws, inputs={"runner": "local", "mode": "compare", "base": "main", "comment": "false"})
    proc = run_entrypoint(env, timeout=120, merged=True)
    assert proc.returncode == 3, proc.stdout[-3000:]
    commands = workflow_commands(proc.stdout)
    assert INJECTED in commands  # the PR's line reached the log…
    stop = next(c for c in commands if c.startswith("::stop-commands::"))
    resume = f"::{stop.split('::')[2]}::"
    # …but only while the runner was told to ignore commands, with a token the PR could not know.
    assert commands.index(stop) < commands.index(INJECTED) < commands.index(resume)
    assert len(stop) == len("::stop-commands::") + 32


def test_baseline_mode_commits_in_the_container_and_pushes_from_the_host(tmp_path):
    s = settings(tmp_path, [], {"INPUT_MODE": "baseline", "INPUT_STORE": "git:profopt-data"})
    argv = workspace.baseline_argv(s, s.store)
    assert argv[:2] == ["baseline", "refresh"] and "--no-push" in argv  # no credentials inside
    d = settings(tmp_path, [], {"INPUT_MODE": "baseline", "INPUT_STORE": "dir:baselines"})
    assert "--no-push" not in workspace.baseline_argv(d, d.store)
