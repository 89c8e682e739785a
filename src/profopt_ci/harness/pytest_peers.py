"""What a suite written for pytest-benchmark or pytest-codspeed expects of a normal run, kept while
profopt blocks those plugins (harness/pytest_suite.py).

In: pytest (imported by the caller, in the side's process), its plugin manager, a collected file.
Out: the peers' hook specs registered, so a conftest that implements `pytest_benchmark_update_machine_info`
and the like loads as it would under pytest-benchmark (pytest rejects a hook it has no spec for);
a suite folder's files that the project's `python_files` patterns skip but that use the `benchmark`
fixture or marker, collected when that folder is the suite's path (as `pytest FOLDER/bench_x.py`
would collect one named on the command line); and an INTERNALERROR of pytest's said in a few lines.
Only the standard library and the pytest passed in: this runs in the side's venv.
"""
from __future__ import annotations

import fnmatch
import os
import re

# a test function taking the fixture, or the marker (pytest-codspeed)
_USES_FIXTURE = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\([^)]*\bbenchmark\b|\bmark\.benchmark\b", re.M)
_NOT_TESTS = ("conftest.py", "__init__.py", "setup.py")
UNMATCHED_SHOWN = 10


def peer_specs(pytest) -> type:
    """pytest-benchmark's hook specs (pytest_benchmark/hookspec.py), with the same `firstresult`s;
    pytest-codspeed declares none."""
    first = pytest.hookspec(firstresult=True)

    class PeerSpecs:
        @first
        def pytest_benchmark_scale_unit(config, unit, benchmarks, best, worst, sort): ...

        @first
        def pytest_benchmark_generate_machine_info(config): ...

        def pytest_benchmark_update_machine_info(config, machine_info): ...

        @first
        def pytest_benchmark_generate_commit_info(config): ...

        def pytest_benchmark_update_commit_info(config, commit_info): ...

        @first
        def pytest_benchmark_group_stats(config, benchmarks, group_by): ...

        @first
        def pytest_benchmark_generate_json(config, benchmarks, include_data, machine_info, commit_info): ...

        def pytest_benchmark_update_json(config, benchmarks, output_json): ...

        def pytest_benchmark_compare_machine_info(config, benchmarksession, machine_info, compared_benchmark): ...

    return PeerSpecs


def add_specs(pytest, pluginmanager) -> None:
    """The peers' specs, unless the peer itself is loaded (a conftest's `pytest_plugins` naming it):
    then its own specs hold, and a second set would be refused."""
    specs = peer_specs(pytest)
    names = [n for n in vars(specs) if n.startswith("pytest_")]
    if any(getattr(getattr(pluginmanager.hook, n, None), "spec", None) is not None for n in names):
        return
    pluginmanager.add_hookspecs(specs)


def matches(name: str, patterns: list[str]) -> bool:
    """Whether pytest's `python_files` patterns match a file name (pytest matches a pattern without
    a `/` against the name alone)."""
    return any(fnmatch.fnmatch(name, p) for p in patterns if "/" not in p) or \
        any(fnmatch.fnmatch(name, os.path.basename(p)) for p in patterns if "/" in p)


def uses_fixture(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return bool(_USES_FIXTURE.search(fh.read()))
    except OSError:
        return False


class FolderFiles:
    """The files under the suite's folder that `python_files` skips: those that use the fixture are
    collected (`pytest_collect_file`), the others listed, so a folder that collects nothing says why."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.realpath(folder) if os.path.isdir(folder) else None
        self.patterns: list[str] = []
        self.added: list[str] = []
        self.unmatched: list[str] = []

    def pytest_configure(self, config) -> None:
        self.patterns = list(config.getini("python_files"))

    def pytest_collect_file(self, file_path, parent):
        path = str(file_path)
        if (self.folder is None or not path.endswith(".py") or os.path.basename(path) in _NOT_TESTS
                or not os.path.realpath(path).startswith(self.folder + os.sep)
                or parent.session.isinitpath(file_path) or matches(os.path.basename(path), self.patterns)):
            return None
        rel = os.path.relpath(path, os.getcwd())
        if not uses_fixture(path):
            self.unmatched.append(rel)
            return None
        self.added.append(rel)
        return parent.session.gethookproxy(file_path).pytest_pycollect_makemodule(module_path=file_path, parent=parent)

    def answer(self) -> dict:
        """What the collector says of them: {} when the patterns skipped nothing."""
        if not (self.added or self.unmatched):
            return {}
        return {"python_files": self.patterns, "added": sorted(self.added),
                "unmatched": sorted(self.unmatched)[:UNMATCHED_SHOWN], "unmatched_n": len(self.unmatched)}


def internal_error(output: str, root: str) -> dict | None:
    """pytest's INTERNALERROR (a traceback of its own machinery) as the suite's error in a few
    lines: the exception, and where in the checkout's own files it was raised; None without one."""
    lines = [ln[len("INTERNALERROR>"):].strip() for ln in output.splitlines() if ln.startswith("INTERNALERROR>")]
    if not lines:
        return None
    from profopt_ci.harness.suite_errors import where_in_text

    cause = next((ln for ln in reversed(lines) if re.match(r"^[\w.]+(Error|Exception|Exit)\b.*:", ln)), lines[-1])
    where = where_in_text("\n".join(lines), root)
    plugin = re.search(r"from '([^']+[.]py)'", cause)  # pluggy names the plugin module it refused
    if plugin and not where:
        where = {"file": os.path.relpath(plugin[1], root), "line": None}
    for prefix in {os.path.realpath(root), root}:
        cause = cause.replace(prefix + os.sep, "")
    hint = ""
    if "unknown hook" in cause:
        hint = "\n(a hook of a plugin pytest does not load here: profopt blocks the peers' plugins and knows " \
               "pytest-benchmark's hooks; a hook of another plugin needs that plugin in `setup`)"
    return {**where, "error": f"pytest stopped with an internal error while collecting: {cause}{hint}"}
