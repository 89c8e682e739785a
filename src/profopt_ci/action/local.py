"""`runner: local`: the same run without Docker, as a subprocess on the job's runner.

In: the settings and the job's environment. Out: an `Outcome`: compare's (or baseline refresh's)
own exit code, or 3 and a `Cause` (out of time, killed or crashed). The subprocess gets the job's
environment less every credential (the event included: compare reads the accept label from it; the
cache dir the workspace's .profopt/cache unless the job sets PROFOPT_CACHE_DIR), the cpuset as its CPU affinity, and no workflow commands: the
runner reads none from the log while it runs.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping

from profopt_ci.action.inputs import ActionSettings
from profopt_ci.action.outcome import Cause, Outcome, say
from profopt_ci.action.runs import STOP_GRACE_S
from profopt_ci.action.workspace import baseline_argv, cache_dir, compare_argv
from profopt_ci.errors import EXIT_INFRA

# Variables the local runner strips from the benchmark's environment (it otherwise inherits the job's).
LOCAL_STRIP = ("GITHUB_TOKEN", "GH_TOKEN", "INPUT_GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_RUNTIME_URL",
               "ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL")


def local_env(environ: Mapping[str, str], s: ActionSettings) -> dict[str, str]:
    """The job's environment without credentials (by name, and any variable holding the token)."""
    token = environ.get("GITHUB_TOKEN") or environ.get("INPUT_GITHUB_TOKEN")
    env = {k: v for k, v in environ.items() if k not in LOCAL_STRIP and not (token and v == token)}
    if s.gpus == "none":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif s.gpus != "all":
        env["CUDA_VISIBLE_DEVICES"] = s.gpus
    if s.hardware_label:
        env["PROFOPT_HARDWARE_LABEL"] = s.hardware_label
    # the cache action.yml's actions/cache keeps between jobs, unless the job names its own
    env.setdefault("PROFOPT_CACHE_DIR", str(cache_dir(s)))
    return env


def _cpus(cpuset: str) -> set[int]:
    cpus: set[int] = set()
    for part in cpuset.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


@contextlib.contextmanager
def commands_stopped(environ: Mapping[str, str]) -> Iterator[None]:
    """Between these lines the Actions runner reads no workflow commands from the log: a PR's code
    printing `::set-output …` or `::add-mask …` into the output is only text. (Container output
    needs no guard: every line of it is printed behind a `  [phase] ` prefix.)"""
    if environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    guard = secrets.token_hex(16)
    print(f"::stop-commands::{guard}", flush=True)
    try:
        yield
    finally:
        print(f"::{guard}::", flush=True)


def _wait_local(proc: subprocess.Popen, timeout_s: float, log: Callable[[str], None]) -> tuple[int, bool]:
    """(exit code, timed out?). At the limit: SIGINT to the group (compare writes what it measured),
    then SIGKILL after a grace period."""
    try:
        return proc.wait(timeout=timeout_s), False
    except subprocess.TimeoutExpired:
        pass
    log(f"profopt: the run went past its {timeout_s:.0f} s limit — interrupting it")
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=STOP_GRACE_S), True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(), True


def run_local(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> Outcome:
    """The same flow without Docker: `profopt compare` as a subprocess, without the token."""
    if s.mode == "baseline":
        argv = baseline_argv(s, s.store)
    else:
        argv = compare_argv(s, "all", str(s.workspace))
    cmd = [sys.executable, "-m", "profopt_ci.cli.command_line", *argv]
    log(f"profopt: [local] {shlex.join(cmd)}")
    cpus = _cpus(s.cpuset) if s.cpuset else None

    def preexec() -> None:
        # The limit's SIGINT must reach compare, also when the runner started us with SIGINT ignored
        # (a background job without job control): an ignored signal is inherited across exec.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if cpus:
            os.sched_setaffinity(0, cpus)

    with commands_stopped(environ):
        proc = subprocess.Popen(cmd, cwd=s.workspace, env=local_env(environ, s), preexec_fn=preexec,
                                start_new_session=True)
        code, timed_out = _wait_local(proc, s.timeout_s, log)
    if timed_out:
        return Outcome(exit_code=EXIT_INFRA, cause=Cause("action.cause.local_timeout",
                                                         {"minutes": f"{s.timeout_s / 60:g}"}))
    if code < 0 or code > 3:
        return Outcome(exit_code=EXIT_INFRA, cause=Cause("action.cause.local_status", {"code": code}))
    return Outcome(exit_code=code)
