"""Load profopt.yml (version 1): find it, read it (capped), check it, resolve it.

In: a path (or the text and the name to show). Out: a `Spec` with every benchmark's settings
resolved (specfile/model.py), or a `SpecError` listing every problem as
`FILE:LINE:COL: what is wrong — what was expected`.

Checks run in three layers, each pointing at the YAML node it is about: YAML syntax and duplicate
keys while composing (specfile/yamlnodes.py), then conversion into the typed model
(specfile/keys.py, which generates the packaged JSON Schema) and the rules a type cannot say
(specfile/checks.py). The model's names are importable from here too, as the
result of `load_spec`.
"""
from __future__ import annotations

from pathlib import Path

from profopt_ci.errors import UsageError
from profopt_ci.gc_pause import paused
from profopt_ci.specfile.checks import checked
from profopt_ci.specfile.guard import check_nesting, read_capped
from profopt_ci.specfile.model import (
    Benchmark,
    Constraint,
    Settings,
    Spec,
    parse_instrument,
    parse_percent,
    resolve,
    resolve_settings,
)
from profopt_ci.specfile.schema import schema
from profopt_ci.specfile.yamlnodes import compose, construct

__all__ = ["SPEC_NAMES", "find_spec", "load_spec", "parse_spec", "schema", "Benchmark", "Constraint", "Settings",
           "Spec", "parse_instrument", "parse_percent", "resolve_settings"]
SPEC_NAMES = ("profopt.yml", "profopt.yaml")


def find_spec(path: str | Path | None, cwd: Path | None = None) -> Path:
    """The spec the user named, else profopt.yml / profopt.yaml in cwd."""
    base = cwd or Path.cwd()
    if path is not None:
        p = Path(path)
        return p if p.is_absolute() else base / p
    for name in SPEC_NAMES:
        if (base / name).is_file():
            return base / name
    raise UsageError(f"no spec found: {base / SPEC_NAMES[0]} does not exist — pass --spec FILE")


def load_spec(path: str | Path, *, display: str | None = None) -> Spec:
    """Read, check and resolve a spec. `display` is the name used in messages (default: the path)."""
    p = Path(path)
    shown = display or str(path)
    text = read_capped(p, shown)
    return parse_spec(text, shown, path=p)


def parse_spec(text: str, shown: str, *, path: Path | None = None) -> Spec:
    with paused():  # millions of live nodes: GC passes would make this quadratic
        check_nesting(text, shown)
        node = compose(text, shown)
        data = construct(node, text, shown)
        return resolve(checked(data, node, shown), data, path or Path(shown))
