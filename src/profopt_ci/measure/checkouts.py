"""Base and head as two checkouts: refs resolved, a git worktree each, a virtual environment each.

In: the repository, the spec's path inside it, two refs. Out: two `Side`s ready to measure, whose
checkouts and environments are removed by `Workspace.close()` — also after Ctrl-C or a failure,
since callers hold the workspace in a `with` block. profopt fetches nothing: history that is too
shallow to find a merge-base is a user error that says what to fetch.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.documents import sides as sides_doc
from profopt_ci.documents.results import save_json
from profopt_ci.documents.sides import STATE_FILE
from profopt_ci.errors import SpecError, UsageError
from profopt_ci.gitutil import GitError, git
from profopt_ci.measure.processes import WORKER_DIR, Side
from profopt_ci.specfile.load import Spec, load_spec

DEFAULT_BRANCHES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")


def resolve_commit(repo: Path, ref: str) -> str:
    try:
        return git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo)
    except GitError:
        hint = _shallow_hint(repo)
        raise UsageError(f"cannot resolve `{ref}` to a commit in {repo}{hint}") from None


def _shallow_hint(repo: Path) -> str:
    if git(["rev-parse", "--is-shallow-repository"], repo, check=False) == "true":
        return (" — this clone is shallow: fetch more history (actions/checkout `fetch-depth: 0`, "
                "or `git fetch --unshallow`) and the base branch")
    return ""


def default_base(repo: Path, head: str) -> tuple[str, str]:
    """(label, sha): the merge-base of head with the default branch (origin/HEAD, origin/main, …)."""
    for candidate in DEFAULT_BRANCHES:
        if git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], repo, check=False):
            return candidate, merge_base(repo, candidate, head)
    raise UsageError(
        f"no default branch to compare with in {repo} (tried {', '.join(DEFAULT_BRANCHES)}) — pass --base REF"
        + _shallow_hint(repo)
    )


def resolve_refs(repo: Path, base_ref: str | None, head_ref: str | None, *, base_branch: str | None = None,
                 base_sha: str | None = None) -> dict[str, tuple[str | None, str]]:
    """{"base": (label, commit), "head": (label, commit)}. The base is `base_ref` when given; else the
    merge-base of head with `base_branch` (a PR's base branch: origin/<branch>, else <branch>), or
    `base_sha` (the branch tip the event saw) when the checkout lacks that branch; else the
    merge-base of head with the default branch."""
    head_label = head_ref or "HEAD"
    head = resolve_commit(repo, head_label)
    if base_ref:
        base = (base_ref, resolve_commit(repo, base_ref))
    elif base_branch:
        base = _pr_base(repo, head, base_branch, base_sha)
    else:
        label, sha = default_base(repo, head)
        base = (f"merge-base of {label}", sha)
    return {"base": base, "head": (head_label, head)}


def _pr_base(repo: Path, head: str, branch: str, sha: str | None) -> tuple[str, str]:
    # The event's base sha is the branch tip at event time, not the fork point: prefer the merge-base.
    for candidate in (f"origin/{branch}", branch):
        if git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], repo, check=False):
            return f"merge-base of {candidate}", merge_base(repo, candidate, head)
    if sha and git(["rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"], repo, check=False):
        return sha, sha
    raise UsageError(f"the PR's base branch {branch!r} is not in the checkout — use actions/checkout with "
                     "`fetch-depth: 0`" + _shallow_hint(repo))


def merge_base(repo: Path, a: str, b: str) -> str:
    try:
        return git(["merge-base", a, b], repo)
    except GitError:
        if git(["rev-parse", "--is-shallow-repository"], repo, check=False) == "true":
            raise UsageError(
                f"no merge-base of {a} and {b}: the clone is too shallow — fetch the history "
                "(actions/checkout `fetch-depth: 0`, or `git fetch --unshallow origin`)"
            ) from None
        raise UsageError(f"{a} and {b} share no history — pass --base REF explicitly") from None


@dataclass
class Workspace:
    """Worktrees and venvs of base and head under one directory, removed on close unless kept."""

    repo: Path
    root: Path
    keep: bool = False
    sides: list[Side] = field(default_factory=list)
    setup_failures: dict[str, str] = field(default_factory=dict)  # side name → why its setup failed
    _worktrees: list[Path] = field(default_factory=list)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.keep:
            return
        from profopt_ci.measure.proctree import interrupt_safe

        with interrupt_safe():  # a second Ctrl-C during cleanup would leak the worktrees
            for wt in self._worktrees:
                git(["worktree", "remove", "--force", str(wt)], self.repo, check=False)
            git(["worktree", "prune"], self.repo, check=False)
            shutil.rmtree(self.root, ignore_errors=True)

    def save_state(self) -> None:
        """The sides@1 hand-off to `--phase measure` (documents.sides)."""
        state = [sides_doc.side_record(name=s.name, root=s.root, python=s.python, env=s.env, ref=s.ref,
                                       commit=s.commit) for s in self.sides]
        save_json(sides_doc.build(self.repo, state, self.setup_failures), self.root / STATE_FILE)


OWNER_FILE = "profopt.pid"
_TEMP_PREFIX = "profopt-compare-"


def open_workspace(repo: Path, workdir: Path | None) -> Workspace:
    prune_stale(repo)
    if workdir is None:
        root = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX))
        (root / OWNER_FILE).write_text(str(os.getpid()))  # lets the next compare tell a live run from a dead one
        return Workspace(repo=repo, root=root)
    workdir.mkdir(parents=True, exist_ok=True)
    return Workspace(repo=repo, root=workdir.resolve(), keep=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_stale(repo: Path) -> list[Path]:
    """Remove worktrees a killed compare (kill -9, OOM) left in this repository: those in a
    `profopt-compare-*` directory whose owner process is gone. Live runs and --workdir are kept."""
    listing = git(["worktree", "list", "--porcelain"], repo, check=False)
    removed = []
    for line in listing.splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line[len("worktree "):])
        owner = path.parent / OWNER_FILE
        if not path.parent.name.startswith(_TEMP_PREFIX) or not owner.is_file():
            continue
        try:
            pid = int(owner.read_text().strip())
        except (OSError, ValueError):
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        git(["worktree", "remove", "--force", str(path)], repo, check=False)
        shutil.rmtree(path.parent, ignore_errors=True)
        removed.append(path)
    if removed:
        git(["worktree", "prune"], repo, check=False)
        print(f"profopt: removed {len(removed)} worktree(s) left by a killed compare", file=sys.stderr)
    return removed


def add_worktree(ws: Workspace, name: str, commit: str) -> Path:
    path = ws.root / name
    if path.exists():
        git(["worktree", "remove", "--force", str(path)], ws.repo, check=False)
        shutil.rmtree(path, ignore_errors=True)
    git(["worktree", "add", "--detach", "--force", str(path), commit], ws.repo)
    ws._worktrees.append(path)
    return path


WORKER_PTH = "_profopt_worker.pth"


def make_venv(path: Path) -> tuple[str, dict[str, str]]:
    """The side's own environment: a fresh venv holding what `python -m venv` puts there (pip, and
    setuptools where this Python bundles it), what setup installs, and profopt's worker — a `.pth`
    naming a directory that holds only `profopt_ci` (the worker imports nothing else) — and nothing
    else of profopt's environment: the side's pytest loads the project's plugins and pins, not
    profopt's (pytest-timeout, numpy 2 and pytest 9 of profopt's own broke a project pinned older).
    """
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(path)
    python = path / "bin" / "python"
    site = next((path / "lib").glob("python*/site-packages"))
    worker = path / WORKER_DIR
    worker.mkdir()
    (worker / "profopt_ci").symlink_to(PACKAGE_DIR, target_is_directory=True)
    lines = [str(worker)]
    if not seed_pip(site):
        borrowed = _own_pip()  # no bundled wheel (a distribution's Python without ensurepip): ours
        if borrowed is not None:
            (path / "profopt-pip").mkdir()
            (path / "profopt-pip" / "pip").symlink_to(borrowed, target_is_directory=True)
            lines.append(str(path / "profopt-pip"))
    (site / WORKER_PTH).write_text("\n".join(lines) + "\n")
    pip = path / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\nexec "{python}" -m pip "$@"\n')
    pip.chmod(0o755)
    (path / "bin" / "pip3").symlink_to("pip")
    return str(python), venv_env(path)


def venv_env(path: Path) -> dict[str, str]:
    """What a side's venv adds to its environment: itself, its bin first on PATH, and PATH without
    the bin directory of profopt's own venv (a side's `pytest` or `python` is its own)."""
    ours = str(Path(sys.executable).parent) if sys.prefix != sys.base_prefix else None
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != ours]
    return {"VIRTUAL_ENV": str(path), "PATH": os.pathsep.join([str(path / "bin"), *rest])}


PACKAGE_DIR = Path(__file__).resolve().parents[1]  # profopt_ci itself


def seed_pip(site: Path) -> bool:
    """The wheels `python -m venv` would install (ensurepip's, or a distribution's python-wheels),
    unpacked into `site`: pure wheels, so unpacking is installing them, a fraction of ensurepip's
    time a venv (it runs pip to install pip, and compiles every module; docs/experiments.md)."""
    import zipfile

    wheels = bundled_wheels()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
    return bool(wheels)


def bundled_wheels() -> list[Path]:
    """pip (and setuptools where bundled) as this interpreter's ensurepip carries them."""
    try:
        import ensurepip
    except ImportError:
        ensurepip = None
    dirs = [Path(ensurepip.__file__).parent / "_bundled"] if ensurepip is not None else []
    dirs.append(Path("/usr/share/python-wheels"))  # Debian's python3-venv
    for d in dirs:
        found = sorted(d.glob("pip-*-py3-none-any.whl"))
        if found:
            return [found[-1], *sorted(d.glob("setuptools-*-py3-none-any.whl"))[-1:]]
    return []


def _own_pip() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pip")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def side_spec(root: Path, rel_spec: Path) -> tuple[Spec | None, str | None]:
    """The side's own version of the spec, or None and why (the plan records it and runs the passed spec)."""
    path = root / rel_spec
    if not path.is_file():
        return None, f"no {rel_spec} in its checkout"
    try:
        return load_spec(path, display=f"{rel_spec} (at {root.name})"), None
    except SpecError as exc:
        return None, f"its {rel_spec} is invalid: {exc.problems[0] if exc.problems else exc}"
    except UsageError as exc:
        return None, f"its {rel_spec} cannot be read: {exc}"


def prepare_sides(
    ws: Workspace, spec: Spec, rel_spec: Path, refs: dict[str, tuple[str | None, str]]
) -> list[Side]:
    """Worktrees (and venvs when the spec has setup) for base and head; setup is run by the caller."""
    sides = []
    for name in ("base", "head"):
        label, commit = refs[name]
        tree = add_worktree(ws, name, commit)
        root = tree / rel_spec.parent
        python, env = sys.executable, {}
        own, problem = side_spec(root, Path(rel_spec.name))
        if (own or spec).setup:
            python, env = make_venv(ws.root / f"venv-{name}")
        side = Side(name=name, root=root, python=python, env=env, ref=label, commit=commit, spec=own,
                    spec_note=problem, spec_missing=not (root / rel_spec.name).is_file())
        sides.append(side)
    ws.sides = sides
    return sides


def load_state(ws: Workspace, spec: Spec, rel_spec: Path) -> list[Side]:
    """Sides prepared by an earlier `--phase setup` in the same workdir (the container flow)."""
    path = ws.root / STATE_FILE
    if not path.is_file():
        raise UsageError(f"{ws.root}: no prepared sides ({STATE_FILE} missing) — run `profopt compare --phase setup` first")
    data = sides_doc.load_sides(path)  # schema-checked: a foreign or broken file is exit 2, named
    sides = []
    for s in data["sides"]:
        own, problem = side_spec(Path(s["root"]), Path(rel_spec.name))
        side = Side(name=s["name"], root=Path(s["root"]), python=s["python"], env=s["env"], ref=s["ref"],
                    commit=s["commit"], spec=own, spec_note=problem,
                    spec_missing=not (Path(s["root"]) / rel_spec.name).is_file())
        sides.append(side)
        ws._worktrees.append(ws.root / s["name"])
    ws.sides = sides
    ws.setup_failures = dict(data.get("setup_failures") or {})
    return sides
