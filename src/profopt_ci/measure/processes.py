"""Processes: setup, one worker per sample (fresh, or forked from a zygote), commands measured from outside, timeouts.

In: a resolved spec, a `Side` (a checkout and the interpreter that runs it). Out: sample dicts
(docs/data-model.md) or a `BenchmarkFailed` carrying the status and the stderr tail. Nothing here
decides anything; the `profopt run` loop over rounds that writes results@1 is `pipeline.run_tree.run_tree`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profopt_ci.errors import InfraError
from profopt_ci.figures import per_step
from profopt_ci.filenames import file_part
from profopt_ci.measure import gpu
from profopt_ci.measure.children import (  # noqa: F401 — the child basics, where the stages look for them
    BenchmarkFailed,
    ChildResult,
    read_answer,
    run_child,
    tail,
)
from profopt_ci.measure.forked import ForkFrom
from profopt_ci.measure.job_worker import Launch, run_job
from profopt_ci.measure.zygote import Zygote
from profopt_ci.specfile.load import Benchmark, Spec

SETUP_TIMEOUT_S = 1800.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


@dataclass
class Side:
    """One checkout and how to run it: `name` is base, head, or tree (profopt run)."""

    name: str
    root: Path
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    ref: str | None = None
    commit: str | None = None
    spec: Spec | None = None  # the side's own version of the spec, when it has one
    spec_note: str | None = None  # why it has none (missing, invalid): the plan records it
    spec_missing: bool = False  # no spec file at all in its checkout: the PR adds it (new_in_pr)

    def bench(self, fallback: Benchmark) -> Benchmark:
        """This side's definition of a benchmark (its own params), else the given one."""
        if self.spec is not None:
            for b in self.spec.benchmarks:
                if b.name == fallback.name:
                    return b
        return fallback


PASS_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "LANG", "LANGUAGE",
    "TMPDIR", "TEMP", "TMP", "LD_LIBRARY_PATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
    "PYTHONIOENCODING", "PYTHONUTF8", "VIRTUAL_ENV", "CONDA_PREFIX", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS", "PROFOPT_IN_CONTAINER",
    "PROFOPT_HARDWARE_LABEL",
})
PASS_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "HIP_", "ROCR_", "ROCM_", "OMP_", "MKL_", "KMP_", "OPENBLAS_",
                 "GOMP_", "NCCL_", "XLA_", "TORCH_", "PYTORCH_")
# Names that look like a credential: never passed to PR code, whatever an allowlist says (the action's too).
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|_KEY$|^KEY$|AUTH", re.I)


def passed_env(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    """The allowlisted part of an environment (PASS_ENV, PASS_PREFIXES), never a secret-like name."""
    return {k: v for k, v in environ.items()
            if (k in PASS_ENV or k.startswith(PASS_PREFIXES)) and not SECRET_NAME.search(k)}


WORKER_DIR = "profopt-worker"  # in a side's own venv: a directory holding only profopt_ci


def own_environment(side: Side) -> bool:
    """Whether the side runs in a venv of its own (its setup's, checkouts.make_venv), not profopt's."""
    return bool(side.env.get("VIRTUAL_ENV"))


def child_env(spec: Spec, bench: Benchmark | None, side: Side) -> dict[str, str]:
    """The environment of every setup, worker and command: the allowlist of profopt's own
    (`passed_env`), then the spec's `env`, the benchmark's, the side's (its venv), and PYTHONPATH."""
    env = passed_env(os.environ)
    env.update(spec.env)
    if bench is not None:
        env.update(bench.env)
    env.update(side.env)
    # The checkout first, so `bench.train:make_step` imports the side's code. A side in profopt's
    # environment gets profopt's PYTHONPATH and profopt_ci last, so the worker imports even when
    # profopt runs from a source tree; a side's own venv gets what the spec names and its worker
    # directory (only profopt_ci: ahead of site-packages, so a profopt the setup installed cannot
    # replace the worker this profopt speaks to), and nothing else of profopt's.
    if own_environment(side):
        worker = str(Path(side.env["VIRTUAL_ENV"]) / WORKER_DIR)
        parts = [str(side.root), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p), worker]
    else:
        inherited = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        parts = [str(side.root), *(p for p in inherited.split(os.pathsep) if p), _PACKAGE_PARENT]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    if side.commit is None:  # the user's own tree stays as it was
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # A commit's checkout is profopt's (a fresh worktree, removed with the workspace), so it keeps the
    # bytecode it compiles: each forked pytest session recompiled the test file and every plugin's
    # rewritten asserts in every round (docs/experiments.md).
    env.pop("PROFOPT_GITHUB_TOKEN", None)
    if bench is not None and bench.constraints and bench.settings.quality_steps:
        # The quality pass needs one hash seed on both sides; the rounds' processes get it too, so
        # the pass forks from the side's zygote rather than import the step's packages again
        # (measure/side_pass.py). The spec's own PYTHONHASHSEED wins.
        env.setdefault("PYTHONHASHSEED", "0")
    return env


def command_words(command: str) -> list[str]:
    """A setup command's words as the shell splits them; a command it cannot split (an unclosed
    quote) by its spaces, so what is read from it is still read."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def run_setup(spec: Spec, side: Side, log: Callable[[str], None]) -> None:
    """Each setup command once, in the side's checkout; a failure is an InfraError naming the side."""
    env = child_env(spec, None, side)
    for command in spec.setup:
        log(f"setup [{side.name}]: {command}")
        res = run_child(["/bin/sh", "-c", command], cwd=side.root, env=env, timeout_s=SETUP_TIMEOUT_S)
        if res.timed_out or res.returncode != 0:
            why = "timed out" if res.timed_out else f"exited {res.returncode}"
            raise InfraError(f"setup failed on {side.name} ({command!r} {why}):\n{tail(res.stderr + res.stdout)}")


def parse_metrics(stdout: str) -> dict[str, Any]:
    """Quality values a command prints as `PROFOPT_METRIC name=value` lines."""
    out: dict[str, Any] = {}
    for line in stdout.splitlines():
        if not line.startswith("PROFOPT_METRIC "):
            continue
        name, sep, value = line[len("PROFOPT_METRIC "):].strip().partition("=")
        if not sep or not name:
            continue
        try:
            out[name.strip()] = float(value)
        except ValueError:
            out[name.strip()] = value.strip()
    return out


def failure_of(res: ChildResult, timeout_s: float, what: str) -> BenchmarkFailed:
    if res.timed_out:
        return BenchmarkFailed("timeout", f"{what} passed timeout_s={timeout_s:g} and was killed\n{tail(res.stderr)}")
    if res.returncode < 0:
        sig = -res.returncode
        hint = " (out of memory?)" if sig == signal.SIGKILL else ""
        return BenchmarkFailed("failed", f"{what} was killed by signal {sig}{hint}\n{tail(res.stderr)}")
    if res.missing_answer:
        return BenchmarkFailed("failed", f"{what} exited 0 without a valid answer\n{tail(res.stderr)}")
    return BenchmarkFailed("failed", f"{what} exited {res.returncode}\n{tail(res.stderr)}")


def _throughput(bench: Benchmark, step_ms: float) -> float | None:
    if not bench.items_per_iteration or step_ms <= 0:
        return None
    return bench.items_per_iteration / (step_ms / 1000.0)


def packages_cache(workdir: Path, side: Side) -> str:
    """Where a side's first-round workers keep which distribution owns which module (worker._owners)."""
    return str(workdir / f"packages-{file_part(side.name)}.json")


def run_sample(spec: Spec, bench: Benchmark, side: Side, workdir: Path, *, round_index: int = 0, order: int = 0,
               zygote: Zygote | None = None) -> dict:
    """One sample of one benchmark on one side: a fresh process, or for a callable one forked from
    the side's `zygote` (ZygoteFailed when it cannot fork; the caller then starts a fresh one). A
    callable's sample carries `preload`, what its zygote should import, for the caller to pop."""
    env = child_env(spec, bench, side)
    s = bench.settings
    if bench.callable:
        job = {
            "callable": bench.callable, "params": bench.params, "warmup": s.warmup,
            "values": s.values, "min_time_ms": s.min_time_ms, "mode": "measure", "packages": round_index == 0,
            "packages_cache": packages_cache(workdir, side),
        }
        what, tag = f"the worker for {bench.name} on {side.name}", f"{side.name}-{bench.name}"
        res, data = run_job(job, Launch(side, env, workdir, tag, s.timeout_s),
                            ForkFrom(zygote, pad=True) if zygote is not None else None)
        if data is None:
            raise failure_of(res, s.timeout_s, what)
        values = _values_of(data, what)
        step = statistics.median(values)
        sample = {
            "round": round_index, "order": order, "step_time_ms": step, "values_ms": values,
            "loops": data["loops"], "throughput": _throughput(bench, step),
            "peak_memory_mb": (data.get("vm_hwm_kb") or res.maxrss_kb) / 1024.0, "cpu_time_ms": None,
            "faults_per_step": per_step(data.get("page_faults"), data["loops"] * len(values)),
            "cuda_max_allocated_mb": data.get("cuda_max_allocated_mb"),
            "cuda_max_reserved_mb": data.get("cuda_max_reserved_mb"),
            "phases_ms": data.get("phases_ms") or {}, "quality": data.get("quality") or {},
            "forked": zygote is not None,
        }
        if isinstance(data.get("compile"), dict):  # a torch.compile step's counts (harness.compiles.Compiles)
            sample["compile"] = data["compile"]
        if isinstance(data.get("preload"), list):
            sample["preload"] = [str(p) for p in data["preload"]][:20000]
        if isinstance(data.get("packages"), dict):
            sample["packages"] = data["packages"]
        return sample
    res = run_command(command_argv(bench.command), cwd=side.root, env=env, timeout_s=s.timeout_s, workdir=workdir)
    if res.timed_out or res.returncode != 0:
        raise failure_of(res, s.timeout_s, f"the command of {bench.name} on {side.name}")
    step = res.wall_ns / 1e6
    return {
        "round": round_index, "order": order, "step_time_ms": step, "values_ms": [step], "loops": 1,
        "throughput": _throughput(bench, step), "peak_memory_mb": res.maxrss_kb / 1024.0,
        "cpu_time_ms": res.cpu_s * 1000.0, "cuda_max_allocated_mb": None, "cuda_max_reserved_mb": None,
        "phases_ms": {}, "quality": parse_metrics(res.stdout),
    }


def _values_of(data: dict, what: str) -> list[float]:
    """The answer's timed values; an answer without finite positive values is a failed sample."""
    values = data.get("values_ms")
    ok = isinstance(values, list) and values and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e15 for v in values)
    if not ok or not isinstance(data.get("loops"), int):
        raise BenchmarkFailed("failed", f"{what} answered without valid `values_ms`/`loops` ({str(values)[:200]})")
    return values


_LAUNCHER = str(Path(__file__).resolve().parent / "launch.py")


def run_command(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float, workdir: Path,
                cpus: list[int] | None = None) -> ChildResult:
    """A command through the launcher, so its wall time, CPU time and peak RSS are its own (on `cpus`)."""
    report = workdir / "launch.json"
    report.unlink(missing_ok=True)
    pin = ["--cpus", ",".join(map(str, cpus))] if cpus else []
    res = run_child([sys.executable, "-I", _LAUNCHER, str(report), *pin, "--", *argv], cwd=cwd, env=env,
                    timeout_s=timeout_s)
    if res.timed_out or not report.exists():
        return res
    own = json.loads(report.read_text())
    res.returncode = own["returncode"]
    res.wall_ns = own["wall_ns"]
    res.cpu_s = own["cpu_s"]
    res.maxrss_kb = own["maxrss_kb"]
    return res


def command_argv(command: str | list[str] | None) -> list[str]:
    if isinstance(command, list):
        return list(command)
    return ["/bin/sh", "-c", str(command)]


def warm_command(spec: Spec, bench: Benchmark, side: Side) -> dict | None:
    """A command's warm-up runs happen once per side before its first round (caches, page cache).
    Unpinned, they are also its parallelism probe: {"parallelism": CPU time over wall time, "need"}."""
    if bench.command is None:
        return None
    env = child_env(spec, bench, side)
    best: dict | None = None
    with tempfile.TemporaryDirectory(prefix="profopt-warm-") as work:
        for _ in range(bench.settings.warmup):
            res = run_command(command_argv(bench.command), cwd=side.root, env=env,
                              timeout_s=bench.settings.timeout_s, workdir=Path(work))
            if res.timed_out or res.returncode != 0:
                raise failure_of(res, bench.settings.timeout_s, f"the command of {bench.name} on {side.name} (warm-up)")
            ratio = res.cpu_s * 1e9 / max(res.wall_ns, 1)
            if best is None or ratio > best["parallelism"]:
                best = {"parallelism": round(ratio, 2), "need": max(1, round(ratio))}
    return best


METRICS = ("step_time_ms", "throughput", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb",
           "energy_per_step_j")


def summarize(samples: list[dict]) -> dict[str, float]:
    out = {}
    for metric in METRICS:
        vals = [s[metric] for s in samples if s.get(metric) is not None]
        if vals:
            out[metric] = statistics.median(vals)
    return out


def fingerprint(side: Side, spec: Spec) -> dict:
    """The hardware and library fingerprint as the side's own interpreter sees it."""
    env = child_env(spec, None, side)
    res = run_child([side.python, "-m", "profopt_ci.measure.fingerprint"], cwd=side.root, env=env, timeout_s=120)
    if res.returncode != 0:
        raise InfraError(f"cannot fingerprint the {side.name} environment ({side.python}):\n{tail(res.stderr)}")
    fp = json.loads(res.stdout)
    # the GPU's settings, read through NVML in profopt's own process (the side's venv need not
    # have nvidia-ml-py); nothing where there is no GPU or no NVML
    fp.update({k: v for k, v in gpu.environment(env).items() if v is not None})
    return fp


def progress_line(name: str, side: str | None, round_index: int, rounds: int, sample: dict | None, error: str | None = None) -> str:
    who = f"{name} [{side}]" if side else name
    if sample is None:
        return f"profopt: {who} round {round_index + 1}/{rounds}: {error}"
    mem = sample.get("peak_memory_mb")
    mem_s = f", rss {mem:.0f} MB" if mem is not None else ""
    return f"profopt: {who} round {round_index + 1}/{rounds}: {sample['step_time_ms']:.4g} ms{mem_s}"
