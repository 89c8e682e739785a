"""The files that build a side's environment: a change to one of them reaches every benchmark.

In: a tree (reach/trees.py), the spec's setup commands and the spec's directory in the tree. Out:
{path: blob id} of each tracked file the setup builds the environment from — the files its commands
name (requirement and constraint files, `-e ./pkg`, `.[extras]`), each installed project's
pyproject.toml, setup.py, setup.cfg, requirements*.txt and lock files, the spec directory's and the
repository's own, and every native source and native build file (C, C++, Cython, Rust, Fortran,
CUDA; CMake, Meson, Cargo): what `pip install` compiles. Without `setup` a side runs in profopt's
own environment and nothing is built: then only the code's own reach counts.
"""
from __future__ import annotations

import posixpath
import re

from profopt_ci.measure.processes import command_words
from profopt_ci.reach.trees import Tree

PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "uv.lock", "poetry.lock", "pdm.lock",
                 "Pipfile", "Pipfile.lock", "environment.yml", "conda-lock.yml")
NATIVE_SOURCES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".pyx", ".pxd", ".pxi", ".rs", ".f",
                  ".f90", ".f95", ".cu", ".cuh", ".m", ".mm")
NATIVE_BUILD = ("CMakeLists.txt", "meson.build", "meson_options.txt", "Cargo.toml", "Cargo.lock", "build.rs",
                "Makefile", "setup.py")
_FILE_FLAGS = ("-r", "--requirement", "-c", "--constraint")
_EXTRAS = re.compile(r"\[[^\]]*\]$")


def env_files(tree: Tree, setup: list[str], spec_dir: str) -> dict[str, str | None]:
    """{path: blob id} of the files that build the environment (empty without setup)."""
    if not setup:
        return {}
    wanted: set[str] = set()
    for directory in {"", spec_dir}:
        wanted |= _project(tree, directory)
    for command in setup:
        wanted |= _named(tree, command, spec_dir)
    for path in tree.entries:
        name = posixpath.basename(path)
        if path.endswith(NATIVE_SOURCES) or name in NATIVE_BUILD:
            wanted.add(path)
    return {p: tree.blob(p) for p in sorted(wanted)}


def _project(tree: Tree, directory: str) -> set[str]:
    names = tree.names(directory)
    found = {n for n in names if n in PROJECT_FILES or (n.startswith("requirements") and n.endswith(".txt"))}
    return {posixpath.join(directory, n) if directory else n for n in found}


def _named(tree: Tree, command: str, spec_dir: str) -> set[str]:
    """The tracked files and project directories the words of one setup command name."""
    words = command_words(command)
    out: set[str] = set()
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        cand = value if eq and flag in _FILE_FLAGS else word
        if i and words[i - 1] in _FILE_FLAGS:
            cand = word
        cand = _EXTRAS.sub("", cand)  # `.[bench]`: the project in `.`
        if not cand or cand.startswith("-") or posixpath.isabs(cand) or "://" in cand:
            continue
        path = posixpath.normpath(posixpath.join(spec_dir, cand)) if spec_dir else posixpath.normpath(cand)
        path = "" if path == "." else path
        if path.startswith(".."):
            continue
        if path in tree.entries:
            out.add(path)
        elif path == "" or tree.names(path):
            out |= _project(tree, path)
    return out


def changed_env(base: dict[str, str | None], head: dict[str, str | None]) -> list[str]:
    """The environment's files that differ between two sides (added, removed or edited)."""
    return sorted(p for p in base.keys() | head.keys() if base.get(p) != head.get(p))
