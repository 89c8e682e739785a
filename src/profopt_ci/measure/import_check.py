"""`profopt validate`: import every benchmark's callable the way a measuring worker would.

In: a loaded `Spec` and the name it is shown by. Out: problem lines, `file:line:col: …` at the
benchmark's `callable` key, each with the last lines of the exception. One child process per
distinct (callable, environment), run by the spec's interpreter with `measure.processes.child_env` (the
checkout first on sys.path), so an import that works here but not in a worker is caught. `side`:
the tree's setup environment (measure/tree_env.py) where validate built one; without it (`--no-setup`,
or no setup) profopt's own interpreter, and an import that needs the setup says so.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from profopt_ci.measure.processes import Side, child_env, run_child, tail
from profopt_ci.specfile.guard import LOADER
from profopt_ci.specfile.model import Spec

IMPORT_TIMEOUT_S = 120.0
TAIL_LINES = 4
# Import only: the factory is not called, so no benchmark work runs during validate.
_PROBE = ("import os, sys; sys.path.insert(0, os.getcwd()); "
          "from profopt_ci.measure.worker import load_factory; f = load_factory(sys.argv[1]); "
          "callable(f) or sys.exit(f'{sys.argv[1]} is {type(f).__name__}, expected a factory function')")


def check_imports(spec: Spec, shown: str, side: Side | None = None) -> list[str]:
    """Problems for the callables that do not import; [] when all do."""
    root = spec.path.resolve().parent
    in_setup = side is not None
    side = side or Side(name="tree", root=root, python=sys.executable)
    marks = _callable_marks(spec.path)
    problems, seen = [], {}
    for i, bench in enumerate(spec.benchmarks):
        if not bench.callable:
            continue
        env = child_env(spec, bench, side)
        key = (bench.callable, tuple(sorted(env.items())))
        if key not in seen:
            res = run_child([side.python, "-c", _PROBE, bench.callable], cwd=root, env=env,
                            timeout_s=IMPORT_TIMEOUT_S)
            seen[key] = None if res.returncode == 0 and not res.timed_out else (
                "timed out" if res.timed_out else tail(res.stderr, TAIL_LINES))
        cause = seen[key]
        if cause is None:
            continue
        line, col = marks.get(i, (1, 1))
        hint = " (--no-setup: profopt's own environment; compare imports it in the setup venv)" \
            if spec.setup and not in_setup else (" (in the setup environment)" if in_setup else "")
        lines = [f"{shown}:{line}:{col}: callable `{bench.callable}` of benchmark `{bench.name}` does not import "
                 f"in a worker{hint}:"]
        lines += [f"    {ln}" for ln in cause.splitlines()]
        problems.append("\n".join(lines))
    return problems


def _callable_marks(path: Path) -> dict[int, tuple[int, int]]:
    """benchmark index → (line, column), 1-based, of its `callable` key."""
    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=LOADER)  # the spec already passed spec.guard on loading
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    benches = _value(node, "benchmarks")
    out = {}
    for i, item in enumerate(getattr(benches, "value", []) if isinstance(benches, yaml.SequenceNode) else []):
        for key, _ in getattr(item, "value", []) if isinstance(item, yaml.MappingNode) else []:
            if isinstance(key, yaml.ScalarNode) and key.value == "callable":
                out[i] = (key.start_mark.line + 1, key.start_mark.column + 1)
    return out


def _value(node: yaml.Node | None, name: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)
