"""Helpers for the action tests: a throwaway PR repository, the environment the action gives
entrypoint.py, and reading what it wrote (step outputs, comments)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env, git, make_repo

REPO = "octo/bench"
PR = 7
ENTRYPOINT = ROOT / "entrypoint.py"

# A pure-Python step, `factor` passes over the data: head (factor 1) does half of base's (2) work.
# It records where it ran: the hostname (the container's is profopt-<phase>), the interfaces it
# sees (1 = only loopback: no network), its uid and any TOKEN-like variable names it can see.
BENCH = '''\
import os
import socket

from profopt_ci import record

ALLOCATE_MB = {allocate_mb}
SLEEP_S = {sleep_s}
FACTOR = {factor}


def make_step(n):
    hog = bytearray(ALLOCATE_MB * 2**20) if ALLOCATE_MB else None
    data = list(range(n))
    seen = ",".join(sorted(k for k in os.environ if "TOKEN" in k or "SECRET" in k))

    def step():
        if SLEEP_S:
            import time
            time.sleep(SLEEP_S)
        total = 0
        for _ in range(FACTOR):
            for x in data:
                total += x
        record(host=socket.gethostname(), nics=len(socket.if_nameindex()), uid=os.getuid(),
               secrets_seen=seen, hog=len(hog or b""))
        return total

    return step
'''

SPEC = '''\
version: 1
hardware_label: cpu-e2e
setup: python3 -c "print('setup ran')"
defaults: {{warmup: 1, min_time_ms: 20, values: 3, value_ms: 1, round_ms: 150, rounds: {rounds}, max_rounds: {rounds}, threshold: 5%, profile: "off", timeout_s: 120}}
benchmarks:
  - name: sum
    callable: bench:make_step
    params: {{n: 20000}}
'''


def bench_files(factor: int, *, rounds: int = 10, allocate_mb: int = 0, sleep_s: float = 0) -> dict[str, str]:
    return {
        "profopt.yml": SPEC.format(rounds=rounds),
        "bench.py": BENCH.format(allocate_mb=allocate_mb, sleep_s=sleep_s, factor=factor),
    }


def make_pr_repo(root: Path, base: dict[str, str], head: dict[str, str]) -> tuple[str, str]:
    """main holds the base commit; branch `feature` (checked out) adds the head commit."""
    (base_sha,) = make_repo(root, [base])
    git(root, "checkout", "-q", "-b", "feature")
    from conftest import write_files

    write_files(root, head)
    git(root, "commit", "-qam", "head")
    return base_sha, git(root, "rev-parse", "HEAD")


def pr_event(path: Path, base_sha: str, head_sha: str) -> Path:
    path.write_text(json.dumps({
        "action": "synchronize", "number": PR,
        "pull_request": {"number": PR, "base": {"ref": "main", "sha": base_sha},
                         "head": {"ref": "feature", "sha": head_sha, "repo": {"full_name": REPO}}},
        "repository": {"full_name": REPO},
    }))
    return path


def action_env(tmp: Path, workspace: Path, *, token: str | None = None, api_url: str | None = None,
               inputs: dict[str, str] | None = None, event: Path | None = None,
               extra: dict[str, str] | None = None) -> dict[str, str]:
    """What action.yml gives entrypoint.py: GITHUB_* from the runner, INPUT_* through `env:`."""
    env = {
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "4242",
        "GITHUB_OUTPUT": str(tmp / "github_output"), "GITHUB_STEP_SUMMARY": str(tmp / "step_summary.md"),
        "RUNNER_TEMP": str(tmp),
    }
    if event is not None:
        env["GITHUB_EVENT_PATH"] = str(event)
    if token is not None:
        env["GITHUB_TOKEN"] = token
    if api_url is not None:
        env["GITHUB_API_URL"] = api_url
    for name, value in (inputs or {}).items():
        env["INPUT_" + name.upper().replace("-", "_")] = value
    env.update(extra or {})
    return env


def run_entrypoint(env: dict[str, str], *, timeout: float = 300, merged: bool = False) -> subprocess.CompletedProcess:
    """entrypoint.py as action.yml runs it: no arguments, everything through the environment.
    `merged`: stderr into stdout, in order, as the runner's log has them."""
    full = cli_env(env)
    for name in list(full):  # nothing from the developer's own shell leaks in
        if name.startswith(("INPUT_", "GITHUB_")) and name not in env:
            del full[name]
    return subprocess.run([sys.executable, str(ENTRYPOINT)], cwd=env["GITHUB_WORKSPACE"], env=full,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                          text=True, timeout=timeout)


INJECTED = "::error::injected-by-the-pr"


def injecting_setup(files: dict[str, str]) -> dict[str, str]:
    """The spec's setup prints a workflow command and fails: profopt echoes its output tail."""
    out = dict(files)
    out["profopt.yml"] = files["profopt.yml"].replace(
        "setup: python3 -c \"print('setup ran')\"",
        f"setup: python3 -c \"print('{INJECTED}'); raise SystemExit(1)\"")
    assert out["profopt.yml"] != files["profopt.yml"]
    return out


def workflow_commands(log: str) -> list[str]:
    """Lines the Actions runner would read as workflow commands (it trims leading spaces first)."""
    return [ln.lstrip() for ln in log.splitlines() if ln.lstrip().startswith("::")]


def read_outputs(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it (name<<DELIM blocks and name=value lines; last wins)."""
    values: dict[str, str] = {}
    if not path.exists():
        return values
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            values[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            if "=" in line:
                name, value = line.split("=", 1)
                values[name] = value
            i += 1
    return values
