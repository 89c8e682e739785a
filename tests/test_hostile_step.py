"""Hostile steps (issue 14 items 1, 2, 8): PR code that hunts for tokens, exits early, forks away."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, make_repo, run_cli, write_files

from profopt_ci.measure.cpus import child_preexec
from profopt_ci.measure.processes import Side, child_env, run_child
from profopt_ci.specfile.load import parse_spec

SECRETS = {"GITHUB_TOKEN": "ghs_secret1", "GH_TOKEN": "ghs_secret2", "ACTIONS_RUNTIME_TOKEN": "secret3",
           "PROFOPT_GITHUB_TOKEN": "secret4", "AWS_SECRET_ACCESS_KEY": "secret5", "SOME_RANDOM_VAR": "secret6"}

DUMP = """\
import json, os
def make_step(out=""):
    def step():
        with open(out, "w") as fh:
            json.dump(dict(os.environ), fh)
    return step
"""


def spec_for(body: str) -> str:
    return "version: 1\nenv: {OMP_NUM_THREADS: \"1\", MY_SETTING: chosen}\n" \
           "defaults: {warmup: 0, min_time_ms: 1, values: 1, round_ms: 100, rounds: 2, max_rounds: 2, timeout_s: 30, profile: 'off'}\n" \
           f"benchmarks:\n{body}"


def test_worker_and_command_environments_hold_no_token(tmp_path):
    dump_cmd = json.dumps([sys.executable, "-c",
                           f"import json,os; json.dump(dict(os.environ), open({str(tmp_path / 'cmd.json')!r}, 'w'))"])
    write_files(tmp_path, {"bench/__init__.py": "", "bench/dump.py": DUMP, "profopt.yml": spec_for(
        f"  - name: dump\n    callable: bench.dump:make_step\n    params: {{out: {tmp_path}/worker.json}}\n"
        f"  - name: cmd\n    command: {dump_cmd}\n")})
    proc = run_cli(["run"], tmp_path, env={**SECRETS, "CUDA_VISIBLE_DEVICES": "3", "LC_ALL": "C.UTF-8"})
    assert proc.returncode == 0, proc.stderr
    for name in ("worker.json", "cmd.json"):
        seen = json.loads((tmp_path / name).read_text())
        leaked = {k for k in SECRETS if k in seen} | {k for k, v in seen.items() if v in SECRETS.values()}
        assert not leaked, f"{name} saw {leaked}"
        assert seen["MY_SETTING"] == "chosen" and seen["OMP_NUM_THREADS"] == "1"
        assert seen["CUDA_VISIBLE_DEVICES"] == "3" and seen["LC_ALL"] == "C.UTF-8"
        assert "PATH" in seen and "HOME" in seen and str(tmp_path) in seen["PYTHONPATH"]


def test_child_env_is_an_allowlist_but_the_spec_may_set_anything(tmp_path, monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    spec = parse_spec(spec_for("  - name: a\n    callable: m:f\n    env: {API_KEY_FOR_BENCH: given}\n"), "p.yml")
    env = child_env(spec, spec.benchmarks[0], Side(name="tree", root=tmp_path, env={"VIRTUAL_ENV": "/v"}))
    assert not set(SECRETS) & set(env)
    assert env["API_KEY_FOR_BENCH"] == "given" and env["VIRTUAL_ENV"] == "/v"


EARLY_EXIT = """\
import os, sys
def exit0():
    def step():
        sys.exit(0)
    return step
def hard_exit0():
    def step():
        os._exit(0)
    return step
def ok():
    def step():
        return sum(range(1000))
    return step
"""


@pytest.mark.parametrize("factory", ["exit0", "hard_exit0"])
def test_run_records_a_worker_that_exits_0_without_an_answer_as_failed(tmp_path, factory):
    write_files(tmp_path, {"bench/__init__.py": "", "bench/x.py": EARLY_EXIT, "profopt.yml": spec_for(
        f"  - name: early\n    callable: bench.x:{factory}\n  - name: fine\n    callable: bench.x:ok\n")})
    proc = run_cli(["run"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "internal error" not in proc.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    early = data["benchmarks"]["early"]
    assert early["status"] == "failed" and "exited 0" in early["error"] and "no answer" in early["error"]
    assert data["benchmarks"]["fine"]["status"] == "ok" and len(data["benchmarks"]["fine"]["samples"]) == 2


PROFILE_EXIT = """\
import os, sys
def make_step():
    def step():
        if "cProfile" in sys.modules:  # the profiled run has imported it; the timed workers never do
            os._exit(0)
        sum(range(20000))
    return step
"""


def test_compare_keeps_samples_when_the_step_exits_during_profiling_or_measuring(tmp_path):
    spec = spec_for("  - name: p\n    callable: bench.x:make_step\n  - name: q\n    callable: bench.early:ok\n")
    spec = spec.replace("profile: 'off'", "profile: cprofile")
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/x.py": PROFILE_EXIT, "bench/early.py": EARLY_EXIT,
                      "profopt.yml": spec},
                     {"bench/early.py": EARLY_EXIT.replace("return sum(range(1000))", "sys.exit(0)")}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--measure", "all"], root)
    assert proc.returncode == 3, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    p = next(b for b in c["benchmarks"] if b["name"] == "p")
    assert p["decision"] != "failed" and len(p["samples"]["head"]) == 2
    assert p["profile"]["head"]["kind"] == "none" and "exited 0" in p["profile"]["head"]["reason"]
    q = next(b for b in c["benchmarks"] if b["name"] == "q")
    assert q["decision"] == "failed" and q["error"]["side"] == "head" and "exited 0" in q["error"]["message"]


SETSID = """\
import os, subprocess, sys, time
def make_step(pidfile=""):
    def step():
        child = subprocess.Popen([sys.executable, "-c",
            "import os,time; os.setsid(); open(%r,'w').write(str(os.getpid())); time.sleep(300)" % pidfile])
        child.wait() if False else time.sleep(300)
    return step
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_grandchild_that_calls_setsid_dies_on_timeout(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    write_files(tmp_path, {"bench/__init__.py": "", "bench/s.py": SETSID, "profopt.yml": spec_for(
        f"  - name: s\n    callable: bench.s:make_step\n    params: {{pidfile: {pidfile}}}\n    timeout_s: 3\n")})
    proc = run_cli(["run"], tmp_path, timeout=120)
    assert proc.returncode == 3, proc.stderr
    pid = int(pidfile.read_text())
    deadline = time.time() + 5
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the setsid grandchild survived the timeout"


@pytest.mark.slow
def test_a_lockstep_workers_setsid_grandchild_dies_on_timeout(tmp_path):
    # compare's default pairing drives live workers itself (not through run_child): same guarantee.
    # Every grandchild appends its pid: after the lockstep round fails, head is measured alone too.
    pidfile = tmp_path / "grandchild.pid"
    root = tmp_path / "repo"
    appending = SETSID.replace("open(%r,'w')", "open(%r,'a')").replace("str(os.getpid())", "str(os.getpid())+chr(10)")
    make_repo(root, [{"bench/__init__.py": "", "bench/s.py": appending, "profopt.yml": spec_for(
        f"  - name: s\n    callable: bench.s:make_step\n    params: {{pidfile: {pidfile}}}\n    timeout_s: 3\n")},
        {"x": "1"}])
    proc = run_cli(["compare", "--base", "HEAD~1"], root, timeout=120)
    assert proc.returncode == 3, proc.stderr
    pids = [int(line) for line in pidfile.read_text().split()]
    assert len(pids) >= 2, pids  # the lockstep round's (at least base's) and head's alone
    deadline = time.time() + 5
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "a setsid grandchild of a lockstep worker survived the timeout"


def test_run_child_kills_setsid_descendants_in_process(tmp_path):
    pidfile = tmp_path / "gc.pid"
    code = (f"import os,subprocess,sys,time; subprocess.Popen([sys.executable,'-c',"
            f"\"import os,time; os.setsid(); open({str(pidfile)!r},'w').write(str(os.getpid())); time.sleep(300)\"]);"
            f" time.sleep(300)")
    res = run_child([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ), timeout_s=2)
    assert res.timed_out
    pid = int(pidfile.read_text())
    time.sleep(0.3)
    assert not _alive(pid)


def test_workers_die_with_their_parent(tmp_path):
    # A parent (standing in for `profopt compare`) starts a hanging child with child_preexec, then is kill -9'd.
    pidfile = tmp_path / "child.pid"
    parent_code = (
        "import subprocess, sys, time\n"
        "from profopt_ci.measure.cpus import child_preexec\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], preexec_fn=child_preexec(None),"
        " start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, "-c", parent_code], env=cli_env())
    deadline = time.time() + 30
    while not pidfile.exists() and time.time() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert _alive(child)
    parent.kill()
    parent.wait()
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the worker outlived its killed parent"
    assert callable(child_preexec(None))
