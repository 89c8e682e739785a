"""asv suites in the side's process: asv_runner's own discovery, each benchmark × parameter a step.

In (collector): a benchmark directory (a package, as asv wants it) or an asv.conf.json naming one,
and a regex on the name. Out: one benchmark per asv benchmark and parameter combination (the cross
product of `params`, named `name(p1, p2)` as asv shows it), with file:line, the kind and what of
asv's own attributes is honoured; `probe` runs each once (setup, one call, teardown).

In (worker): `DIR::name-INDEX` and `use(step)`: asv_runner builds the benchmark
(`get_benchmark_from_name`), `setup_cache` runs once in this worker, then `setup`, `use(step)`,
`teardown`. What each kind's step is:
- time_*: the function with its parameters; `number`, `repeat`, `rounds`, `warmup_time`,
  `sample_time` are ignored (profopt's pairing chooses loops and rounds);
- timeraw_*: one fresh interpreter running the returned code (asv's separate-process timer, one
  run), timed whole, interpreter start included;
- peakmem_*: the function; judged on the worker's peak RSS only;
- mem_*: the returned object's size (asv's own asizeof), recorded as `mem_bytes`; track_*: the
  returned value, recorded as `track` (with the benchmark's `unit`): both judged as a constraint
  between the sides, not by time;
- `timeout` becomes the benchmark's timeout_s.
"""
from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# what each asv type is judged on (Benchmark.judged) and the value it records
JUDGED = {"time": None, "timeraw": None, "peakmemory": ("peak_memory_mb",), "memory": (), "track": ()}
RECORDED = {"memory": "mem_bytes", "track": "track"}
IGNORED = ("number", "repeat", "rounds", "warmup_time", "sample_time", "min_run_count", "processes")


def benchmark_dir(path: str) -> Path:
    """The benchmark directory a suite item names: the directory itself, or asv.conf.json's benchmark_dir."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".json"):
        text = "\n".join(line for line in p.read_text().splitlines() if not line.lstrip().startswith("//"))
        conf = json.loads(re.sub(r",(\s*[\]}])", r"\1", text))  # asv's own reader takes trailing commas
        p = p.parent / conf.get("benchmark_dir", "benchmarks")
    if not p.is_dir():
        raise FileNotFoundError(f"{path}: no such asv benchmark directory")
    if not (p / "__init__.py").is_file():
        raise FileNotFoundError(f"{p}: an asv benchmark directory must be a package (it has no __init__.py)")
    return p


def _kind(b) -> str:
    name = type(b).__name__
    return "timeraw" if name == "TimerawBenchmark" else b.type


def _where(b) -> dict:
    func = getattr(b.func, "__func__", b.func)
    try:
        file = os.path.relpath(inspect.getsourcefile(func) or "?", os.getcwd())
        line = inspect.getsourcelines(func)[1]
    except (OSError, TypeError):
        file, line = "?", None
    return {"file": file, "line": line}


def collect(path: str, select: str | None) -> dict:
    from asv_runner._aux import update_sys_path
    from asv_runner.discovery import disc_benchmarks

    root = benchmark_dir(path).resolve()
    rel = os.path.relpath(str(root), os.getcwd())
    update_sys_path(str(root))  # asv's importer: the suite package from its own directory only
    pattern = re.compile(select) if select else None
    out: dict[str, list] = {"benchmarks": [], "skipped": [], "errors": []}
    try:
        found = list(disc_benchmarks(str(root)))
    except Exception as exc:  # a benchmark module that raises at import: where, in the suite's own code
        from profopt_ci.harness.suite_errors import where_raised

        where = {"file": rel, "line": None, **where_raised(exc, os.getcwd())}
        out["errors"].append({**where, "error": f"{type(exc).__name__}: {exc}"})
        return out
    for b in found:
        kind, where = _kind(b), _where(b)
        if kind not in JUDGED:
            out["skipped"].append({"name": b.name, **where, "why": f"asv type {kind} is not supported"})
            continue
        combos = _combinations(b)
        for index, params in combos:
            name = f"{b.name}({', '.join(str(v) for v in params.values())})" if params else b.name
            if pattern is not None and not pattern.search(name):
                continue
            loc = f"{rel}::{b.name}" + (f"-{index}" if index is not None else "")
            entry = {"name": name, "locator": loc, "params": params, "asv_type": kind, **where,
                     "judged": JUDGED[kind], "unit": getattr(b, "unit", None) if kind == "track" else None,
                     "timeout_s": float(b.timeout) if b.timeout else None,
                     "ignored": [a for a in IGNORED if _set_by_user(b, a)]}
            skip = _skipped(b, index, params)
            if skip:
                out["skipped"].append({**entry, "why": skip})
            else:
                out["benchmarks"].append(entry)
    return out


def _set_by_user(b, attr: str) -> bool:
    return any(attr in getattr(src, "__dict__", {}) or attr in getattr(type(src), "__dict__", {})
               for src in b._attr_sources)


def _combinations(b) -> list[tuple[int | None, dict[str, Any]]]:
    import itertools

    if not b._params:
        return [(None, {})]
    names = list(b.param_names)
    shown = b.params  # asv's unique reprs of each parameter value
    return [(i, dict(zip(names, combo, strict=True))) for i, combo in enumerate(itertools.product(*shown))]


def _skipped(b, index: int | None, params: dict) -> str | None:
    if index is None or not b._skip_tuples:
        return None
    import itertools

    combo = next(itertools.islice(itertools.product(*b._params), index, index + 1))
    return "listed in skip_params" if tuple(combo) in b._skip_tuples else None


def _build(locator: str):
    from asv_runner.discovery import get_benchmark_from_name

    rel, _, name = locator.partition("::")
    return get_benchmark_from_name(str(Path(rel).resolve()), name)


def _step(b) -> Callable[[], object]:
    import functools

    args = b._build_params()
    kind = _kind(b)
    if kind == "timeraw":
        from asv_runner.benchmarks.timeraw import _SeparateProcessTimer

        timer = _SeparateProcessTimer(functools.partial(b.func, *args))
        return functools.partial(timer.timeit, 1)
    if kind in RECORDED:
        from profopt_ci.harness import timing as harness

        key, fn = RECORDED[kind], (lambda: b.run(*args)) if kind == "memory" else functools.partial(b.func, *args)

        def step():
            harness.record(**{key: fn()})

        return step
    return functools.partial(b.func, *args) if args else b.func


def run(locator: str, use: Callable[[Callable[[], object]], Any]) -> Any:
    b = _build(locator)
    cache = b.do_setup_cache()
    if cache is not None:
        b.set_cache(cache) if hasattr(b, "set_cache") else b.insert_param(cache)
    if b.do_setup():
        raise RuntimeError(f"{locator}: asv's setup skipped it (NotImplementedError or skip_params)")
    try:
        return use(_step(b))
    finally:
        b.do_teardown()


def probe(locators: list[str]) -> dict[str, str | None]:
    """Each benchmark once: setup_cache, setup, one step, teardown; {locator: None or why not}."""
    from profopt_ci.harness.suite_targets import probe_by_running

    return probe_by_running(run, locators, traceback_lines=8)
