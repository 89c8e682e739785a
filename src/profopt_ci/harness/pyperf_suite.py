"""pyperf scripts in the side's process: the script runs as `__main__` with a recording Runner.

In (collector): a script path and a regex on the names. The script runs with `pyperf.Runner`
replaced by `Recorder`, which registers what `bench_func`, `bench_time_func`, `timeit` and
`bench_command` name instead of spawning pyperf's own workers; out: one benchmark per name, with
the line of the call. In (worker): `SCRIPT::NAME` and `use(step)`: the script runs again the same
way and the named benchmark's step is used:
- bench_func(name, func, *args): `func(*args)`;
- bench_time_func(name, time_func, *args): `time_func(1, *args)` (one loop; profopt times it);
- timeit(name, stmt, setup, globals): `stmt` compiled once as a function, after `setup` ran once;
- bench_command(name, command): one run of the command as a child process.
pyperf's own options (loops, values, processes, warmups, inner_loops) are ignored.
"""
from __future__ import annotations

import functools
import os
import re
import runpy
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any


class Recorder:
    """Stands in for pyperf.Runner while the script runs: records, never measures."""

    registered: dict[str, dict] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = types.SimpleNamespace(worker=False, loops=0, values=0, processes=0, quiet=True)
        self.metadata: dict[str, Any] = {}

    def parse_args(self, args=None):
        return self.args

    def _add(self, name: str, step: Callable[[], object], how: str) -> None:
        frame = sys._getframe(2)
        Recorder.registered[str(name)] = {"step": step, "how": how, "line": frame.f_lineno}

    def bench_func(self, name, func, *args, **kwargs):
        self._add(name, functools.partial(func, *args) if args else func, "bench_func")

    def bench_time_func(self, name, time_func, *args, **kwargs):
        self._add(name, functools.partial(time_func, 1, *args), "bench_time_func")

    def bench_async_func(self, name, func, *args, **kwargs):
        Recorder.registered[str(name)] = {"step": None, "how": "bench_async_func", "line": sys._getframe(1).f_lineno,
                                          "why": "bench_async_func is not supported"}

    def timeit(self, name, stmt=None, setup="pass", teardown="pass", inner_loops=None, duplicate=None,
               metadata=None, globals=None):
        namespace = dict(globals or {})
        exec(compile(setup if isinstance(setup, str) else "pass", "<setup>", "exec"), namespace)
        code = compile(stmt if isinstance(stmt, str) else "pass", "<timeit>", "exec")
        self._add(name, types.FunctionType(code, namespace), "timeit")

    def bench_command(self, name, command):
        self._add(name, functools.partial(subprocess.run, list(command), check=True,
                                          stdout=subprocess.DEVNULL), "bench_command")


def _run_script(path: str) -> dict[str, dict]:
    import pyperf

    Recorder.registered = {}
    saved, argv = pyperf.Runner, sys.argv
    pyperf.Runner = Recorder
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    finally:
        pyperf.Runner, sys.argv = saved, argv
    return Recorder.registered


def collect(path: str, select: str | None) -> dict:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such pyperf script")
    pattern = re.compile(select) if select else None
    out: dict[str, list] = {"benchmarks": [], "skipped": [], "errors": []}
    for name, reg in _run_script(path).items():
        if pattern is not None and not pattern.search(name):
            continue
        entry = {"name": name, "locator": f"{path}::{name}", "params": {}, "file": path, "line": reg["line"],
                 "pyperf": reg["how"]}
        (out["skipped"] if reg.get("why") else out["benchmarks"]).append({**entry, **({"why": reg["why"]} if reg.get("why") else {})})
    return out


def run(locator: str, use: Callable[[Callable[[], object]], Any]) -> Any:
    path, _, name = locator.partition("::")
    found = _run_script(path).get(name)
    if found is None or found["step"] is None:
        raise RuntimeError(f"{locator}: the script no longer registers a benchmark named {name!r}")
    return use(found["step"])


def probe(locators: list[str]) -> dict[str, str | None]:
    from profopt_ci.harness.suite_targets import probe_by_running

    return probe_by_running(run, locators)
