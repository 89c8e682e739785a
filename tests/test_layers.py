"""The import rule of docs/layout.md, read from the code's own imports: no module imports from a stage
above its own, and no two modules import each other, directly or in a loop.

Imports under `if TYPE_CHECKING:` name types only and are left out; a function-level (lazy) import is
an import like any other. `profopt_ci/__init__.py` (the public façade: `profopt_ci.phase`,
`record`, the tutorial's names) and `__main__.py` are the package's doors, not a stage.
"""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = SRC / "profopt_ci"
# Bottom to top, as docs/layout.md lists them; "(top)" is the top-level helpers (errors, figures…).
STAGES = ["(top)", "words", "documents", "specfile", "harness", "profile", "measure", "suites", "reach", "analyze",
          "store", "report", "publish", "site", "action", "pipeline", "cli"]
DOORS = {"profopt_ci", "profopt_ci.__main__"}


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        out[".".join(parts).removesuffix(".__init__")] = path
    return out


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (ROOT / parts[1]).is_dir()) else "(top)"


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The profopt_ci modules a file imports (a package's name when the name is not a module)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("profopt_ci"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("profopt_ci"))
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imported(p, known) & set(known) for m, p in known.items() if m not in DOORS}


def test_every_stage_is_listed():
    assert {stage(m) for m in modules()} <= set(STAGES)


def test_no_module_imports_from_a_stage_above_its_own():
    up = sorted(f"{m} → {t}" for m, targets in graph().items() for t in targets
                if STAGES.index(stage(t)) > STAGES.index(stage(m)))
    assert up == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_two_modules_import_each_other():
    assert cycles(graph()) == []


def test_the_checks_see_a_loop_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert STAGES.index(stage("profopt_ci.report.view")) > STAGES.index(stage("profopt_ci.words.i18n"))
    assert stage("profopt_ci.errors") == "(top)" and stage("profopt_ci.words") == "words"
