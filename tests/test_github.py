"""The publish stage against a real HTTP server on loopback that behaves like GitHub (ghserver.py)."""
from __future__ import annotations

import io
import json
import os
import re
import secrets
import threading
from pathlib import Path

import comparison_fixtures as fixtures
import pytest
from conftest import run_cli
from ghserver import BOT_LOGIN, FakeGitHub

from profopt_ci.errors import InfraError, ProfoptError, UsageError
from profopt_ci.publish.comment import (
    PublishSettings,
    marker_for,
    publish,
    publish_from_artifact,
    read_comment_artifact,
    run_publish,
    settings_from_env,
)
from profopt_ci.publish.rest import GitHubClient
from profopt_ci.publish.step_outputs import annotations, append_summary, truncate_markdown, write_outputs

REPO = "octo/widgets"
PR = 12
SHA = "a" * 40


def publish_exit(*args, err=None, **kw) -> int:
    """`run_publish`'s exit code as `profopt publish` gives it: the error it raises goes to the CLI's
    boundary, which prints `profopt: MESSAGE` (test_publish_errors_reach_the_clis_one_boundary runs it)."""
    try:
        return run_publish(*args, **kw)
    except ProfoptError as exc:
        if err is not None:
            err.write(f"profopt: {exc}\n")
        return exc.exit_code


class FakeClock:
    """Injected as both `sleep` and `clock`: sleeping moves time on, instantly."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def bot_token(gh: FakeGitHub) -> str:
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    return token


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def settings(gh: FakeGitHub, token: str, **kw) -> PublishSettings:
    return PublishSettings(**{"api_url": gh.url, "repo": REPO, "pr_number": PR, "token": token, **kw})


def post(gh, token, report="# report\n", clock=None, **kw):
    clock = clock or FakeClock()
    out = io.StringIO()
    result = publish(report, None, settings(gh, token, **kw), out=out, sleep=clock.sleep, clock=clock)
    return result, out.getvalue()


def comparison() -> dict:
    """A regressed benchmark with a broken loss constraint and a failed one, as compare writes them.
    The summary is a fork's file's, and a file may say anything: a line break no producer writes is
    what the step outputs' random delimiters are for."""
    benches = [fixtures.benchmark("train-step", 12.0, 12.6, loss=(2.3, 2.369), bench=fixtures.DIGEST),
               fixtures.failed_benchmark("infer", "head", "Traceback\nRuntimeError: boom\n::error::injected")]
    return {**fixtures.comparison(benches, "failed"), "summary": "train-step 5% slower\nsecond line"}


# ---- the sticky comment --------------------------------------------------------------------------
def test_one_comment_after_many_runs_updated_in_place(gh, bot_token):
    results = [post(gh, bot_token, f"# run {i}\n")[0] for i in range(4)]
    comments = gh.comments(REPO, PR)
    assert len(comments) == 1
    assert [r["action"] for r in results] == ["created", "updated", "updated", "updated"]
    assert {r["comment_id"] for r in results} == {comments[0]["id"]}
    assert comments[0]["body"] == marker_for() + "\n# run 3\n"
    assert comments[0]["user"] == {"login": BOT_LOGIN, "id": 41898282, "type": "Bot"}
    assert results[0]["url"].endswith(f"#issuecomment-{comments[0]['id']}")
    assert len(gh.requests_for("POST", r".*/comments")) == 1


def test_marker_comment_by_someone_else_is_left_alone(gh, bot_token):
    planted = gh.seed_comment(REPO, PR, marker_for() + "\nI copied your marker", "mallory")
    # A personal token's own marker comment is not the bot's either.
    gh.seed_comment(REPO, PR, marker_for() + "\nfrom a PAT run", "octo-dev")
    for i in range(2):
        post(gh, bot_token, f"# run {i}\n")
    comments = {c["id"]: c for c in gh.comments(REPO, PR)}
    assert comments[planted["id"]]["body"] == planted["body"]
    assert comments[planted["id"]]["updated_at"] == planted["updated_at"]
    ours = [c for c in comments.values() if c["user"]["login"] == BOT_LOGIN]
    assert len(ours) == 1 and ours[0]["body"].endswith("# run 1\n")
    assert not gh.requests_for("PATCH", rf".*/comments/{planted['id']}")


def test_personal_token_matches_its_own_login(gh):
    token = "ghp_" + secrets.token_hex(18)
    gh.add_token(token, "octo-dev")
    bot = gh.seed_comment(REPO, PR, marker_for() + "\nold bot comment", BOT_LOGIN, "Bot")
    first, _ = post(gh, token, "one\n")
    second, _ = post(gh, token, "two\n")
    assert (first["action"], second["action"], first["author"]) == ("created", "updated", "octo-dev")
    assert first["comment_id"] == second["comment_id"] != bot["id"]
    assert gh.comments(REPO, PR)[0]["body"] == bot["body"]
    # The installation token asked /user and got 403; the personal token got its login.
    assert [r.status for r in gh.requests_for("GET", "/user")] == [200, 200]


def test_installation_token_gets_403_on_user_and_posts_as_bot(gh, bot_token):
    result, _ = post(gh, bot_token)
    assert result["author"] == BOT_LOGIN
    assert [r.status for r in gh.requests_for("GET", "/user")] == [403]


def test_labels_keep_separate_comments(gh, bot_token):
    gpu, _ = post(gh, bot_token, "gpu 1\n", label="gpu-h100")
    cpu, _ = post(gh, bot_token, "cpu 1\n", label="cpu-2vcpu")
    gpu2, _ = post(gh, bot_token, "gpu 2\n", label="gpu-h100")
    assert gpu["comment_id"] == gpu2["comment_id"] != cpu["comment_id"]
    bodies = sorted(c["body"] for c in gh.comments(REPO, PR))
    assert bodies == ["<!-- profopt:cpu-2vcpu -->\ncpu 1\n", "<!-- profopt:gpu-h100 -->\ngpu 2\n"]


@pytest.mark.parametrize("label", ["a -->", "x\ny", "a b", "-lead", "a" * 65])
def test_bad_label_is_a_usage_error(label):
    with pytest.raises(UsageError):
        marker_for(label)
    with pytest.raises(UsageError):
        settings_from_env({"PROFOPT_COMMENT_LABEL": label})


def test_pagination_finds_ours_beyond_the_first_page(gh, bot_token):
    for i in range(150):
        gh.seed_comment(REPO, PR, f"chatter {i}", "someone")
    ours = gh.seed_comment(REPO, PR, marker_for() + "\nold", BOT_LOGIN, "Bot")
    for i in range(70):
        gh.seed_comment(REPO, PR, f"more {i}", "someone")
    result, _ = post(gh, bot_token, "new\n")
    assert (result["action"], result["comment_id"]) == ("updated", ours["id"])
    assert len(gh.comments(REPO, PR)) == 221
    lists = gh.requests_for("GET", r".*/issues/12/comments")
    # page 1 by path, pages 2 and 3 through the Link URLs (GitHub's /repositories/{id} form)
    assert [r.target.split("?")[0].split("/")[1] for r in lists] == ["repos", "repositories", "repositories"]
    assert "per_page=100" in lists[0].target and lists[2].target.endswith("page=3")


def test_link_to_another_host_is_not_followed(gh, bot_token):
    foreign = FakeGitHub()
    foreign.start()
    try:
        gh.link_base = foreign.url
        for i in range(101):
            gh.seed_comment(REPO, PR, f"c{i}", "someone")
        with pytest.raises(InfraError, match="another host"):
            post(gh, bot_token)
        assert foreign.requests == []
    finally:
        foreign.stop()


def test_two_racing_runs_end_with_one_comment(gh, bot_token):
    # Both runs list (nothing there), then both POSTs meet at the barrier, so both create: the
    # worst interleaving. The post-create re-list must converge on the oldest comment.
    gh.race_barrier = threading.Barrier(2)
    results: list[dict] = []

    def run(i: int) -> None:
        results.append(post(gh, bot_token, f"racer {i}\n")[0])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    comments = gh.comments(REPO, PR)
    assert len(gh.requests_for("POST", r".*/comments")) == 2
    assert len(comments) == 1
    assert {r["comment_id"] for r in results} == {comments[0]["id"]}
    assert comments[0]["body"] in {marker_for() + "\nracer 0\n", marker_for() + "\nracer 1\n"}


def test_many_concurrent_runs_end_with_one_comment(gh, bot_token):
    threads = [threading.Thread(target=post, args=(gh, bot_token, f"r{i}\n")) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(gh.comments(REPO, PR)) == 1


# ---- retries, rate limits, bounded waits ----------------------------------------------------------
def test_5xx_is_retried_with_backoff(gh, bot_token, clock):
    gh.inject("GET", r".*/comments", status=502, times=2)
    gh.inject("PATCH", r".*/comments/\d+", status=503, times=1)
    gh.seed_comment(REPO, PR, marker_for() + "\nold", BOT_LOGIN, "Bot")
    result, _ = post(gh, bot_token, clock=clock)
    assert result["action"] == "updated"
    assert clock.sleeps == [1.0, 2.0, 1.0]


def test_429_retry_after_is_honoured(gh, bot_token, clock):
    gh.inject("GET", r".*/comments", status=429, headers={"Retry-After": "7"},
              body={"message": "You have exceeded a secondary rate limit."})
    post(gh, bot_token, clock=clock)
    assert clock.sleeps == [7.0]


def test_403_secondary_limit_without_hint_waits_a_minute(gh, bot_token, clock):
    gh.inject("POST", r".*/comments", status=403,
              body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."})
    result, _ = post(gh, bot_token, clock=clock)
    assert result["action"] == "created" and clock.sleeps == [60.0]
    assert len(gh.comments(REPO, PR)) == 1


def test_primary_limit_waits_until_reset(gh, bot_token, clock):
    reset = int(clock.now) + 42
    gh.inject("GET", r".*/comments", status=403, body={"message": "API rate limit exceeded"},
              headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})
    post(gh, bot_token, clock=clock)
    assert clock.sleeps == [43.0]


def test_total_wait_is_bounded(gh, bot_token, clock):
    gh.inject("GET", r".*/comments", status=429,
              headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(clock.now) + 3600)})
    with pytest.raises(InfraError, match="max_wait_s=120") as info:
        post(gh, bot_token, clock=clock, max_wait_s=120)
    assert clock.sleeps == []  # refused up front instead of sleeping an hour
    assert bot_token not in str(info.value)


def test_persistent_5xx_gives_up_within_the_budget(gh, bot_token, clock):
    gh.inject("GET", r".*/comments", status=500, times=100)
    with pytest.raises(InfraError, match="retry budget|gave up"):
        post(gh, bot_token, clock=clock, max_wait_s=30)
    assert sum(clock.sleeps) <= 30


def test_dropped_connection_on_read_is_retried(gh, bot_token, clock):
    gh.inject("GET", r".*/comments", kind="drop")
    result, _ = post(gh, bot_token, clock=clock)
    assert result["action"] == "created" and clock.sleeps == [1.0]


@pytest.mark.parametrize("kind,status", [("drop_after", 0), ("status_after", 502)])
def test_lost_post_response_does_not_duplicate(gh, bot_token, clock, kind, status):
    # The POST took effect but the answer was lost: re-listing finds it instead of posting again.
    gh.inject("POST", r".*/comments", kind=kind, status=status or 500)
    result, _ = post(gh, bot_token, clock=clock)
    assert len(gh.comments(REPO, PR)) == 1
    assert len(gh.requests_for("POST", r".*/comments")) == 1
    assert result["comment_id"] == gh.comments(REPO, PR)[0]["id"]


def test_connection_refused_is_exit_3(bot_token, tmp_path, clock):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    report = tmp_path / "report.md"
    report.write_text("# r\n")
    err = io.StringIO()
    code = publish_exit(report, None, repo=REPO, pr=PR, api_url=f"http://127.0.0.1:{port}",
                       environ={"GITHUB_TOKEN": bot_token}, out=io.StringIO(), err=err,
                       sleep=clock.sleep, clock=clock, max_wait_s=20)
    assert code == 3
    assert "ConnectionError" in err.getvalue() and sum(clock.sleeps) <= 20


def test_bad_token_is_rejected_clearly_without_echoing_it(gh, clock, tmp_path):
    report = tmp_path / "report.md"
    report.write_text("# r\n")
    err = io.StringIO()
    token = "ghp_" + secrets.token_hex(18)  # unknown to the server
    code = publish_exit(report, None, repo=REPO, pr=PR, api_url=gh.url, token=token,
                       environ={}, out=io.StringIO(), err=err, sleep=clock.sleep, clock=clock)
    assert code == 3
    assert "401 Bad credentials" in err.getvalue() and token not in err.getvalue()


# ---- body size ----------------------------------------------------------------------------------
def test_long_report_is_cut_to_fit_with_a_note(gh, bot_token):
    report = "".join(f"| row {i} | {'x' * 90} |\n" for i in range(1200))  # ~120k characters
    result, _ = post(gh, bot_token, report, run_url="https://github.com/octo/widgets/actions/runs/9")
    body = gh.comments(REPO, PR)[0]["body"]
    assert result["truncated"] and len(body) <= 65_536
    assert body.startswith(marker_for() + "\n| row 0 |")
    assert "Report truncated" in body and "actions/runs/9" in body
    assert all(line.endswith("|") for line in body.splitlines()[1:-4] if line)  # cut at a line


def test_422_body_too_long_is_shrunk_and_retried(gh, bot_token):
    gh.body_limit = 20_000  # a server that counts more strictly than our margin expects
    report = "word " * 8000 + "\n" + "line\n" * 2000
    result, _ = post(gh, bot_token, report)
    body = gh.comments(REPO, PR)[0]["body"]
    assert len(body) <= 20_000 and result["truncated"]
    statuses = [r.status for r in gh.requests_for("POST", r".*/comments")]
    assert statuses[0] == 422 and statuses[-1] == 201


def test_custom_shrink_is_used(gh, bot_token):
    calls = []

    def shrink(md: str, limit: int) -> str:
        calls.append(limit)
        return "short version\n"

    publish("x" * 70_000, None, settings(gh, bot_token), shrink=shrink, out=io.StringIO())
    assert calls == [65_000 - len(marker_for()) - 1]
    assert gh.comments(REPO, PR)[0]["body"] == marker_for() + "\nshort version\n"


def test_truncate_markdown_closes_an_open_fence():
    md = "intro\n```\n" + "code line\n" * 100 + "```\nafter\n"
    cut = truncate_markdown(md, 500)
    assert len(cut) <= 500 and cut.count("```") == 2 and "truncated" in cut


# ---- fork fallback and --from-artifact ----------------------------------------------------------
def fork_env(tmp_path: Path, token: str, gh: FakeGitHub, event: dict) -> dict[str, str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    return {"GITHUB_TOKEN": token, "GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": REPO,
            "GITHUB_EVENT_PATH": str(event_path), "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output.txt"), "GITHUB_RUN_ID": "77"}


def read_outputs(path: Path) -> dict[str, str]:
    values, lines = {}, path.read_text().split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        name, delim = lines[i].split("<<")
        end = lines.index(delim, i + 1)
        values[name] = "\n".join(lines[i + 1:end])
        i = end + 1
    return values


def test_read_only_token_falls_back_then_workflow_run_posts(gh, tmp_path, monkeypatch, clock):
    ro = "ghs_" + secrets.token_hex(18)
    gh.add_token(ro, can_write=False)
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.md"
    report.write_text("# fork report\n")
    cmp_path = tmp_path / "comparison.json"
    cmp_path.write_text(json.dumps(comparison()))
    env = fork_env(tmp_path, ro, gh, {"pull_request": {"number": PR, "head": {"sha": SHA}}})
    out = io.StringIO()
    code = publish_exit(report, cmp_path, environ=env, out=out, err=out, sleep=clock.sleep, clock=clock)
    assert code == 0, out.getvalue()
    folder = tmp_path / "profopt-comment"
    assert (folder / "pr_number").read_text() == "12\n" and (folder / "head_sha").read_text() == SHA + "\n"
    assert (folder / "report.md").read_text() == "# fork report\n"
    assert "# fork report" in (tmp_path / "summary.md").read_text()
    outputs = read_outputs(tmp_path / "output.txt")
    assert outputs["publish_action"] == "fallback" and outputs["artifact_dir"] == str(folder)
    assert outputs["decision"] == "failed" and outputs["regressed"] == "1"
    assert gh.comments(REPO, PR) == [] and "--from-artifact" in out.getvalue()

    # The trusted workflow_run job: a write token, the event names the built commit.
    writer = "ghs_" + secrets.token_hex(18)
    gh.add_token(writer)
    gh.set_pull(REPO, PR, SHA)
    (tmp_path / "wr").mkdir()
    env2 = fork_env(tmp_path / "wr", writer, gh, {"workflow_run": {"head_sha": SHA, "pull_requests": []}})
    out2 = io.StringIO()
    assert publish_exit(None, from_artifact=folder, environ=env2, out=out2, err=out2,
                       sleep=clock.sleep, clock=clock) == 0, out2.getvalue()
    comments = gh.comments(REPO, PR)
    # re-rendered from the artifact's comparison.json, never the fork's own report.md
    assert len(comments) == 1 and comments[0]["body"].startswith(marker_for() + "\n")
    assert "# fork report" not in comments[0]["body"] and "train-step" in comments[0]["body"]
    assert read_outputs(tmp_path / "wr" / "output.txt")["publish_action"] == "created"


def make_artifact(directory: Path, pr: str = "12", report: str = "# r\n", sha: str | None = SHA,
                  doc: dict | None = None) -> Path:
    from comparison_fixtures import keep

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "comparison.json").write_text(json.dumps(doc if doc is not None else keep()))
    (directory / "pr_number").write_text(pr)
    (directory / "report.md").write_text(report)
    if sha:
        (directory / "head_sha").write_text(sha)
    return directory


@pytest.mark.parametrize("bad", ["12; rm -rf /", "-1", "0", "", "1e3", "12\n13", "99999999999", "٣"])
def test_from_artifact_rejects_a_bad_pr_number(gh, bot_token, tmp_path, bad):
    folder = make_artifact(tmp_path / "art", pr=bad)
    err = io.StringIO()
    code = publish_exit(None, from_artifact=folder, repo=REPO, api_url=gh.url,
                       environ={"GITHUB_TOKEN": bot_token}, out=io.StringIO(), err=err)
    assert code == 2 and "PR number" in err.getvalue()
    assert gh.requests == []  # rejected before any call


def test_from_artifact_does_not_follow_symlinks(gh, bot_token, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET CONTENT")
    folder = make_artifact(tmp_path / "art")
    (folder / "report.md").unlink()
    (folder / "report.md").symlink_to(secret)
    err, out = io.StringIO(), io.StringIO()
    code = publish_exit(None, from_artifact=folder, repo=REPO, api_url=gh.url,
                       environ={"GITHUB_TOKEN": bot_token}, out=out, err=err)
    assert code == 2 and "symbolic link" in err.getvalue()
    assert "TOP SECRET" not in out.getvalue() + err.getvalue()
    assert gh.requests_for("POST", r".*/comments") == []
    # the directory itself as a symlink is refused too
    (tmp_path / "link").symlink_to(make_artifact(tmp_path / "art2"))
    with pytest.raises(UsageError, match="not a directory"):
        read_comment_artifact(tmp_path / "link")


def test_from_artifact_ignores_an_oversize_report_and_posts_the_rendered_comparison(gh, bot_token, tmp_path):
    folder = make_artifact(tmp_path / "art", report="y" * 100 + "\n" + "z" * (3 * 1024 * 1024))
    assert read_comment_artifact(folder, report_cap=4096).report_capped
    publish_from_artifact(folder, settings(gh, bot_token, pr_number=None), out=io.StringIO())
    body = gh.comments(REPO, PR)[0]["body"]
    assert "zzzz" not in body and len(body) <= 65_536


def test_from_artifact_refuses_a_pr_whose_head_is_not_the_built_commit(gh, bot_token, tmp_path):
    gh.set_pull(REPO, PR, "b" * 40)  # the artifact claims PR 12, but 12's head is another commit
    folder = make_artifact(tmp_path / "art")
    out = io.StringIO()
    result = publish_from_artifact(folder, settings(gh, bot_token, pr_number=None, head_sha=SHA), out=out)
    assert result["action"] == "skipped" and "not posting" in out.getvalue()
    assert gh.requests_for("POST", r".*/comments") == []


def test_from_artifact_pr_must_match_the_trusted_event(gh, bot_token, tmp_path):
    folder = make_artifact(tmp_path / "art", pr="13")
    with pytest.raises(UsageError, match="PR #13 but the triggering run belongs to PR #12"):
        publish_from_artifact(folder, settings(gh, bot_token), out=io.StringIO())


# ---- the token stays secret ---------------------------------------------------------------------
def test_token_only_ever_in_the_authorization_header(gh, tmp_path, capsys, clock, monkeypatch):
    token = "ghs_" + secrets.token_hex(18)
    gh.add_token(token)
    ro = "ghs_" + secrets.token_hex(18)
    gh.add_token(ro, can_write=False)
    monkeypatch.chdir(tmp_path)
    for i in range(120):
        gh.seed_comment(REPO, PR, f"c{i}", "someone")
    gh.inject("GET", r".*/comments", status=502)
    gh.inject("POST", r".*/comments", kind="drop_after")
    gh.inject("PATCH", r".*/comments/\d+", status=429, headers={"Retry-After": "1"})
    report = tmp_path / "report.md"
    report.write_text("# report\n")
    cmp_path = tmp_path / "comparison.json"
    cmp_path.write_text(json.dumps(comparison()))
    env = fork_env(tmp_path, token, gh, {"pull_request": {"number": PR, "head": {"sha": SHA}}})
    codes = [publish_exit(report, cmp_path, environ=env, sleep=clock.sleep, clock=clock) for _ in range(2)]
    codes.append(publish_exit(report, cmp_path, environ={**env, "GITHUB_TOKEN": ro},
                             sleep=clock.sleep, clock=clock))
    codes.append(publish_exit(report, cmp_path, environ={**env, "GITHUB_TOKEN": "ghp_" + "0" * 36},
                             sleep=clock.sleep, clock=clock))
    assert codes == [0, 0, 0, 3]
    assert len(gh.requests) > 10
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    for tok in (token, ro):
        for r in gh.requests:
            assert tok not in r.target and tok not in r.body
            assert all(tok not in v for k, v in r.headers.items() if k != "authorization")
        leaks = [line for line in printed.splitlines() if tok in line]
        assert leaks and set(leaks) == {f"::add-mask::{tok}"}
        for name in ("summary.md", "output.txt"):
            assert tok not in (tmp_path / name).read_text()
        assert all(tok not in p.read_text() for p in (tmp_path / "profopt-comment").iterdir())
    assert {r.headers["authorization"] for r in gh.requests} >= {f"Bearer {token}", f"Bearer {ro}"}


def test_outside_actions_the_token_is_not_printed_at_all(gh, bot_token, capsys, tmp_path):
    report = tmp_path / "r.md"
    report.write_text("# r\n")
    assert publish_exit(report, None, repo=REPO, pr=PR, api_url=gh.url,
                       environ={"GITHUB_TOKEN": bot_token}) == 0
    captured = capsys.readouterr()
    assert bot_token not in captured.out + captured.err and "created comment" in captured.out
    assert bot_token not in repr(settings(gh, bot_token))


# ---- settings and usage errors ------------------------------------------------------------------
def test_settings_from_env_reads_the_actions_environment(tmp_path):
    ev = tmp_path / "e.json"
    ev.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": SHA}}}))
    env = {"GITHUB_REPOSITORY": REPO, "GITHUB_EVENT_PATH": str(ev), "GITHUB_TOKEN": "t",
           "GITHUB_STEP_SUMMARY": "/s", "GITHUB_OUTPUT": "/o", "GITHUB_RUN_ID": "5",
           "GITHUB_ACTIONS": "true"}
    s = settings_from_env(env)
    assert (s.api_url, s.repo, s.pr_number, s.head_sha, s.token) == ("https://api.github.com", REPO, 7, SHA, "t")
    assert (s.summary_path, s.output_path, s.in_actions) == (Path("/s"), Path("/o"), True)
    assert s.run_url == "https://github.com/octo/widgets/actions/runs/5"
    assert settings_from_env(env, pr="9", repo="a/b", api_url="http://h/api/v3/").pr_number == 9
    ev.write_text(json.dumps({"issue": {"number": 3, "pull_request": {}}}))
    assert settings_from_env(env).pr_number == 3
    ev.write_text(json.dumps({"issue": {"number": 3}}))  # a plain issue, not a PR
    assert settings_from_env(env).pr_number is None
    ev.write_text(json.dumps({"workflow_run": {"head_sha": SHA, "pull_requests": [{"number": 4}]}}))
    assert (settings_from_env(env).pr_number, settings_from_env(env).head_sha) == (4, SHA)


@pytest.mark.parametrize("env,kw,missing", [
    ({"GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": "t"}, {}, "PR number"),
    ({"GITHUB_TOKEN": "t"}, {"pr": 3}, "repository"),
    ({"GITHUB_REPOSITORY": REPO}, {"pr": 3}, "token"),
])
def test_missing_settings_are_usage_errors_after_the_summary(tmp_path, env, kw, missing):
    report = tmp_path / "r.md"
    report.write_text("# r\n")
    summary = tmp_path / "summary.md"
    err = io.StringIO()
    code = publish_exit(report, None, environ={**env, "GITHUB_STEP_SUMMARY": str(summary)},
                       out=io.StringIO(), err=err, **kw)
    assert code == 2 and missing in err.getvalue()
    assert summary.read_text() == "# r\n"


@pytest.mark.parametrize("kw", [{"repo": "no-slash"}, {"repo": "a/b/c"}, {"pr": "x"},
                                {"api_url": "http://user:pw@h"}, {"api_url": "ftp://h"}])
def test_bad_flags_are_usage_errors(tmp_path, kw):
    report = tmp_path / "r.md"
    report.write_text("# r\n")
    base = {"repo": REPO, "pr": 1, "api_url": "http://127.0.0.1:9"}
    code = publish_exit(report, None, environ={"GITHUB_TOKEN": "t"}, out=io.StringIO(),
                       err=io.StringIO(), **{**base, **kw})
    assert code == 2


def test_unreadable_files_are_usage_errors(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"schema": "profopt/results@1"}))
    report = tmp_path / "r.md"
    report.write_text("x")
    kw = {"environ": {}, "out": io.StringIO(), "err": io.StringIO()}
    assert publish_exit(tmp_path / "missing.md", None, **kw) == 2
    assert publish_exit(report, bad, **kw) == 2
    assert publish_exit(None, None, **kw) == 2


# ---- summary, outputs, annotations --------------------------------------------------------------
def test_write_outputs_uses_random_delimiters(tmp_path):
    out = tmp_path / "out"
    write_outputs(comparison(), "report.md", out)
    write_outputs(comparison(), "report.md", out)
    values = read_outputs(out)
    assert values["decision"] == "failed" and values["summary"] == "train-step 5% slower\nsecond line"
    assert (values["regressed"], values["constraint_failures"], values["failed"]) == ("1", "1", "1")
    assert json.loads(values["counts"])["benchmarks"] == 2 and values["report_path"] == "report.md"
    delims = [line.split("<<")[1] for line in out.read_text().splitlines() if "<<" in line]
    assert len(set(delims)) == len(delims) == 2 * len(values)


def test_summary_is_appended_within_one_mib(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n" + "p" * (1024 * 1024 - 5000))
    written = append_summary("# report\n" + "é line\n" * 10_000, path)
    assert 0 < written and path.stat().st_size <= 1024 * 1024
    assert path.read_text().startswith("earlier step output") and "truncated" in path.read_text()
    path.write_text("q" * (1024 * 1024 - 100))
    assert append_summary("# more\n", path) == 0  # no room left: nothing written, nothing broken


def test_annotations_flag_regressions_and_broken_constraints():
    lines = annotations(comparison())
    assert lines[0] == ("::warning title=profopt%3A train-step regressed::train-step: step_time_ms "
                        "regressed +4.6%25 (base 12.05, head 12.68)")
    assert lines[1] == ("::warning title=profopt%3A train-step regressed::train-step: throughput "
                        "regressed -4.4%25 (base 5312, head 5046)")
    assert lines[2].startswith("::error title=profopt%3A train-step constraint broken::train-step: "
                               "constraint loss (rel_tol 0.01) broken: |Δ| 3%25 > 1%25 at step 1")
    assert lines[3] == "::error title=profopt%3A infer failed::infer failed on head: ::error::injected"
    assert len(lines) == 4 and all("\n" not in line for line in lines)


def test_annotations_of_a_comparison_read_from_its_file_are_the_same(tmp_path):
    """Read back, metrics are documents.types_comparison.Metric, not dicts: the same lines must come out."""
    from profopt_ci.documents.comparison import load_comparison

    (tmp_path / "c.json").write_text(json.dumps(comparison()))
    read = load_comparison(tmp_path / "c.json")
    assert type(read["benchmarks"][0]["metrics"]["step_time_ms"]).__name__ == "Metric"
    assert annotations(read) == annotations(comparison())


def test_annotations_are_printed_in_actions(gh, bot_token, tmp_path):
    out = io.StringIO()
    publish("# r\n", comparison(), settings(gh, bot_token, in_actions=True), out=out)
    printed = out.getvalue().splitlines()
    assert printed[0] == f"::add-mask::{bot_token}"
    assert sum(line.startswith(("::warning", "::error")) for line in printed) == 4


def test_client_refuses_without_token():
    with pytest.raises(UsageError):
        GitHubClient("https://api.github.com", "")


def test_env_is_not_mutated(gh, bot_token, tmp_path):
    before = dict(os.environ)
    post(gh, bot_token)
    assert dict(os.environ) == before


def test_a_server_message_echoing_the_token_is_redacted(gh, bot_token, tmp_path):
    gh.inject("GET", r".*/comments", status=400, body={"message": f"Problems parsing {bot_token}"})
    report = tmp_path / "r.md"
    report.write_text("# r\n")
    err = io.StringIO()
    code = publish_exit(report, None, repo=REPO, pr=PR, api_url=gh.url,
                       environ={"GITHUB_TOKEN": bot_token}, out=io.StringIO(), err=err)
    assert code == 3 and "Problems parsing ***" in err.getvalue() and bot_token not in err.getvalue()
    # The client's own errors are clean too, for callers that print them their own way.
    gh.inject("GET", r".*/comments", status=400, body={"message": f"Problems parsing {bot_token}"})
    with GitHubClient(gh.url, bot_token) as client, pytest.raises(InfraError) as info:
        client.list_issue_comments(REPO, PR)
    assert bot_token not in str(info.value)


def test_printer_masks_the_token_as_a_backstop():
    from profopt_ci.publish.comment import _Printer

    buf = io.StringIO()
    _Printer(buf, "ghs_" + "k" * 36)("oops ghs_" + "k" * 36 + " leaked")
    assert buf.getvalue() == "oops *** leaked\n"


def test_artifact_label_is_ignored_the_trusted_job_names_the_comment(gh, bot_token, tmp_path):
    from comparison_fixtures import keep

    from profopt_ci.publish.artifact import write_comment_artifact

    folder = write_comment_artifact(tmp_path / "a", "# gpu\n", 12, head_sha=SHA, label="gpu-h100", comparison=keep())
    art = read_comment_artifact(folder)
    assert (art.pr_number, art.head_sha, art.label, art.report_md) == (12, SHA, "gpu-h100", "# gpu\n")
    out = io.StringIO()
    result = publish_from_artifact(folder, settings(gh, bot_token, pr_number=None), out=out)
    assert result["marker"] == "<!-- profopt:comment -->" and "ignoring the artifact's label" in out.getvalue()
    result = publish_from_artifact(folder, settings(gh, bot_token, pr_number=None, label="cpu"), out=io.StringIO())
    assert result["marker"] == "<!-- profopt:cpu -->"
    (folder / "label").write_text("x -->\n<script>")
    with pytest.raises(UsageError, match="label"):
        read_comment_artifact(folder)


def test_publish_errors_reach_the_clis_one_boundary(tmp_path):
    # run_publish is no boundary of its own: it raises, and `profopt publish` prints `profopt: …`
    with pytest.raises(UsageError, match="cannot read report"):
        run_publish(tmp_path / "missing.md", None, environ={})
    proc = run_cli(["publish", "--report", str(tmp_path / "missing.md"), "--repo", REPO, "--pr", str(PR)],
                   tmp_path, env={"GITHUB_TOKEN": "ghs_" + "k" * 36})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("profopt: cannot read report") and "Traceback" not in proc.stderr


def test_a_token_echoed_in_an_error_is_masked_before_the_boundary(tmp_path):
    token = "ghs_" + "q" * 36
    with pytest.raises(ProfoptError) as info:
        run_publish(tmp_path / "missing.md", None, repo=token, environ={"GITHUB_TOKEN": token})
    assert token not in str(info.value) and "***" in str(info.value) and info.value.exit_code == 2


def test_from_artifact_with_a_read_only_token_says_what_permission_is_missing(gh, tmp_path):
    ro = "ghs_" + secrets.token_hex(18)
    gh.add_token(ro, can_write=False)
    folder = make_artifact(tmp_path / "art", sha=None)
    with pytest.raises(InfraError, match="pull-requests: write"):
        publish_from_artifact(folder, settings(gh, ro, pr_number=None), out=io.StringIO())


# ---- hostile artifacts (issue 14 item 4) -----------------------------------------------------------
HOSTILE = "@octocat @org/security-team <img src=https://evil.example/pixel.png> <script>x</script> " \
          "[login](https://evil.example) <!-- profopt:gpu-a100 -->"


def hostile_comparison() -> dict:
    from comparison_fixtures import keep

    c = keep()
    c["benchmarks"][0]["name"] = HOSTILE
    c["notes"] = [HOSTILE, "::set-output name=x::y", "\n::warning::pwned"]
    c["summary"] = "::set-output name=decision::keep " + HOSTILE
    return c


def test_from_artifact_renders_the_comparison_with_escaping_not_the_forks_markdown(gh, bot_token, tmp_path):
    folder = make_artifact(tmp_path / "art", report=f"{HOSTILE}\n::set-output name=a::b\n", doc=hostile_comparison())
    (folder / "label").write_text("other-job")
    assert publish_exit(None, from_artifact=folder, repo=REPO, api_url=gh.url, environ={"GITHUB_TOKEN": bot_token},
                       out=io.StringIO(), err=io.StringIO()) == 0
    (comment,) = gh.comments(REPO, PR)
    body = comment["body"]
    assert body.startswith("<!-- profopt:comment -->\n")  # the trusted default label, not `other-job`
    kinds = set(re.findall(r"<!-- profopt:(\S+)", body))
    assert kinds <= {"comment", "section", "end", "lang"}, kinds  # no other job's marker smuggled in
    assert "@octocat" not in body and "@org/security-team" not in body  # mentions neutralized
    for raw in ("<img", "<script", "<!-- profopt:gpu-a100"):
        assert raw not in body, raw
    assert not re.search(r"(?<!\\)\]\(https://evil", body)  # `\](` is text, `](` would be a link
    assert not any(line.startswith("::") for line in body.splitlines())


@pytest.mark.parametrize("how", ["hardlink", "directory", "fifo", "bad-json", "bad-schema", "nan", "missing"])
def test_from_artifact_refuses_hostile_files(gh, bot_token, tmp_path, how):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"schema": "profopt/comparison@1", "decision": "keep", "benchmarks": [],
                                  "notes": ["TOP SECRET CONTENT"]}))
    folder = make_artifact(tmp_path / "art")
    target = folder / "comparison.json"
    target.unlink()
    if how == "hardlink":
        os.link(secret, target)
    elif how == "directory":
        target.mkdir()
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "bad-json":
        target.write_text("{not json")
    elif how == "bad-schema":
        target.write_text(json.dumps({"schema": "profopt/comparison@1", "decision": "keep", "benchmarks": [],
                                      "base": "x"}))
    elif how == "nan":
        target.write_text('{"schema": "profopt/comparison@1", "decision": "keep", "benchmarks": [], "rounds": NaN}')
    err = io.StringIO()
    code = publish_exit(None, from_artifact=folder, repo=REPO, api_url=gh.url, environ={"GITHUB_TOKEN": bot_token},
                       out=io.StringIO(), err=err)
    assert code == 2, err.getvalue()
    assert "internal error" not in err.getvalue() and "TOP SECRET" not in err.getvalue()
    assert gh.requests_for("POST", r".*/comments") == []
