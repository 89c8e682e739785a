"""A killed parent, a double Ctrl-C, a dirty tree, a spec the PR adds (issue 14 items 8 and 9)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import cli_env, git, make_repo, run_cli

from profopt_ci.words.i18n import say

STEP = """\
import os, time
def make_step(flag="", pidfile=""):
    def step():
        if flag and os.path.exists(flag):
            open(pidfile, "w").write(str(os.getpid()))
            time.sleep(300)
        sum(range(20000))
    return step
"""


def spec(flag: Path | str = "", pidfile: Path | str = "", rounds: int = 3, round_ms: int = 100) -> str:
    return (f"version: 1\ndefaults: {{warmup: 0, min_time_ms: 2, values: 2, round_ms: {round_ms}, rounds: {rounds}, max_rounds: {rounds}, "
            f"profile: 'off', timeout_s: 600}}\nbenchmarks:\n  - name: s\n    callable: bench.w:make_step\n"
            f"    params: {{flag: '{flag}', pidfile: '{pidfile}'}}\n")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(cond, timeout: float = 120) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def test_kill_9_of_compare_kills_its_worker_and_the_next_compare_prunes_the_worktrees(tmp_path):
    flag, pidfile = tmp_path / "hang", tmp_path / "worker.pid"
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": spec(flag, pidfile)}, {"x": "1"}])
    flag.write_text("1")
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1", "--measure", "all"], cwd=root,
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert _wait_for(pidfile.exists), "the worker never started"
    worker = int(pidfile.read_text())
    proc.kill()  # kill -9: no cleanup of ours runs
    proc.wait()
    assert _wait_for(lambda: not _alive(worker), 10), "the hanging worker outlived kill -9 of compare"
    assert len([ln for ln in git(root, "worktree", "list").splitlines()]) == 3  # leaked: main + base + head
    flag.unlink()
    again = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none"], root)
    assert again.returncode == 0, again.stderr
    assert "left by a killed compare" in again.stderr
    assert git(root, "worktree", "list").count("\n") == 0  # only the main checkout


def _ctrl_c_default() -> None:
    """Ctrl-C as a terminal delivers it: a run started as `cmd &` without job control inherits it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_second_sigint_right_after_the_first_keeps_the_partial_file(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": spec(rounds=400, round_ms=400)}, {"x": "1"}])
    # the default round length: the two signals land where they did when the lost-Ctrl-C hang was found
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1", "--measure", "all"], cwd=root,
                            env=cli_env({"PROFOPT_PROGRESS": "rounds"}), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_default)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        assert _wait_for(lambda: any("round 3/" in ln for ln in lines))
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:  # never leave a compare running past the test
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    assert proc.returncode == 130, "".join(lines)
    partial = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert any("interrupted" in say("en", n) for n in partial["notes"])
    assert len(partial["benchmarks"][0]["samples"]["base"]) >= 1
    assert git(root, "worktree", "list").count("\n") == 0


def test_a_dirty_tree_is_said_and_recorded(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": spec()}, {"x": "1"}])
    (root / "bench/w.py").write_text(STEP + "\n# an uncommitted edit\n")
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none"], root)
    assert proc.returncode == 0, proc.stderr
    assert "uncommitted changes" in proc.stderr and "NOT measured" in proc.stderr
    assert json.loads((root / ".profopt" / "comparison.json").read_text())["dirty"] is True
    git(root, "checkout", "--", "bench/w.py")
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none"], root)
    assert "uncommitted" not in proc.stderr
    assert json.loads((root / ".profopt" / "comparison.json").read_text())["dirty"] is False


def test_a_spec_added_by_the_pr_is_measured_on_head_only(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"README": "no spec yet\n"}, {"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": spec()}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--report", "report.md"], root)
    assert proc.returncode == 0, proc.stderr
    assert "new in this PR: measured on head only: s" in proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert c["benchmarks"] == []
    (entry,) = c["new_in_pr"]
    assert entry["name"] == "s" and entry["status"] == "ok" and entry["rounds"] == 3
    assert entry["head"]["step_time_ms"] > 0
    assert any("new in this PR" in say("en", n) for n in c["notes"])
    assert os.path.exists(root / "report.md")
