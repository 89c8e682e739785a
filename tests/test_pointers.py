"""Every module, file and name the tree's own words point at exists.

The docstrings and comments of src/, docs/*.md, README.md and pyproject.toml name modules
(`profopt_ci.measure.rounds`, `analyze.decide`, `measure.cpus.describe`) and files
(`documents/read.py`, `tests/test_layers.py`, `docs/accuracy.md`); a rename leaves them pointing at
nothing. This reads every such pointer and checks it against the tree: a module is a file or a
package, a name after a module is defined at its top level. docs/layout.md lists every module of
src/profopt_ci, and every module it lists exists.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from profopt_ci.words.i18n import EN

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "profopt_ci"
STAGES = sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").exists())
# Names that read like `stage.name` but are files profopt writes or reads, not modules.
FILES = re.compile(r"\.(md|html|json|yml|yaml|txt|svg|css|js|j2|toml|png|log|out)\b")
DOTTED = re.compile(r"(?<![\w./-])(?:profopt_ci\.)?(?:" + "|".join(STAGES) + r")(?:\.[A-Za-z_]\w*)+")
SLASHED = re.compile(r"(?<![\w./-])(?:" + "|".join(STAGES) + r")(?:/\w+)+(?:\.[A-Za-z_]\w*)+")  # measure/worker.with_step
FULL = re.compile(r"(?<![\w./-])profopt_ci(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w.-])(?:[\w.-]+/)+[\w-]+\.py\b|(?<![\w./-])(?:docs/)?[\w-]+\.md\b(?!\.)")
# A path is ours when it starts here; others (rich/cells.py, torch/version.py) are other projects'.
OURS = {*STAGES, "src", "profopt_ci", "tests", "bench", "docs", "examples", ".ci"}
# Files of a user's repository the docs give as examples, and files profopt writes.
EXAMPLES = {"tests/bench/test_x.py", "bench/train.py", "bench/bench_json.py", "bench/callables.py", "bench/test_benchmarks.py",
            "bench/test_attrs_collections.py", "bench/test_attrs_primitives.py", "bench/test_primitives.py",
            "report.md", "bisect.md", "r.md"}


def prose_of_python(path: Path) -> str:
    """A module's docstrings and comments: the words, not the code (a variable `report.write_text`
    is no pointer)."""
    source = path.read_text(encoding="utf-8")
    parts = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            parts.append(doc or "")
    return "\n".join(parts)


def sources() -> dict[str, str]:
    out = {str(p.relative_to(ROOT)): prose_of_python(p) for p in sorted(PKG.rglob("*.py"))}
    for p in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "pyproject.toml"]:
        out[str(p.relative_to(ROOT))] = p.read_text(encoding="utf-8")
    return out


@cache
def top_names(path: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


def dotted_exists(name: str) -> bool:
    """`[profopt_ci.]stage.module[.name…]`: a package or module, then a name it defines."""
    parts = name.removeprefix("profopt_ci.").split(".")
    here = PKG
    for i, part in enumerate(parts):
        if (here / part / "__init__.py").exists():
            here = here / part
            continue
        if (here / f"{part}.py").exists():
            rest = parts[i + 1:]
            return not rest or rest[0] in top_names(here / f"{part}.py")
        return part in top_names(here / "__init__.py")
    return True


def path_exists(path: str) -> bool:
    if path in EXAMPLES or path.split("/")[0] not in OURS | {path}:
        return True
    if "/" not in path:  # a file named alone (VENDORED.md, profile.py): one of that name in the tree
        return any(p for p in ROOT.rglob(path) if ".venv" not in p.parts)
    return any((base / path).exists() for base in (ROOT, ROOT / "src", PKG))


def pointers(text: str) -> set[tuple[str, str]]:
    found = set()
    for m in DOTTED.finditer(text):
        if text.startswith(".*", m.end()) or any(k.startswith(m.group() + ".") for k in EN):
            continue  # a catalog key or its prefix (`action.cause.*`), not a module
        if not FILES.match(text, m.end()) and not FILES.search(m.group()):
            found.add(("module", m.group().rstrip(".")))
    for m in SLASHED.finditer(text):
        if not FILES.search(m.group()) and not m.group().endswith(".py"):
            found.add(("module", m.group().replace("/", ".")))
    for m in FULL.finditer(text):
        found.add(("module", m.group().rstrip(".")))
    for m in PATH.finditer(text):
        found.add(("path", m.group()))
    return found


def stale(texts: dict[str, str]) -> list[str]:
    out = []
    for where, text in texts.items():
        for kind, name in sorted(pointers(text)):
            if not (dotted_exists(name) if kind == "module" else path_exists(name)):
                out.append(f"{where}: {name}")
    return out


def test_every_pointer_names_something_that_exists():
    assert stale(sources()) == []


def test_a_stale_pointer_is_found():
    text = ('"""Made by `profopt_ci.cli.main`, see pipeline.compare and analyze.looks.schedule, '
            'suites/inworker.run, documents/fast.py and docs/design.md; analyze.decide.decide_benchmark is fine."""\n')
    assert sorted(stale({"x.py": text})) == ["x.py: analyze.looks.schedule", "x.py: docs/design.md",
                                     "x.py: documents/fast.py", "x.py: pipeline.compare",
                                     "x.py: profopt_ci.cli.main", "x.py: suites.inworker.run"]


def layout_modules() -> set[str]:
    """The modules, packages and folders docs/layout.md's tree names: `name.py` at the top,
    `pkg/`, and a module (or `folder/`) per line under its package."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    tree = text[text.index("```\nprofopt_ci/\n"):]
    tree = tree[:tree.index("\n```", 4)]
    out, pkg = set(), None
    for line in tree.splitlines()[2:]:
        if m := re.match(r"  ([\w.]+\.py)\s", line):
            out.add(m.group(1))
        elif m := re.match(r"  (\w+)/(?:\s|$)", line):
            pkg = m.group(1)
            out.add(f"{pkg}/")
        elif m := re.match(r"    (\w+/?)(?:\s|$)", line):
            out.add(f"{pkg}/{m.group(1)}" + ("" if m.group(1).endswith("/") else ".py"))
    return out


def tree_modules() -> set[str]:
    """The same names read from src/profopt_ci: top-level modules, packages (and schema/), each
    package's modules and data folders (not `__init__.py`, not caches)."""
    out = set()
    for p in PKG.iterdir():
        if p.is_file() and p.suffix == ".py":
            out.add(p.name)
        elif p.is_dir() and p.name != "__pycache__":
            out.add(f"{p.name}/")
            out |= {f"{p.name}/{c.name}" for c in p.glob("*.py") if c.name != "__init__.py"}
            if (p / "__init__.py").exists():
                out |= {f"{p.name}/{c.name}/" for c in p.iterdir() if c.is_dir() and c.name != "__pycache__"}
    return out


def test_docs_layout_lists_every_module_and_only_those():
    listed, there = layout_modules(), tree_modules()
    assert sorted(there - listed) == [], "in src/profopt_ci but not in docs/layout.md"
    assert sorted(listed - there) == [], "in docs/layout.md but not in src/profopt_ci"
