"""The record runs: each benchmark's process once, with its reach recorded (harness/reach.py).

In: the plan, benchmarks, one side (its checkout and environment), the checkout's top, a work
directory. Out: {benchmark: (raw record, seconds)}. A callable (a suite's benchmark too) runs in a
worker as its timed rounds would — import, build, steps — from before its module is imported (a
pytest suite's tests of one file share one collection, each test then in a child forked from it:
the record of a 29-benchmark suite was mostly 29 collections of the same file); a
`command` that is a Python process runs once with a sitecustomize that records it; any other
command, and a run that fails, is `unknown` (measured). The runs go at once, one per CPU profopt may
use: nothing is timed while they run.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from profopt_ci.filenames import file_part
from profopt_ci.harness.suite_targets import parse_target
from profopt_ci.measure import quality
from profopt_ci.measure.cpus import available
from profopt_ci.measure.forked import ForkFrom
from profopt_ci.measure.job_worker import Launch, run_job
from profopt_ci.measure.processes import Side, child_env, command_argv, run_command, tail
from profopt_ci.measure.zygote import Zygote, ZygoteFailed
from profopt_ci.specfile.load import Benchmark
from profopt_ci.specfile.plan import Plan

AT_LEAST, MIN_MS, MAX_MS = 5, 100.0, 3000.0  # the steps a record runs beyond its quality pass's (if any)
_SHELL_SYNTAX = re.compile(r"[;&|<>`$()*?{}\n]")

SITE = """\
# profopt's reach record of a Python `command` (profopt_ci.reach.runs): started before the program,
# written at its exit; then the sitecustomize this one stands in front of, if any.
import atexit, json, os, sys
from profopt_ci.harness import reach as _reach

_rec = _reach.Recorder(os.environ["PROFOPT_REACH_REPO"], os.environ.get("PROFOPT_REACH_VENV") or None)
_rec.start()


def _done():
    raw = _rec.stop()
    path = os.path.join(os.environ["PROFOPT_REACH_OUT"], f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as fh:
        json.dump(raw, fh)
    os.replace(path + ".tmp", path)


atexit.register(_done)
_here = os.path.realpath(os.path.dirname(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != _here]
del sys.modules["sitecustomize"]
try:
    import sitecustomize  # noqa: F401
except ImportError:
    pass
"""


def record_env(spec, bench: Benchmark, side: Side) -> dict[str, str]:
    """A record process's environment: the benchmark's own (child_env), writing no bytecode. The
    record runs before the rounds, in the base's checkout only: the .pyc files it left there were
    the base's alone, and a step's instruction count follows the interpreter's memory state, which
    importing from bytecode leaves other than compiling does (tests/test_instructions.py's 1% PR
    read 1.9%)."""
    return {**child_env(spec, bench, side), "PYTHONDONTWRITEBYTECODE": "1"}


def _worker_env(spec, bench: Benchmark, side: Side) -> dict[str, str]:
    """A record worker's (or its zygote's) environment: record_env, and the quality pass's where the
    record runs its steps."""
    env = record_env(spec, bench, side)
    return quality.quality_env(env) if required_steps(bench) else env


def required_steps(bench: Benchmark) -> int:
    """The steps the record must run: the quality pass's, where constraints read it."""
    return bench.settings.quality_steps if bench.constraints else 0


def record_all(plan: Plan, benches: list[Benchmark], side: Side, top: Path, workdir: Path,
               cpus: int | None = None) -> dict[str, tuple[dict, float]]:
    """Each benchmark's raw record on `side`, the runs spread over the CPUs profopt may use; a
    pytest suite's forked from a zygote that imported pytest once (each record run was a pytest
    session of its own, most of it importing pytest), one zygote per environment its benchmarks
    run in."""
    # the pool (cpus.available), not this process's affinity: a compare keeps itself to one CPU of it
    width = max(1, min(len(benches), cpus or len(available())))
    zygotes = _suite_zygotes(plan, benches, side, top, workdir)
    try:
        with ThreadPoolExecutor(max_workers=width) as pool:
            futures = []
            for group in by_file(plan, benches, side.name, width):
                zygote = zygotes.get(_env_key(plan.bench(side.name, group[0].name)))
                futures.append(pool.submit(_each, plan, group, side, top, workdir, zygote) if len(group) > 1
                               else pool.submit(_solo, plan, group[0], side, top, workdir, zygote))
            got = {name: answer for f in futures for name, answer in f.result().items()}
            return {b.name: got[b.name] for b in benches}
    finally:
        for zygote in zygotes.values():
            zygote.close()


def _env_key(own: Benchmark) -> str:
    """What a record process's environment depends on beyond the side: the benchmark's `env` (a
    suite item's `PYTHONPATH: src` is where its package is imported from) and its quality pass."""
    return json.dumps([own.env, required_steps(own)], sort_keys=True)


def by_file(plan: Plan, benches: list[Benchmark], side: str, width: int) -> list[list[Benchmark]]:
    """The record runs: a pytest suite's benchmarks of one file (and one environment) go together,
    collected once, each test forked from there (measure/reach_worker.reach_each_job), split while
    fewer runs than CPUs would go; any other benchmark alone."""
    files: dict[str, list[Benchmark]] = {}
    runs: list[list[Benchmark]] = []
    for b in benches:
        own = plan.bench(side, b.name)
        target = parse_target(own.callable) if own.command is None and own.suite == "pytest" else None
        if target is None:
            runs.append([b])
        else:
            files.setdefault(json.dumps([target[1].partition("::")[0], _env_key(own)]), []).append(b)
    groups = list(files.values())
    while len(runs) + len(groups) < width and any(len(g) > 1 for g in groups):
        big = max(groups, key=len)
        groups.remove(big)
        groups += [big[: len(big) // 2], big[len(big) // 2:]]
    return runs + groups


# What a pytest suite's record runs import before their step: preloaded once, unless the repository
# is one of them (then its own code would run unrecorded in the zygote)
SUITE_PRELOAD = ("pytest", "_pytest", "pluggy", "iniconfig")


def _suite_zygotes(plan: Plan, benches: list[Benchmark], side: Side, top: Path, workdir: Path) -> dict[str, Zygote]:
    """A zygote per environment (`_env_key`) that two or more of the pytest suite's benchmarks run in,
    started in that environment: a child forked from a zygote keeps the zygote's sys.path and hash
    seed whatever its own env says, and one zygote for all ran a `PYTHONPATH: src` item's record on
    the installed copy of its package instead of the checkout's (attrs #1469: nothing reached)."""
    if any((where / name).exists() or (where / f"{name}.py").exists()
           for where in (top, top / "src", side.root) for name in SUITE_PRELOAD):
        return {}
    keys: dict[str, list[Benchmark]] = {}
    for b in benches:
        own = plan.bench(side.name, b.name)
        if own.suite == "pytest" and own.command is None:
            keys.setdefault(_env_key(own), []).append(own)
    out: dict[str, Zygote] = {}
    spec = plan.side_spec(side.name)
    for i, (key, owns) in enumerate(sorted(keys.items())):
        if len(owns) < 2:
            continue
        try:
            zygote = Zygote(side.python, side.root, _worker_env(spec, owns[0], side), list(SUITE_PRELOAD), workdir,
                            f"reach-{side.name}-{i}")
            zygote.ready(ZYGOTE_READY_S)
        except ZygoteFailed:  # pytest not importable there: each record run says so itself
            continue
        out[key] = zygote
    return out


ZYGOTE_READY_S = 120.0


def _solo(plan: Plan, bench: Benchmark, side: Side, top: Path, workdir: Path,
          zygote: Zygote | None) -> dict[str, tuple[dict, float]]:
    own, spec = plan.bench(side.name, bench.name), plan.side_spec(side.name)
    start = time.perf_counter()
    raw = (_command(spec, own, side, top, workdir) if own.command is not None
           else _callable(spec, own, side, top, workdir, zygote if own.suite == "pytest" else None))
    return {bench.name: (raw, time.perf_counter() - start)}


def _each(plan: Plan, group: list[Benchmark], side: Side, top: Path, workdir: Path,
          zygote: Zygote | None) -> dict[str, tuple[dict, float]]:
    """One pytest file's benchmarks in one record run; each is charged an equal share of its time."""
    own = [plan.bench(side.name, b.name) for b in group]
    start = time.perf_counter()
    job = {**_job(own[0], side, top), "callables": [o.callable for o in own]}
    data = _worker(job, own[0], plan.side_spec(side.name), side, workdir, zygote,
                   f"reach-{side.name}-{group[0].name}-{len(group)}", sum(o.settings.timeout_s for o in own))
    share = (time.perf_counter() - start) / len(group)
    records = data.get("records") if isinstance(data.get("records"), dict) else {}
    return {b.name: (records.get(o.callable) or data, share) for b, o in zip(group, own, strict=True)}


def _job(bench: Benchmark, side: Side, top: Path) -> dict:
    return {"mode": "reach", "callable": bench.callable, "params": bench.params, "seed": quality.SEED,
            "reach": {"repo": str(top), "venv": side.env.get("VIRTUAL_ENV") or sys.prefix,
                      "required": required_steps(bench), "at_least": AT_LEAST, "min_ms": MIN_MS, "max_ms": MAX_MS}}


def _callable(spec, bench: Benchmark, side: Side, top: Path, workdir: Path, zygote: Zygote | None = None) -> dict:
    return _worker(_job(bench, side, top), bench, spec, side, workdir, zygote, f"reach-{side.name}-{bench.name}",
                   bench.settings.timeout_s)


def _worker(job: dict, bench: Benchmark, spec, side: Side, workdir: Path, zygote: Zygote | None, tag: str,
            timeout_s: float) -> dict:
    """The record job's answer, forked from the zygote where there is one; a run that failed is
    `unknown` with its cause."""
    launch = Launch(side, _worker_env(spec, bench, side), workdir, tag, timeout_s)
    try:
        res, data = run_job(job, launch, ForkFrom(zygote) if zygote is not None else None)
    except ZygoteFailed:  # a zygote that cannot fork: a fresh worker instead
        res, data = run_job(job, launch)
    if data is None:
        why = "timed out" if res.timed_out else f"exited {res.returncode}"
        return {"unknown": "failed", "failed": f"the record run {why}\n{tail(res.stderr)}".strip()}
    return data


def python_argv(command: str | list[str]) -> list[str] | None:
    """The command's argv when it is one Python process (no shell syntax), else None."""
    if isinstance(command, list):
        argv = list(command)
    else:
        if _SHELL_SYNTAX.search(command):
            return None
        try:
            argv = shlex.split(command)
        except ValueError:
            return None
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):  # `FOO=1 python …`: env words
        argv = argv[1:]
    if argv and os.path.basename(argv[0]) == "env":
        return None
    return argv if argv and os.path.basename(argv[0]).startswith("python") else None


def _command(spec, bench: Benchmark, side: Side, top: Path, workdir: Path) -> dict:
    argv = python_argv(bench.command)
    if argv is None:
        return {"unknown": "command"}
    site = workdir / "reach-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE)
    out = workdir / f"reach-out-{file_part(side.name + '-' + bench.name)}"
    out.mkdir(exist_ok=True)
    env = record_env(spec, bench, side)
    env.update({"PROFOPT_REACH_REPO": str(top), "PROFOPT_REACH_VENV": side.env.get("VIRTUAL_ENV") or sys.prefix,
                "PROFOPT_REACH_OUT": str(out), "PYTHONPATH": os.pathsep.join([str(site), env.get("PYTHONPATH", "")])})
    res = run_command(command_argv(argv), cwd=side.root, env=env, timeout_s=bench.settings.timeout_s, workdir=workdir)
    raws = []
    for path in sorted(out.glob("*.json")):
        try:
            raws.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    if res.timed_out or res.returncode != 0:
        return {"unknown": "failed", "failed": f"the command exited {res.returncode}\n{tail(res.stderr)}".strip()}
    if not raws:  # `python -I`, `-S`: nothing started the record
        return {"unknown": "command"}
    return merge(raws)


def merge(raws: list[dict]) -> dict:
    """Records of several processes as one (a Python command that started another)."""
    out: dict = {"code": {}, "modules": [], "opened": [], "listed": [], "import_dirs": {}, "looked_up": [],
                 "tools": [], "unknown": None, "steps": 1}
    for raw in raws:
        for path, codes in (raw.get("code") or {}).items():
            out["code"].setdefault(path, []).extend(codes)
        for key in ("modules", "opened", "listed", "looked_up", "tools"):
            out[key] = sorted(set(out[key]) | set(raw.get(key) or []))
        out["import_dirs"].update(raw.get("import_dirs") or {})
        out["unknown"] = out["unknown"] or raw.get("unknown")
    return out
