"""A worker process: import the benchmark's factory, build the step, measure or profile it once.

In: JOB.json (checkout, factory, params, value settings). Out: OUT.json with the samples (or the
profile), or, serving lockstep, one value per request over the pipe.

Run by the runner as `python -m profopt_ci.measure.worker JOB.json OUT.json` in a fresh process, with the
checkout first on sys.path. `python -m profopt_ci.measure.worker --serve JOB.json` is the lockstep worker
(lockstep.py): it builds the step, then answers the parent over a private pipe (the fds named in the
job, never stdout, which the user's step may print to) one value at a time:

    worker: `built {"preload": […], "cuda": false}` (cuda: the build initialized a GPU; then also
                                         "gpu": its index and UUID, CudaDevice.identity)
    parent: `p` → worker: `threads {json}` (harness/threads.py: the step's parallelism, probed
                                         while the worker is not pinned yet; first round only)
    parent: `a 0,1` → worker: `pinned N` (every thread of the worker moved onto those CPUs)
    parent: `c` → worker: `loops N` (its own calibration to ~value_ms)
    parent: `w N` → worker: `ready NS` (warmed up at N loops per value, the same N on both sides;
                                       NS its shortest warm-up value)
    parent: `v` → worker: `NS` (one value of LOOPS steps, in ns) … as often as the parent asks
    parent: `q` → worker: `done {"vm_hwm_kb": …, "quality": …, "phases_ms": …, cuda peaks, compile}` and exit 0
                                         (compile: a torch.compile step's counts, compiles.Compiles)
 Standard library only (plus whatever the factory imports), so the
worker measures the user's code, not ours. A failure is a traceback on stderr and a non-zero exit;
the runner keeps the tail.
"""
from __future__ import annotations

import importlib
import json
import os
import sys


def load_factory(target: str):
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def build_step(target: str, params: dict, seed: int | None = None):
    factory = load_factory(target)
    if seed is not None:  # after the module's imports, before the factory: numpy and torch are loaded
        from profopt_ci.harness import timing as harness

        harness.seed_all(seed)
    step = factory(**params)
    if not callable(step):
        raise TypeError(f"{target}(**params) returned {type(step).__name__}, expected a zero-argument step function")
    return step


def with_step(job: dict, use, seed: int | None = None):
    """`use(step)` with the job's step built, and its value. A collected suite benchmark's step is
    built inside the suite's own runner (its pytest test, at the benchmark call), so `use` runs
    nested there (profopt_ci.harness.suite_run); a `module:factory` step is built here."""
    target, params = job["callable"], job.get("params") or {}
    if "+suite:" in target:
        from profopt_ci.harness import suite_run as inworker

        return inworker.run(target, use, seed)
    return use(build_step(target, params, seed))


# Packages that import without starting work a forked child would inherit half-done (no OpenMP
# region, no CUDA context, no running thread pool), and that cost seconds to import: a zygote may
# import them once and fork each round's workers (measure/zygote.py). jax and tensorflow are not here:
# both start threads at import and say fork() is unsafe after it. pytest and what it imports: a
# suite's worker runs a pytest session each round, and its imports were most of a round's start.
# Not pytest's plugins: see `preloadable`.
PRELOAD = ("torch", "numpy", "scipy", "pandas", "sklearn", "torchvision", "torchaudio", "transformers",
           "pytest", "_pytest", "pluggy", "iniconfig")
FORK_UNSAFE = ("jax", "jaxlib", "tensorflow")  # never preloaded
FORKED = False  # set in a worker a zygote forked (zygote_process): its preload is known already


def preloadable() -> list[str]:
    """The modules of the PRELOAD packages this worker's step imported, submodules included (the
    factory may import them lazily: torch.optim's first optimizer imports torch._dynamo);
    measure/zygote.py imports them once. Packages first, then their submodules by depth.

    Never what the suite's runner must import itself (harness.suite_run.runner_owned): pytest
    rewrites the asserts of its entry-point plugins' packages as it imports them, so one imported
    before the session runs unrewritten and pytest warns "Module already imported so cannot be
    rewritten" — an error under the project's `filterwarnings = error`, and a session unlike a
    fresh one. A forked worker reports nothing: its zygote's list was learnt from a fresh one."""
    if FORKED:
        return []
    suite = sys.modules.get("profopt_ci.harness.suite_run")
    owned = suite.runner_owned() if suite is not None else set()
    names = [m for m in list(sys.modules)
             if m.partition(".")[0] in PRELOAD and m.partition(".")[0] not in owned]
    return sorted(names, key=lambda m: (m.count("."), m))[:20000]


def imported_packages(cache: str | None = None) -> dict[str, str]:
    """{distribution: version} of the installed packages this process imported — the step's, its
    runner's — not the standard library's, not profopt's own: where the side's numbers came from.
    `cache`: a file keeping which distribution owns which module (metadata.packages_distributions
    reads every installed package's file list, which every benchmark's first round paid anew) for
    as long as sys.path and its directories are unchanged."""
    from importlib import metadata

    tops = {m.partition(".")[0] for m in list(sys.modules)} - set(sys.stdlib_module_names) - {"profopt_ci"}
    owners = _owners(cache)
    if owners is None:
        return {}
    out: dict[str, str] = {}
    for top in tops:
        for dist in owners.get(top, ()):
            try:
                out[dist] = metadata.version(dist)
            except Exception:  # noqa: S112 — listed but unreadable: left out
                continue
    return dict(sorted(out.items())[:500])


def _owners(cache: str | None) -> dict[str, list[str]] | None:
    """metadata.packages_distributions(), through `cache` when one is given; None when it fails."""
    from importlib import metadata

    key = []
    for entry in sys.path:
        try:
            key.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            key.append([entry, None])
    if cache:
        try:
            with open(cache, encoding="utf-8") as f:
                kept = json.load(f)
            if kept.get("key") == key and isinstance(kept.get("owners"), dict):
                return kept["owners"]
        except (OSError, ValueError, AttributeError):
            pass
    try:
        owners = {top: list(dists) for top, dists in metadata.packages_distributions().items()}
    except Exception:  # a broken dist's metadata must not fail the measurement
        return None
    if cache:
        try:
            with open(f"{cache}.{os.getpid()}", "w", encoding="utf-8") as f:
                json.dump({"key": key, "owners": owners}, f)
            os.replace(f"{cache}.{os.getpid()}", cache)
        except OSError:
            pass
    return owners


def measure_job(job: dict) -> dict:
    from profopt_ci.harness import timing as harness
    from profopt_ci.harness.cuda_device import detect_device

    m = with_step(job, lambda step: harness.measure(
        step,
        warmup=int(job.get("warmup", 3)),
        values=int(job.get("values", 5)),
        min_time_ms=float(job.get("min_time_ms", 100.0)),
        device=detect_device(),
    ))
    return {
        "values_ms": m.values_ms,
        "loops": m.loops,
        "phases_ms": m.phases_ms,
        "quality": m.quality,
        "vm_hwm_kb": _vm_hwm_kb(),
        "page_faults": m.page_faults,
        "preload": preloadable(),
        **({"packages": imported_packages(job.get("packages_cache"))} if job.get("packages") else {}),
        **({"compile": m.compile} if m.compile else {}),
        **m.device_peaks,
    }


def _vm_hwm_kb() -> int | None:
    """This process's own peak RSS (its mm only; ru_maxrss would include the parent's at exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def profile_job(job: dict) -> dict:
    """The run after the timed rounds: the quality pass (`quality_steps` from fresh seeds), then the
    profile of the same step. A profile that fails keeps the quality trace."""
    steps = int(job.get("quality_steps") or 0)
    return with_step(job, lambda step: _profile_step(job, step, steps),
                     seed=int(job.get("seed", 0)) if steps else None)


def _profile_step(job: dict, step, steps: int) -> dict:
    from profopt_ci.harness import timing as harness
    from profopt_ci.profile import capture

    trace = harness.trace(step, steps) if steps else None
    mode = job.get("profile", "auto")
    if mode == "off":
        summary: dict = {"kind": "none", "reason": "profile: off"}
    else:
        from pathlib import Path

        trace_dir = Path(job["trace_dir"]) if job.get("trace_dir") else None
        try:
            summary = capture.capture(step, mode, steps=int(job.get("steps", 5)), trace_dir=trace_dir,
                                      name=job["name"], machines=job.get("machines"))
        except Exception as exc:
            if trace is None:
                raise
            summary = {"kind": "none", "reason": f"profiled run failed: {type(exc).__name__}: {str(exc)[:500]}"}
    return {**summary, "quality_trace": trace} if trace is not None else summary


def serve_job(job: dict, fd_in: int | None = None, fd_out: int | None = None) -> int:
    """The lockstep protocol above, on the job's `fd_in` / `fd_out` (or the ones given: a worker a
    zygote forked received its pipe ends over the zygote's socket)."""
    from profopt_ci.measure import cpus

    cpus.die_with_parent()  # also set by the parent's preexec; here too for any other launcher
    rd = os.fdopen(int(job["fd_in"] if fd_in is None else fd_in), "r", encoding="ascii")
    wr = os.fdopen(int(job["fd_out"] if fd_out is None else fd_out), "w", encoding="utf-8", buffering=1)
    return with_step(job, lambda step: _serve(job, step, rd, wr))


def _serve(job: dict, step, rd, wr) -> int:
    from profopt_ci.harness import threads
    from profopt_ci.harness import timing as harness
    from profopt_ci.harness.cuda_device import detect_device

    # cuda: the build initialized a GPU, so this round times the device (no other round's workers
    # may build beside it: lockstep.callable_round); gpu: which one, for the parent's telemetry
    device = detect_device()
    built = {"preload": preloadable(), "cuda": device is not None}
    if device is not None:
        built["gpu"] = device.identity()
    wr.write("built " + json.dumps(built) + "\n")
    # warm for a tenth of the round, up to 100 ms: a short test round should not be mostly warm-up
    warm_ms = min(100.0, float(job.get("round_ms", 400.0)) / 10)
    short_ms = (float(job["short_step_ms"]), float(job["short_round_ms"])) \
        if "short_step_ms" in job and "short_round_ms" in job else None
    # the thread probe (first round only) lasts at most one round's measuring, at least 50 ms
    probe_ms = max(50.0, min(threads.PROBE_MS, float(job.get("round_ms", 400.0))))
    # a step under short_step_ms has rounds of short_round_ms (lockstep.round_length): its warm-up is
    # as much shorter, its probe half a round (a 0.5 ms step still makes 150 calls, 37 samples)
    short_warm = (short_ms[0], min(100.0, short_ms[1] / 10)) if short_ms else None
    short_probe = (short_ms[0], max(50.0, min(probe_ms, short_ms[1] / 2))) if short_ms else None
    stepper = harness.Stepper(step, value_ms=float(job.get("value_ms", 2.0)), warmup=int(job.get("warmup", 3)),
                              lead=int(job.get("lead", 0)),
                              warmup_ms=warm_ms, short=short_warm, device=device)
    warmed = False
    for line in rd:
        op, _, arg = line.strip().partition(" ")
        if op == "c":
            wr.write(f"loops {stepper.calibrate()}\n")
        elif op == "p" and not warmed:
            seen = threads.probe(step, job.get("threadpoolctl"), probe_ms, short_probe)
            wr.write("threads " + json.dumps(seen) + "\n")
        elif op == "a" and arg:
            wr.write(f"pinned {threads.pin_all(sorted({int(c) for c in arg.split(',')}))}\n")
        elif op == "w" and arg.isdigit():
            wr.write(f"ready {stepper.warm(int(arg))}\n")
            warmed = True
        elif op == "v" and warmed:
            wr.write(f"{stepper.value_ns()}\n")
        elif op == "q" and warmed:
            own = {"packages": imported_packages(job.get("packages_cache"))} if job.get("packages") else {}
            wr.write("done " + json.dumps({**stepper.finish(), "vm_hwm_kb": _vm_hwm_kb(), **own}) + "\n")
            return 0
        else:
            print(f"profopt worker: unexpected request {line.strip()!r}", file=sys.stderr)
            return 2
    return 1  # the parent closed the pipe: it is gone or gave up on us


def run_job(job: dict, out: str) -> int:
    """A JSON job (measure, profile, instructions, reach) whose answer is written atomically to `out`."""
    if job.get("mode") == "reach":
        from profopt_ci.measure.reach_worker import reach_each_job, reach_job

        result = reach_each_job(job, out) if "callables" in job else reach_job(job, with_step)
    elif job.get("mode") == "instructions":  # under valgrind, started by profopt_ci.measure.callgrind
        from profopt_ci.measure.instr_worker import instructions_job

        result = with_step(job, lambda step: instructions_job(job, lambda *_: step))
    else:
        result = profile_job(job) if job.get("mode") == "profile" else measure_job(job)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(result))
    os.replace(tmp, out)
    return 0


def _read_job(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--serve":
        sys.path.insert(0, os.getcwd())
        return serve_job(_read_job(args[1]))
    if len(args) != 2:
        print("usage: python -m profopt_ci.measure.worker JOB.json OUT.json", file=sys.stderr)
        return 2
    job = _read_job(args[0])
    sys.path.insert(0, os.getcwd())
    return run_job(job, args[1])


if __name__ == "__main__":
    sys.exit(main())
