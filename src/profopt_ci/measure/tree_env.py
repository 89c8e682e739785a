"""The current tree's setup environment, as compare builds a side's, cached for `validate`.

In: a spec with `setup`, the tree it runs in, a log. Out: a `Side` whose interpreter is a venv made
as compare makes each side's (checkouts.make_venv: what setup installs plus profopt's worker) with
the spec's setup run in the tree, then the suites' runners the setup did not install
(measure/suite_runner.py). The venv is kept under the cache directory
(`$PROFOPT_CACHE_DIR`, else `$XDG_CACHE_HOME/profopt`, else `~/.cache/profopt`) and reused while its
key holds: the interpreter, the setup commands, the spec's `env`, and the contents of the files the
setup reads — requirement and constraint files it names (`-r`, `-c`), any file it names, and for
each directory it installs (`.`, `.[extra]`, `-e ./pkg`, `-e '.[extra]'`) that project's
pyproject.toml, setup.py, setup.cfg, requirements*.txt and lock files. An editable install sees later edits of the tree; a plain
`pip install .` keeps the copy it made until a key file changes.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from profopt_ci.measure.checkouts import make_venv, venv_env
from profopt_ci.measure.processes import Side, command_words
from profopt_ci.measure.suite_runner import add_runners, kinds_of, set_up
from profopt_ci.specfile.model import Spec

READY = ".profopt-ready"
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
_FILE_FLAGS = ("-r", "--requirement", "-c", "--constraint", "--find-links", "-f")
_EDITABLE = ("-e", "--editable")
_EXTRAS = re.compile(r"\[[^\]]*\]$")


def cache_root() -> Path:
    if os.environ.get("PROFOPT_CACHE_DIR"):
        return Path(os.environ["PROFOPT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "profopt"


def read_files(commands: list[str], root: Path) -> list[Path]:
    """The files the setup commands read, as far as their words tell: existing files they name,
    the files after -r / -c, and each installed project directory's dependency files."""
    found: dict[Path, None] = {}
    for command in commands:
        words = command_words(command)
        for i, word in enumerate(words):
            flag, eq, value = word.partition("=")
            candidates = [value] if eq and flag in _FILE_FLAGS + _EDITABLE else [word]
            if i and words[i - 1] in _FILE_FLAGS:
                candidates = [word]
            if word.startswith("-e") and len(word) > 2 and word[2] not in "=-":  # -e.[bench]
                candidates = [word[2:]]
            for cand in [_EXTRAS.sub("", c) for c in candidates]:  # `.[bench]`: the project in `.`
                if not cand:
                    continue
                path = (root / cand) if not os.path.isabs(cand) else Path(cand)
                if path.is_file():
                    found[path.resolve()] = None
                elif path.is_dir() and cand not in ("/",):
                    for name in PROJECT_FILES:
                        if (path / name).is_file():
                            found[(path / name).resolve()] = None
                    for req in sorted(path.glob("requirements*.txt")):
                        found[req.resolve()] = None
    return list(found)


def env_key(spec: Spec, root: Path) -> tuple[str, list[Path]]:
    """The cache key of the tree's setup environment, and the files that went into it."""
    files = read_files(list(spec.setup), root)
    h = hashlib.sha256()
    h.update(json.dumps({"python": [sys.version, getattr(sys, "_base_executable", sys.executable)],
                         "setup": list(spec.setup), "env": dict(sorted(spec.env.items())),
                         "root": str(root.resolve())}).encode())
    for f in files:
        h.update(str(f).encode() + b"\0")
        try:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()[:16], files


def tree_environment(spec: Spec, root: Path, log: Callable[[str], None]) -> Side:
    """The tree's setup environment (built now, or reused from the cache); an InfraError (exit 3)
    with the setup's own output when the setup fails, and nothing is kept of it then."""
    key, files = env_key(spec, root)
    where = cache_root() / "envs" / key
    where.parent.mkdir(parents=True, exist_ok=True)
    with open(where.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two validates at once build it once
        python = where / "bin" / "python"
        shown = ", ".join(os.path.relpath(f, root) for f in files) or "no files"
        if (where / READY).is_file() and python.exists():
            log(f"profopt: setup environment reused: {where} (key: the setup, {shown})")
            side = Side(name="tree", root=root, python=str(python), env=venv_env(where))
            add_runners(spec, side, log, kinds_of([spec]))  # a suite kind the spec gained since
            return side
        log(f"profopt: building the setup environment {where} (key: the setup, {shown})")
        shutil.rmtree(where, ignore_errors=True)
        python_s, env = make_venv(where)
        side = Side(name="tree", root=root, python=python_s, env=env)
        try:
            set_up(spec, side, log, kinds_of([spec]))
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise
        (where / READY).write_text(json.dumps({"setup": list(spec.setup), "files": [str(f) for f in files]}))
        return side
