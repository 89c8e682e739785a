"""One run of one benchmark on one side under `valgrind --tool=callgrind`: instructions per step.

In: a resolved spec, a benchmark, a `Side`, a work directory. Out: a run dict
{"n", "instructions", "est_cycles", "events", "functions", "objects", "quality"} (per step), or a
`BenchmarkFailed` carrying valgrind's log tail. A missing valgrind or an unsupported platform is
a `UsageError` (exit 2) with the install command.

How the count is made deterministic (each measured on this VM, docs/experiments.md):
- `--instr-atstart=no` and client requests (vgreq) around the steps only: the interpreter's start,
  imports, the factory and the warm-up are never counted;
- Ir per step = (Ir(2N) − Ir(N)) / N from one process, so the cost of opening a region cancels;
- PYTHONHASHSEED=0 (set and dict iteration order, hence work, depend on the hash seed), and no
  bytecode written by a run (the next would load what the first compiled);
- `setarch -R` (no ASLR) where the kernel lets us (Docker's default seccomp profile does not):
  addresses feed `id()`-keyed hashing and the allocator's layout;
- PYTHONMALLOC is left alone (pymalloc): CodSpeed sets it to malloc, but both give counts that
  repeat exactly (bench/instructions.py), and glibc malloc adds Ir and tops the function diff with
  malloc/free, which is not the interpreter users run (docs/accuracy.md);
- with `cache_sim`, fixed cache geometry (--I1/--D1/--LL), so a runner's real cache sizes do not
  change the figure; est_cycles = L1 hits + 5·LL hits + 35·RAM accesses (iai-callgrind's weights)
  is an estimate, not a measured time.

A command benchmark has no step to bracket: it is counted whole (`--instr-atstart=yes`,
`--trace-children=yes`, every process of it summed), start-up and imports included; each run is one
execution of the command.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

from profopt_ci.errors import UsageError
from profopt_ci.filenames import file_part
from profopt_ci.measure.processes import BenchmarkFailed, Side, child_env, command_argv, run_child, tail
from profopt_ci.profile import callgrind_out
from profopt_ci.specfile.load import Benchmark, Spec

INSTALL_HINT = ("install it: `sudo apt-get install valgrind` (Debian, Ubuntu), `sudo dnf install valgrind` "
                "(Fedora, RHEL), `sudo apk add valgrind` (Alpine); macOS has no working valgrind — use the "
                "action's Linux container")
CACHE_ARGS = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
CACHE_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
TARGET_IR = 2e7  # instructions per N-step region: a fraction of a second under callgrind, large against its jitter
MAX_STEPS = 1024
TOP_FUNCTIONS = 40  # functions kept per run, by self Ir per step
DETERMINISM_ENV = {"PYTHONHASHSEED": "0"}


def valgrind_path(env: dict[str, str] | None = None) -> str:
    """valgrind on the PATH of the runs, else a UsageError with the install command."""
    path = (env or os.environ).get("PATH", os.defpath)
    found = shutil.which("valgrind", path=path)
    if found is None:
        raise UsageError(f"instrument: instructions needs valgrind, which is not on PATH — {INSTALL_HINT}")
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in ("x86_64", "amd64", "aarch64", "arm64"):
        raise UsageError(f"instrument: instructions runs on Linux x86-64 or aarch64, not {platform.system()} "
                         f"{platform.machine()} — use walltime here, or the action's Linux container")
    return found


@functools.cache
def setarch_prefix() -> tuple[str, ...]:
    """`setarch <machine> -R` when it works here (no ASLR), else nothing."""
    exe = shutil.which("setarch")
    if exe is None:
        return ()
    argv = (exe, platform.machine(), "-R")
    try:
        ok = subprocess.run([*argv, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return argv if ok else ()


def _real_python(python: str) -> str:
    """valgrind follows one exec only: a pyenv shim (a shell script) must be resolved first."""
    try:
        with open(shutil.which(python) or python, "rb") as fh:
            if fh.read(2) != b"#!":
                return python
    except OSError:
        return python
    res = subprocess.run([python, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                         timeout=60)
    return res.stdout.strip() or python


def valgrind_argv(valgrind: str, out_base: Path, log: Path, *, cache_sim: bool, whole: bool) -> list[str]:
    argv = [*setarch_prefix(), valgrind, "--tool=callgrind", f"--log-file={log}", "--dump-line=no",
            f"--callgrind-out-file={out_base}"]
    argv += ["--instr-atstart=yes", "--trace-children=yes"] if whole else ["--instr-atstart=no"]
    return argv + (CACHE_ARGS if cache_sim else [])


def run_once(spec: Spec, bench: Benchmark, side: Side, workdir: Path, index: int) -> dict:
    """One valgrind process; the per-step figures of its dumps."""
    env = child_env(spec, bench, side)
    env.update({k: v for k, v in DETERMINISM_ENV.items() if k not in spec.env and k not in bench.env})
    # every run starts from the same bytecode state: a first run that compiled the side's modules and
    # wrote them (a commit's checkout keeps bytecode: processes.child_env) counts off the others
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    valgrind = valgrind_path(env)
    tag = f"{side.name}-{bench.name}-{index}"
    run_dir = workdir / f"cg-{file_part(tag)}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    log = run_dir / "valgrind.log"
    whole = bench.command is not None
    out_base = run_dir / ("cg.%p" if whole else "cg.out")
    argv = valgrind_argv(valgrind, out_base, log, cache_sim=bench.settings.cache_sim, whole=whole)
    if whole:
        res = run_child([*argv, *command_argv(bench.command)], cwd=side.root, env=env, timeout_s=bench.settings.timeout_s)
    else:
        job = {"callable": bench.callable, "params": bench.params, "mode": "instructions", "seed": 0,
               "warmup": 1, "target_ir": TARGET_IR, "max_steps": MAX_STEPS, "out_base": str(out_base)}
        job_path, answer = run_dir / "job.json", run_dir / "answer.json"
        job_path.write_text(json.dumps(job))
        worker = [_real_python(side.python), "-m", "profopt_ci.measure.worker", str(job_path), str(answer)]
        res = run_child([*argv, *worker], cwd=side.root, env=env, timeout_s=bench.settings.timeout_s)
    if res.timed_out or res.returncode != 0:
        raise _crash(res, log, bench, side)
    if whole:
        dumps = [callgrind_out.read(p) for p in sorted(run_dir.glob("cg.*"))]
        return _figures(_sum(dumps), None, 1, bench.settings.cache_sim, {})
    data = json.loads(answer.read_text())
    small, big = (callgrind_out.read(f"{out_base}.{i}") for i in (2, 3))
    return _figures(small, big, data["n"], bench.settings.cache_sim, data.get("quality") or {})


def _crash(res, log: Path, bench: Benchmark, side: Side) -> BenchmarkFailed:
    vg = log.read_text(errors="replace") if log.exists() else ""
    why = "timed out" if res.timed_out else f"exited {res.returncode}"
    message = (f"the instruction count of {bench.name} on {side.name} under valgrind {why}\n"
               f"{tail(res.stderr)}\n--- valgrind log ---\n{tail(vg)}")
    return BenchmarkFailed("timeout" if res.timed_out else "failed", message)


def _sum(dumps: list[callgrind_out.Dump]) -> callgrind_out.Dump:
    total = callgrind_out.Dump(events=dumps[0].events if dumps else ["Ir"])
    for d in dumps:
        for event in d.events:
            total.totals[event] = total.totals.get(event, 0) + d.total(event)
        for name, costs in d.functions.items():
            own = total.functions.setdefault(name, {})
            for event, v in costs.items():
                own[event] = own.get(event, 0) + v
        for name, ob in d.objects.items():
            total.objects.setdefault(name, ob)
    return total


def _figures(small: callgrind_out.Dump, big: callgrind_out.Dump | None, n: int, cache_sim: bool,
             quality: dict) -> dict:
    """Per-step events, est_cycles and the top functions; `big is None`: `small` is one whole run."""
    def per_step(event: str) -> float:
        if big is None:
            return float(small.total(event))
        # Ir, Dr, Dw grow exactly with the steps, but a miss count need not: the 2N region starts
        # with the caches as the N region left them, so a step whose working set fits in cache can
        # miss less over 2N steps than over N. The difference is then jitter around zero, and a
        # negative count of misses is no count: clamp at 0 (est_cycles below keeps LL ≤ L1 too).
        return max(0.0, (big.total(event) - small.total(event)) / n)

    events = {e: per_step(e) for e in (CACHE_EVENTS if cache_sim else ("Ir",))}
    if big is None:
        functions = {k: float(v.get("Ir", 0)) for k, v in small.functions.items() if v.get("Ir")}
    else:
        functions = callgrind_out.per_step(small, big, n)
    top = dict(sorted(functions.items(), key=lambda kv: -kv[1])[:TOP_FUNCTIONS])
    objects = {**small.objects, **(big.objects if big else {})}
    return {"n": n, "instructions": events["Ir"], "est_cycles": est_cycles(events) if cache_sim else None,
            "events": events, "functions": top, "objects": {k: objects.get(k, "") for k in top},
            "quality": quality}


def est_cycles(e: dict[str, float]) -> float:
    """L1 hits + 5·LL hits + 35·RAM accesses: an estimate from simulated caches, not a time."""
    # Per-step figures are differences of two regions (see _figures): clamp so that the misses
    # never exceed the accesses, nor the LL misses the L1 misses — in one region they cannot.
    l1_miss = min(e["I1mr"] + e["D1mr"] + e["D1mw"], e["Ir"] + e["Dr"] + e["Dw"])
    ram = min(e["ILmr"] + e["DLmr"] + e["DLmw"], l1_miss)
    return (e["Ir"] + e["Dr"] + e["Dw"] - l1_miss) + 5 * (l1_miss - ram) + 35 * ram
