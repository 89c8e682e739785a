"""A child process of profopt's, its outcome and its answer: run one in its own process group with its
own rusage, kill it and everything it started, keep the tail of what it said, read its JSON answer.

In: argv, the working directory, the environment (an allowlist: processes.child_env), a timeout,
optionally the CPUs it runs on. Out: a `ChildResult`, or `BenchmarkFailed` when it cannot start.
The zygote (zygote.py) and the worker runs (processes.py) both speak this.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profopt_ci.measure.cpus import child_preexec
from profopt_ci.measure.proctree import kill_tagged, tag_env

TAIL_LINES = 25
TAIL_CHARS = 3000


@dataclass
class ChildResult:
    returncode: int
    wall_ns: int
    cpu_s: float
    maxrss_kb: int
    stdout: str
    stderr: str
    timed_out: bool
    missing_answer: bool = False  # exited 0, but the worker's answer file was absent or corrupt


class BenchmarkFailed(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status  # failed | timeout
        self.message = message


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    out = "\n".join(text.rstrip().splitlines()[-lines:])
    return out[-chars:]


def run_child(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float, cpus: list[int] | None = None
) -> ChildResult:
    """Run one child in its own process group (on `cpus` when given); its own rusage via wait4,
    killed whole on timeout."""
    env, tag = tag_env(env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter_ns()
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=err,
                start_new_session=True, preexec_fn=child_preexec(cpus),
            )
        except OSError as exc:
            raise BenchmarkFailed("failed", f"cannot start {argv[0]}: {exc}") from None
        box: dict[str, Any] = {}

        def reap() -> None:
            # Ctrl-C and SIGTERM must reach the main thread: delivered here, they would only restart
            # wait4, and the main thread would sleep on in join() until the timeout.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            box["wait"] = os.wait4(proc.pid, 0)
            box["end"] = time.perf_counter_ns()

        reaper = threading.Thread(target=reap, daemon=True)
        reaper.start()
        try:
            reaper.join(timeout_s)
        except BaseException:
            kill_all(proc.pid, tag)
            reaper.join()
            proc.returncode = -9
            raise
        timed_out = reaper.is_alive()
        if timed_out:
            kill_all(proc.pid, tag)
            reaper.join()
        _, status, usage = box["wait"]
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildResult(
            returncode=proc.returncode,
            wall_ns=box["end"] - start,
            cpu_s=usage.ru_utime + usage.ru_stime,
            maxrss_kb=usage.ru_maxrss,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            timed_out=timed_out,
        )


def kill_all(pid: int, tag: str) -> None:
    """The child's group, then every descendant that left it (setsid, double fork) by its tag."""
    kill_groups([(pid, tag)])


def kill_groups(children: list[tuple[int, str]]) -> None:
    """`kill_all` of each (pid, tag), with one /proc scan for all of them."""
    for pid, _ in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill_tagged([tag for _, tag in children], [pid for pid, _ in children])


# What the PR's code inherits from profopt's own environment: only what a Python process (and a
# GPU or BLAS library) needs to run. Everything else — GITHUB_TOKEN, GH_TOKEN, ACTIONS_RUNTIME_TOKEN,
# cloud keys — stays out; the spec's and the benchmark's `env` add what a benchmark needs on purpose.
def answer_of(res: ChildResult, out_path: Path) -> dict | None:
    """A finished worker's JSON answer, or None when it failed: an exit 0 without one (sys.exit(0)
    or os._exit(0) in the step) marks `res` missing_answer, with its cause on stderr."""
    if res.timed_out or res.returncode != 0:
        return None
    data, why = read_answer(out_path)
    if data is None:
        res.stderr = f"{res.stderr.rstrip()}\nthe worker exited 0 but {why}".lstrip()
        res.missing_answer = True
    return data


def read_answer(path: Path) -> tuple[dict | None, str]:
    """The worker's JSON answer, or (None, why not): missing, unreadable, corrupt or not an object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, "wrote no answer (did the step call sys.exit or os._exit?)"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"its answer cannot be read ({exc})"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, f"its answer is not valid JSON ({str(exc)[:200]})"
    if not isinstance(data, dict):
        return None, "its answer is not a JSON object"
    return data, ""
