"""pytest suites in the side's process: collected by pytest itself, each benchmark's call made the step.

In (collector): a path and a `-k` expression. Out: the benchmarks pytest collected — tests that use
the `benchmark` fixture (pytest-benchmark, pytest-codspeed) or carry `@pytest.mark.benchmark`
(pytest-codspeed: the whole body is the step) — with file:line and params, the skipped ones with
why, the collection errors; with `probe`, each test run once with a counting fixture, so a test
that never reaches its call, calls it twice or fails is said per benchmark before anything is timed.

In (worker): one node id and `use(step)` (`run`), or several, each run in a child forked after
their one collection (`run_each`: a suite's reach records). The test runs under pytest as usual
(fixtures, conftest, parametrization); its body before the call is untimed setup; at the call,
`use` runs nested inside it with the call's target as the step (the lockstep protocol, a
profile…), then the test goes on and pytest tears its fixtures down. pytest-benchmark's and
pytest-codspeed's own plugins are blocked (`-p no:benchmark -p no:codspeed`): this module provides
the fixture, so whether they are installed does not change what is measured; their hook specs are
registered (harness/pytest_peers.py), so a conftest implementing their hooks loads as in a normal
run.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

# The peers' plugins, xdist's workers, random order and the cache never take part; the project's
# addopts (which may name those plugins' flags) are dropped. -s: the step's output is not captured.
PYTEST_ARGS = ["-p", "no:benchmark", "-p", "no:codspeed", "-p", "no:xdist", "-p", "no:xdist.looponfail",
               "-p", "no:randomly",
               "-p", "no:cacheprovider", "-p", "no:cov", "-o", "addopts=", "-s", "-q", "--no-header"]
ERROR_LINES = 15  # of pytest's output, when its collection fails without a collect report
_SHADOWED = ("pluggy", "iniconfig", "packaging", "_pytest", "pytest")


def import_pytest():
    """pytest, or an ImportError that names the checkout's module shadowing one pytest needs."""
    try:
        import pytest
    except ImportError as exc:
        here = os.getcwd()
        shadow = [f"{m} ({getattr(sys.modules.get(m), '__file__', '?')})" for m in _SHADOWED
                  if str(getattr(sys.modules.get(m), "__file__", "") or "").startswith(here)]
        why = (f"the checkout's own {', '.join(shadow)} shadows what pytest imports" if shadow
               else f"it is not installed in the environment this side runs in ({sys.prefix}): profopt adds it to "
                    "a side's `setup` venv, and without `setup` a side runs in profopt's own environment")
        raise ImportError(f"pytest cannot be imported here: {exc} — {why}. A library pytest itself imports "
                          "cannot be benchmarked under a running pytest from its checkout; install it in the "
                          "side's `setup` venv instead of importing it from the tree") from None
    return pytest


def rewritten_tops() -> set[str]:
    """The top-level modules pytest marks for assert rewriting before it loads plugins: every module
    and package of each installed distribution with a `pytest11` entry point (as pytest's
    `_iter_rewritable_modules` reads their files), whether or not the plugin is blocked."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return set()
    from importlib import metadata

    out: set[str] = set()
    for dist in metadata.distributions():
        try:
            if any(ep.group == "pytest11" for ep in dist.entry_points):
                out |= _tops([str(f) for f in dist.files or ()])
        except Exception:  # noqa: S112 — a broken dist's metadata: pytest would skip it too
            continue
    return out


def _tops(files: list[str]) -> set[str]:
    tops = set()
    for fn in files:
        if "/" not in fn and fn.endswith(".py") and fn != "setup.py" and not fn.startswith("__editable__"):
            tops.add(fn[:-3])
        elif fn.count("/") == 1 and fn.endswith("__init__.py"):
            tops.add(fn.partition("/")[0])
    if not tops:  # a src layout's files: pytest tries again without the first component
        inner = ["/".join(fn.split("/")[1:]) for fn in files if "/" in fn]
        return _tops(inner) if inner else set()
    return tops


def _text(value: Any) -> Any:
    """A parameter as the report shows it: JSON scalars as they are, anything else as its repr."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)[:200]


def _locator(item) -> str:
    """The node id relative to the worker's directory (the side's checkout), as the worker passes it."""
    rel = os.path.relpath(str(item.path), os.getcwd())
    return "::".join([rel, *item.nodeid.split("::")[1:]])


class _Collector:
    def __init__(self, pytest) -> None:
        self.pytest = pytest
        self.benchmarks: list[dict] = []
        self.skipped: list[dict] = []
        self.errors: list[dict] = []
        self.other = 0

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            from profopt_ci.harness.suite_errors import where_in_text

            text = str(report.longrepr)
            self.errors.append({"file": report.nodeid or "?", "line": None, **where_in_text(text, os.getcwd()),
                                "error": text[-3000:]})

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            self._item(item)

    def _item(self, item) -> None:
        fixture = "benchmark" in getattr(item, "fixturenames", ())
        marker = item.get_closest_marker("benchmark") is not None
        if not (fixture or marker):
            self.other += 1
            return
        path, line0, _ = item.location
        where = {"file": os.path.relpath(str(item.path), os.getcwd()), "line": (line0 or 0) + 1}
        params = {k: _text(v) for k, v in getattr(getattr(item, "callspec", None), "params", {}).items()}
        entry = {"name": item.name, "locator": _locator(item), "params": params,
                 "style": "fixture" if fixture else "marker", **where}
        why = _skip_reason(item)
        if why:
            self.skipped.append({**entry, "why": why})
        else:
            self.benchmarks.append(entry)


def _skip_reason(item) -> str | None:
    try:
        from _pytest.skipping import evaluate_skip_marks

        skip = evaluate_skip_marks(item)
    except Exception as exc:  # a skipif condition that raises is pytest's error too
        return f"its skip marks cannot be evaluated: {exc}"
    return f"skipped: {skip.reason}" if skip is not None else None


def collect(path: str, select: str | None) -> dict:
    """What pytest collects under `path` (cwd: the side's checkout), as collector.py reports it."""
    import contextlib
    import io

    from profopt_ci.harness.pytest_peers import FolderFiles, internal_error

    pytest = import_pytest()
    col, files = _Collector(pytest), FolderFiles(path)
    # a test file that cannot be collected is one error; the other files are still collected and measured
    args = [path, "--collect-only", "--continue-on-collection-errors", *PYTEST_ARGS, *(["-k", select] if select else [])]
    said = io.StringIO()  # pytest's own words (a conftest that cannot import is only said there)
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = pytest.main(args, plugins=[col, files, _Plugin(pytest, None)])
    if code not in (0, 5) and not col.errors:  # 5: nothing collected
        internal = internal_error(said.getvalue(), os.getcwd())
        last = "\n".join(said.getvalue().rstrip().splitlines()[-ERROR_LINES:])
        col.errors.append(internal and {"file": path, "line": None, **internal} or {
            "file": path, "line": None, "error": f"pytest --collect-only exited {int(code)}" + (f":\n{last}" if last else "")})
    return {"benchmarks": col.benchmarks, "skipped": col.skipped, "errors": col.errors,
            "note": f"{col.other} other test(s) use neither the benchmark fixture nor the marker" if col.other else None,
            **({"files": files.answer()} if files.answer() else {})}


def probe(locators: list[str]) -> dict[str, str | None]:
    """Each benchmark run once with a counting fixture: {locator: None if fine, else why not}."""
    pytest = import_pytest()
    plugin = _Plugin(pytest, None, probing=True)
    pytest.main([*locators, *PYTEST_ARGS], plugins=[plugin])
    return {loc: plugin.problems.get(loc, None if loc in plugin.seen else "pytest did not run it") for loc in locators}


def run(locator: str, use: Callable[[Callable[[], object]], Any]) -> Any:
    """`use(step)` nested in the test's benchmark call; its value, or the error it raised."""
    pytest = import_pytest()
    plugin = _Plugin(pytest, use)
    pytest.main([locator, *PYTEST_ARGS], plugins=[plugin])
    return _outcome(plugin, locator)


def _outcome(plugin: _Hooks, locator: str) -> Any:
    if plugin.error is not None:
        raise plugin.error
    if not plugin.used:
        why = plugin.problems.get(locator) or "pytest did not run it"
        raise RuntimeError(f"{locator}: the test never reached its benchmark call — {why}")
    return plugin.result


def run_each(locators: list[str], use: Callable[[Callable[[], object]], Any], fork: Callable[[], int],
             done: Callable[[str, Callable[[], Any]], None]) -> None:
    """Each locator's test in a process of its own, forked (`fork`) after one collection of them all:
    the child runs the test as `run` would — its fixtures set up and torn down as in a session of
    that test alone, `use(step)` at its call — then `done(locator, outcome)` (outcome: `use`'s
    value, or raises its error), and exits. Each child holds what the collection ran and what its
    own test ran, and nothing of the others': the reach record of a suite's benchmarks collects
    each test file once instead of once per benchmark (pytest imports the whole file for one node id
    too)."""
    pytest = import_pytest()
    plugin = _Plugin(pytest, use)
    plugin.fork, plugin.done = fork, done
    pytest.main([*locators, *PYTEST_ARGS], plugins=[plugin])


class _Prepared:
    """pedantic(setup=…): every call gets fresh arguments from `setup`, untimed (harness/timing.py's
    `profopt_untimed` protocol); called plainly (a profile, the quality pass) it runs all three."""

    def __init__(self, target, args, kwargs, setup, teardown) -> None:
        self.target, self.args, self.kwargs = target, tuple(args or ()), dict(kwargs or {})
        self.setup, self.teardown = setup, teardown

    def profopt_untimed(self):
        args, kwargs = self.args, self.kwargs
        if self.setup is not None:
            got = self.setup()
            if got is not None:
                args, kwargs = got
        after = functools.partial(self.teardown, *args, **kwargs) if self.teardown else None
        return functools.partial(self.target, *args, **kwargs), after

    def __call__(self):
        call, after = self.profopt_untimed()
        try:
            return call()
        finally:
            if after is not None:
                after()


class BenchmarkFixture:
    """The `benchmark` fixture as pytest-benchmark and pytest-codspeed define it: call it once."""

    def __init__(self, plugin: _Hooks, locator: str) -> None:
        self._plugin, self._locator = plugin, locator
        self.extra_info: dict[str, Any] = {}
        self.group = None

    def __call__(self, function_to_benchmark, *args, **kwargs):
        step = functools.partial(function_to_benchmark, *args, **kwargs) if args or kwargs else function_to_benchmark
        return self._plugin.measure(self, step)

    def pedantic(self, target, args=(), kwargs=None, setup=None, teardown=None, rounds=1, warmup_rounds=0,
                 iterations=1):
        """rounds, warmup_rounds and iterations are profopt's to choose (its pairing); setup and
        teardown run around every call, untimed."""
        if setup is not None and args:
            raise TypeError("pedantic: pass either `args` or a `setup` that returns them, not both")
        if setup is None and teardown is None:
            return self(target, *tuple(args or ()), **dict(kwargs or {}))
        return self._plugin.measure(self, _Prepared(target, args, kwargs, setup, teardown))


def _Plugin(pytest, use, *, probing: bool = False) -> _Hooks:
    """The plugin object: the hooks, and the `benchmark` fixture (pytest reads a plugin's fixtures
    from its class, so the class is made here, where pytest is imported)."""

    class Plugin(_Hooks):
        @pytest.fixture
        def benchmark(self, request):
            return BenchmarkFixture(self, _locator(request.node))

        def pytest_addhooks(self, pluginmanager) -> None:
            """pytest-benchmark's hook specs: its plugin is blocked, and a conftest implementing one of
            its hooks would otherwise be refused (PluginValidationError: unknown hook)."""
            from profopt_ci.harness.pytest_peers import add_specs

            add_specs(pytest, pluginmanager)

    return Plugin(use, probing=probing)


class _Hooks:
    """The marker, the reports and the measured call."""

    def __init__(self, use, *, probing: bool = False) -> None:
        self.use, self.probing = use, probing
        self.fork: Callable[[], int] | None = None  # run_each's
        self.done: Callable[[str, Callable[[], Any]], None] | None = None
        self.used, self.result, self.error = False, None, None
        self.calls: dict[str, int] = {}
        self.problems: dict[str, str] = {}
        self.seen: set[str] = set()
        self.ids: dict[str, str] = {}

    def pytest_configure(self, config) -> None:
        config.addinivalue_line("markers", "benchmark: a benchmark (pytest-codspeed); profopt measures the test body")

    def pytest_pyfunc_call(self, pyfuncitem):
        """The marker without the fixture: the whole test body, with its fixtures' values, is the step."""
        if "benchmark" in pyfuncitem.fixturenames or pyfuncitem.get_closest_marker("benchmark") is None:
            return None
        kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        self.measure(None, functools.partial(pyfuncitem.obj, **kwargs), _locator(pyfuncitem))
        return True

    def pytest_collection_finish(self, session) -> None:
        self.ids = {item.nodeid: _locator(item) for item in session.items}

    def pytest_runtest_protocol(self, item, nextitem):
        """run_each's: the test in a forked child, torn down there as the session's last test."""
        if self.fork is None:
            return None
        from _pytest.runner import runtestprotocol

        pid = self.fork()
        if pid:
            os.waitpid(pid, 0)
            return True
        code = 0
        try:
            loc = self.ids.get(item.nodeid) or _locator(item)
            runtestprotocol(item, log=True, nextitem=None)
            self.done(loc, functools.partial(_outcome, self, loc))
        except BaseException:  # noqa: BLE001 — the child must never go back into the parent's loop
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def pytest_runtest_logreport(self, report) -> None:
        loc = self.ids.get(report.nodeid, report.nodeid)
        self.seen.add(loc)
        if report.failed and loc not in self.problems:
            crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None) or "see below"
            self.problems[loc] = (f"{crash.splitlines()[0] if crash.strip() else 'see below'} (in the test's "
                                  f"{report.when})\n{str(report.longrepr)[-2000:]}")
        elif report.skipped and loc not in self.problems:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.problems[loc] = f"the test was skipped ({reason})"
        if report.when == "teardown" and self.probing and loc not in self.problems and not self.calls.get(loc):
            self.problems[loc] = "the test never calls the benchmark fixture"

    def measure(self, fixture: BenchmarkFixture | None, step, locator: str | None = None):
        loc = locator or fixture._locator
        self.calls[loc] = self.calls.get(loc, 0) + 1
        if self.calls[loc] > 1:
            raise RuntimeError(f"{loc} calls the benchmark fixture {self.calls[loc]} times — expected once "
                               "(as in pytest-benchmark): split it into one test per measured call")
        if fixture is not None and fixture.extra_info:
            from profopt_ci.harness import timing as harness

            harness.record(**{f"extra_info.{k}": v for k, v in fixture.extra_info.items()})
        if self.probing or self.use is None:
            return step()
        self.used = True
        try:
            self.result = self.use(step)
        except BaseException as exc:
            self.error = exc
            raise
        return step()  # the call's value for the test's own assertions, as pytest-benchmark returns it
