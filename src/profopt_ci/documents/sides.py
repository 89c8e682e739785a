"""`profopt/sides@1` (`profopt-sides.json`): the checkouts `compare --phase setup` prepared, handed to
`compare --phase measure` — across the container boundary in the Action's two-job flow.

In: the workspace's repository, each prepared side (name, worktree root, Python, env, ref, commit)
and the sides whose setup failed. Out: the sides@1 (`build`, the frozen `Sides`), saved in the workdir, and
`load_sides`, the version-checked reader (documents.read + `schema/sides.schema.json`): a file from
another profopt version, a hand-edited or a truncated one is an exit-2 error naming the field,
never a half-restored workspace.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profopt_ci.documents.names import SIDES_SCHEMA
from profopt_ci.documents.read import load_json
from profopt_ci.documents.results import construct
from profopt_ci.documents.types_stored import Sides

STATE_FILE = "profopt-sides.json"


def side_record(*, name: str, root: Path | str, python: str, env: dict[str, str], ref: str | None,
                commit: str) -> dict[str, Any]:
    """One prepared side: where its checkout is and how to run it."""
    return {"name": name, "root": str(root), "python": python, "env": dict(env), "ref": ref, "commit": commit}


def build(repo: Path | str, sides: list[dict[str, Any]], setup_failures: dict[str, str]) -> Sides:
    """The whole hand-off, the frozen `Sides`: `sides` from `side_record`, `setup_failures` {side: error}."""
    return construct({"schema": SIDES_SCHEMA, "repo": str(repo), "sides": sides,
                      "setup_failures": dict(setup_failures)}, Sides)


def load_sides(path: Path | str) -> dict[str, Any]:
    """Read a sides@1 file (a UsageError names the file and the bad field)."""
    return load_json(path, SIDES_SCHEMA)
