"""A cancelled compare (SIGTERM, as a CI cancel sends) removes its worktrees and keeps what it measured."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

from conftest import cli_env, git, make_repo

from profopt_ci.words.i18n import say

WORK = """\
import time
def make_step():
    def step():
        time.sleep(0.002)
    return step
"""
SPEC = """\
version: 1
defaults: {warmup: 0, min_time_ms: 5, values: 2, value_ms: 1, round_ms: 100, rounds: 400, max_rounds: 400}
benchmarks:
  - name: slow
    callable: bench.work:make_step
"""


def test_sigterm_cleans_worktrees_and_writes_partial_comparison(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": WORK, "profopt.yml": SPEC}, {"x.txt": "1"}])
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1", "--measure", "all"], cwd=root,
                            env=cli_env({"PROFOPT_PROGRESS": "rounds"}), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not any("round 3/" in ln for ln in lines):
            time.sleep(0.2)
        assert git(root, "worktree", "list").count("\n") == 2  # main + base + head while measuring
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:  # never leave a compare running past the test
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert git(root, "worktree", "list").count("\n") == 0  # only the main checkout remains
    partial = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert any("interrupted" in say("en", n) for n in partial["notes"])
    assert len(partial["benchmarks"][0]["samples"]["base"]) >= 1
