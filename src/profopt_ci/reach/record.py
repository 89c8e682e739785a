"""A benchmark's reach record, and what of it a tree changes.

In: what the benchmark's process recorded (harness/reach.py: absolute paths), the tree it ran
(reach/trees.py: the base's commit with the head's suite laid over it), the checkout and venv it ran
in. Out: `Record` — self-contained, so it can be kept and checked against any later tree: for each
file of the checkout whose code ran, the file's blob id and the fingerprints of the module unit and
of each function unit that ran (reach/units.py); each file it read (blob id); the tracked names of
each directory its code listed; for each directory imports searched, the files that would answer
each module name it looked up there; the checkout's files it used that git does not track (made by
the setup); and `unknown` where the process did something a record cannot follow.

`changes(record, tree)`: what in `tree` differs from the record's own tree, in the units, files,
listings and imports the benchmark used — empty when `tree` runs the benchmark as the record's did.
A benchmark is measured when the head's tree changes something its record holds; a kept record is
reused for a base whose tree changes nothing of it (reach/cache.py).
"""
from __future__ import annotations

import os
from pathlib import Path

import msgspec

from profopt_ci.reach.trees import Tree, blob_id
from profopt_ci.reach.units import MODULE, Units, units_of

VERSION = 2  # 2: a suite item's env is the record process's (records of 1 may hold an installed copy's code)
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")
# the names pytest's collection reads in a directory it walks past on its way to the test
PYTEST_OWN = ("conftest.py", "__init__.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


class CodeFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    blob: str
    module: str | None  # the module unit's fingerprint, where the file was imported or its body ran
    units: dict[str, str]  # function units that ran: qualname → fingerprint


class Record(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version: int = VERSION
    benchmark: str
    identity: str  # what was recorded (reach/cache.py): the benchmark's definition, setup, interpreter
    commit: str  # the tree it ran: this commit …
    overlays: list[tuple[str, str]] = []  # … with these paths as those commits have them
    code: dict[str, CodeFile] = {}
    opened: dict[str, str | None] = {}  # path → blob id (None: not in the tree — missing, or made by the setup)
    listed: dict[str, list[str]] = {}  # directory → its tracked names
    walked: dict[str, list[str]] = {}  # directory pytest collected through → its names pytest reads (PYTEST_OWN)
    imports: dict[str, dict[str, list[str]]] = {}  # directory → {module name looked up: files answering it}
    untracked: list[str] = []  # the checkout's files it used that git does not track
    unknown: str | None = None  # why its reach cannot be known (harness/reach.py's causes)
    failed: str | None = None  # the record's own run failed: its error
    steps: int = 0
    seconds: float = 0.0
    env: dict[str, str | None] = {}  # the files that build the environment (reach/environment.py) → blob id
    answer: dict | None = None  # a suite's collection: what its collector answered (the benchmarks it found)


def build(raw: dict, *, benchmark: str, identity: str, tree: Tree, top: Path, venv: str | None,
          env: dict[str, str | None], seconds: float, answer: dict | None = None) -> Record:
    """A record from the worker's raw record (absolute paths under `top`, the checkout it ran in, or
    `venv`, the side's venv: a file there whose bytes are one of the tree's is that file — an
    installed copy of the project — and any other file there is a dependency both sides share)."""
    where = _Places(tree, top, venv)
    modules = {p for p in (where.rel(m) for m in raw.get("modules") or []) if p}
    ran: dict[str, set[tuple[int, str]]] = {}
    for path, codes in (raw.get("code") or {}).items():
        rel = where.rel(path)
        if rel:
            ran.setdefault(rel, set()).update((int(line), str(name)) for line, name in codes)
    untracked = set()
    code: dict[str, CodeFile] = {}
    sources = tree.read([p for p in sorted(ran.keys() | modules) if p in tree.entries])
    for rel in sorted(ran.keys() | modules):
        if rel not in tree.entries:
            untracked.add(rel)
            continue
        units = units_of(sources[rel])
        # a module's own code object starts at line 1 (or 0), where a function may start too
        names = {MODULE if name == MODULE or not units else units.unit_at(line) for line, name in ran.get(rel, ())}
        if rel in modules:
            names.add(MODULE)
        code[rel] = _code_file(tree.entries[rel], units, names)
    opened: dict[str, str | None] = {}
    for path in raw.get("opened") or []:
        rel = where.rel(path)
        if rel:
            opened[rel] = tree.blob(rel)
            if opened[rel] is None and os.path.exists(path) and not metadata(rel):  # made by the setup
                untracked.add(rel)
    listed = {d: sorted(tree.names(d)) for d in sorted({where.rel(p, dirs=True) for p in raw.get("listed") or []} - {None})}
    walked = {d: _own(tree, d) for d in sorted({where.rel(p, dirs=True) for p in raw.get("walked") or []} - {None})}
    imports = _imports(raw, where, tree)
    return Record(benchmark=benchmark, identity=identity, commit=tree.commit, overlays=[tuple(o) for o in tree.overlays],
                  code=code, opened=opened, listed=listed, walked=walked, imports=imports, untracked=sorted(untracked),
                  unknown=raw.get("unknown"), failed=raw.get("failed"), steps=int(raw.get("steps") or 0),
                  seconds=round(seconds, 3), env=env, answer=answer)


def metadata(rel: str) -> bool:
    """A file the setup made that says what the project is, not what it runs: an editable install's
    `*.egg-info`/`*.dist-info` (made from pyproject.toml or setup.cfg, which reach/environment.py
    gates, and the version the commit gives it) and the checkout's `.git` pointer. Only a step that
    times its own version string or commit id depends on them (docs/reach.md says so)."""
    parts = rel.split("/")
    return parts[0] == ".git" or any(p.endswith((".egg-info", ".dist-info")) for p in parts[:-1])


def _own(tree: Tree, directory: str) -> list[str]:
    return sorted(n for n in tree.names(directory) if n in PYTEST_OWN)


def _code_file(blob: str, units: Units | None, names: set[str]) -> CodeFile:
    if units is None:  # it does not parse (a file Python 2 would run?): the file is the unit
        return CodeFile(blob=blob, module=None, units={})
    return CodeFile(blob=blob, module=units.module if MODULE in names else None,
                    units={n: units.functions[n] for n in sorted(names - {MODULE}) if n in units.functions})


def _imports(raw: dict, where: _Places, tree: Tree) -> dict[str, dict[str, list[str]]]:
    """For each directory imports searched in the checkout: the module names looked up there (a
    sys.path directory's top-level names, a package directory's submodules) and the tracked files
    that would answer each — a module added, removed or shadowing one changes that list."""
    looked = [n for n in raw.get("looked_up") or [] if isinstance(n, str)]
    out: dict[str, dict[str, list[str]]] = {}
    for path, prefix in (raw.get("import_dirs") or {}).items():
        rel = where.rel(path, dirs=True)
        if rel is None:
            continue
        names = sorted({n[len(prefix):] for n in looked if n.startswith(prefix) and n[len(prefix):]
                        and "." not in n[len(prefix):]})
        out[rel] = {n: answering(tree, rel, n) for n in names}
    return out


def answering(tree: Tree, directory: str, name: str) -> list[str]:
    """The tracked files in `directory` an import of `name` would find: a package, a module, an extension."""
    base = f"{directory}/{name}" if directory else name
    found = [p for p in (f"{base}/__init__.py", f"{base}.py", f"{base}.pyc") if p in tree.entries]
    found += sorted(f"{directory}/{n}" if directory else n for n in tree.names(directory)
                    if n.startswith(name + ".") and n.endswith(NATIVE_SUFFIXES))
    return found


class _Places:
    """Absolute paths of the record → paths in the tree (None: neither the checkout nor the project's copy)."""

    def __init__(self, tree: Tree, top: Path, venv: str | None) -> None:
        self.tree, self.top = tree, os.path.realpath(top)
        self.venv = os.path.realpath(venv) if venv else None
        self._by_blob: dict[str, str] | None = None

    def rel(self, path: str, *, dirs: bool = False) -> str | None:
        real = os.path.realpath(path)
        if real == self.top:
            return ""
        if real.startswith(self.top + os.sep):
            return os.path.relpath(real, self.top).replace(os.sep, "/")
        if dirs or not self.venv or not real.startswith(self.venv + os.sep):
            return None
        return self._installed(real)

    def _installed(self, real: str) -> str | None:
        """A file of the venv that is a copy of one of the tree's (`pip install .` of the project)."""
        if self._by_blob is None:
            self._by_blob = {}
            names = {os.path.basename(p) for p in self.tree.entries}
            self._names = names
            for p, sha in self.tree.entries.items():
                self._by_blob.setdefault(sha, p)
        if os.path.basename(real) not in self._names:
            return None
        try:
            data = Path(real).read_bytes()
        except OSError:
            return None
        return self._by_blob.get(blob_id(data))


def changes(record: Record, tree: Tree) -> list[str]:
    """What `tree` changes of what the record's benchmark used, as `file:unit`, a file, or a directory
    with the names added or removed there; [] when it runs as the record's tree did."""
    out: list[str] = []
    now = tree.read([p for p, f in record.code.items() if tree.blob(p) not in (None, f.blob)])
    for path, f in record.code.items():
        blob = tree.blob(path)
        if blob == f.blob:
            continue
        if blob is None:
            out.append(f"{path} (removed)")
            continue
        units = units_of(now[path])
        if units is None or f.module is None and not f.units:
            out.append(path)
            continue
        if f.module is not None and units.module != f.module:
            out.append(f"{path}:{MODULE}")
        out += [f"{path}:{name}" for name, fp in f.units.items() if units.functions.get(name) != fp]
    untracked = set(record.untracked)
    for path, blob in record.opened.items():
        if path not in untracked and tree.blob(path) != blob:  # edited, removed, or added where it was missing
            out.append(path if blob is not None and tree.blob(path) is not None else
                       f"{path} ({'removed' if blob is not None else 'added'})")
    for directory, names in record.listed.items():
        got = sorted(tree.names(directory))
        if got != names:
            out.append(_listing(directory, names, got))
    for directory, names in record.walked.items():
        got = _own(tree, directory)
        if got != names:
            out.append(_listing(directory, names, got))
    for directory, looked in record.imports.items():
        for name, files in looked.items():
            got = answering(tree, directory, name)
            if got != files:
                out.append(f"{_slash(directory)}{name} (import: {', '.join(got) or 'no longer in the tree'})")
    return out


def _slash(directory: str) -> str:
    return f"{directory}/" if directory else ""


def _listing(directory: str, before: list[str], after: list[str]) -> str:
    added, removed = sorted(set(after) - set(before)), sorted(set(before) - set(after))
    said = [*(f"+{n}" for n in added[:3]), *(f"-{n}" for n in removed[:3])]
    more = len(added) + len(removed) - len(said)
    return f"{_slash(directory) or './'} (listed: {' '.join(said)}{f' +{more} more' if more > 0 else ''})"


def encode(record: Record) -> bytes:
    return msgspec.json.encode(record)


def decode(data: bytes) -> Record | None:
    """A kept record, or None when it is not one this version of profopt wrote."""
    try:
        record = msgspec.json.decode(data, type=Record)
    except msgspec.DecodeError:
        return None
    return record if record.version == VERSION else None
