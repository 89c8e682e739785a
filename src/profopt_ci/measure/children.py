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
    return Child(argv, cwd=cwd, env=env, cpus=cpus).wait(timeout_s)


class Child:
    """A started child in its own process group (on `cpus` when given), reaped by a thread of its own
    with wait4, so its wall time, CPU time and peak RSS are its own; `wait` ends it (killed whole
    on timeout) and gives its `ChildResult`. BenchmarkFailed when it cannot start."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], cpus: list[int] | None = None) -> None:
        env, self.tag = tag_env(env)
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self._start = time.perf_counter_ns()
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self._out,
                                         stderr=self._err, start_new_session=True, preexec_fn=child_preexec(cpus))
        except OSError as exc:
            self._close()
            raise BenchmarkFailed("failed", f"cannot start {argv[0]}: {exc}") from None
        self.pid = self.proc.pid
        self._box: dict[str, Any] = {}
        self._reaper = threading.Thread(target=self._reap, daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        # Ctrl-C and SIGTERM must reach the main thread: delivered here, they would only restart
        # wait4, and the main thread would sleep on in join() until the timeout.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        self._box["wait"] = os.wait4(self.pid, 0)
        self._box["end"] = time.perf_counter_ns()

    def wait(self, timeout_s: float) -> ChildResult:
        try:
            self._reaper.join(timeout_s)
        except BaseException:
            self.kill()
            self._reaper.join()
            self.proc.returncode = -9
            self._close()
            raise
        timed_out = self._reaper.is_alive()
        if timed_out:
            self.kill()
            self._reaper.join()
        _, status, usage = self._box["wait"]
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self._out.seek(0)
        self._err.seek(0)
        res = ChildResult(returncode=self.proc.returncode, wall_ns=self._box["end"] - self._start,
                          cpu_s=usage.ru_utime + usage.ru_stime, maxrss_kb=usage.ru_maxrss,
                          stdout=self._out.read().decode("utf-8", "replace"),
                          stderr=self._err.read().decode("utf-8", "replace"), timed_out=timed_out)
        self._close()
        return res

    def kill(self) -> None:
        """Its group and every descendant that left it; the reaper thread collects its status."""
        if "wait" not in self._box:
            kill_all(self.pid, self.tag)

    def close(self) -> None:
        """Killed, reaped and its files closed (a child never waited for)."""
        if not self._out.closed:
            self.kill()
            self._reaper.join()
            self.proc.returncode = os.waitstatus_to_exitcode(self._box["wait"][1])
            self._close()

    def _close(self) -> None:
        self._out.close()
        self._err.close()


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
