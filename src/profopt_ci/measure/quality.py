"""The quality pass: both sides run the same number of steps from the same seeds, values recorded per step.

In: a benchmark with constraints, a `Side`, its environment. Out: a quality trace
`{"steps": n, "values": {name: [v1, …, vn]}}` (analyze/quality.py compares two of them step by
step), or `{"status": "failed", "error": …}`.

A callable's pass runs in the worker after the timed rounds, before its profile (worker.py
`profile_job`: a fresh factory after `harness.timing.seed_all`, then `harness.timing.trace`). A command is one
more run of the whole process: its `PROFOPT_METRIC name=value` lines in the order printed are the
trace (the k-th line of a name is its step k). Both run with PYTHONHASHSEED=0 unless the spec sets
it, so set and dict order cannot differ between the sides. The timed rounds never feed a constraint.
"""
from __future__ import annotations

from pathlib import Path

from profopt_ci.measure.processes import Side, command_argv, failure_of, run_command
from profopt_ci.specfile.model import Benchmark

SEED = 0  # random, numpy and torch are seeded with it before the factory runs


def wanted(bench: Benchmark) -> int:
    """The steps of the benchmark's quality pass; 0 when it has no constraint to check."""
    return bench.settings.quality_steps if bench.constraints else 0


def quality_env(env: dict[str, str]) -> dict[str, str]:
    return {"PYTHONHASHSEED": "0", **env}


def parse_trace(stdout: str) -> dict:
    """A command's `PROFOPT_METRIC name=value` lines as a trace: each name's values in the order printed."""
    values: dict[str, list] = {}
    for line in stdout.splitlines():
        if not line.startswith("PROFOPT_METRIC "):
            continue
        name, sep, value = line[len("PROFOPT_METRIC "):].strip().partition("=")
        if not sep or not name.strip():
            continue
        try:
            parsed: object = float(value)
            if parsed != parsed or parsed in (float("inf"), float("-inf")):
                parsed = value.strip().lower()
        except ValueError:
            parsed = value.strip()
        values.setdefault(name.strip(), []).append(parsed)
    return {"steps": max((len(v) for v in values.values()), default=0), "values": values}


def command_trace(bench: Benchmark, side: Side, env: dict[str, str], workdir: Path,
                  cpus: list[int] | None = None) -> dict:
    """One untimed run of a command benchmark (on `cpus` when given); its printed values as the trace."""
    res = run_command(command_argv(bench.command), cwd=side.root, env=quality_env(env),
                      timeout_s=bench.settings.timeout_s, workdir=workdir, cpus=cpus)
    if res.timed_out or res.returncode != 0:
        exc = failure_of(res, bench.settings.timeout_s, f"the quality run of {bench.name} on {side.name}")
        return {"status": exc.status, "error": exc.message}
    return parse_trace(res.stdout)


def failed(status: str, message: str) -> dict:
    return {"status": status, "error": message}
