"""No function in measure/ or pipeline/ takes more than MAX_PARAMETERS (issue 40 §2).

What a round or a verb needs travels in one frozen context or options struct (measure.rounds.
RoundContext, lockstep.Round, pipeline.compare_refs.CompareOptions, …), built once, so no signature
threads a dozen values down to the function that reads one of them.
"""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "profopt_ci"
PACKAGES = ("measure", "pipeline")
MAX_PARAMETERS = 7


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    """Positional, keyword-only, *args and **kwargs; a method's self or cls is not one."""
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args)]
    count = len(names) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return count - 1 if names and names[0] in ("self", "cls") else count


def over_limit(root: Path) -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    n = parameters(node)
                    if n > MAX_PARAMETERS:
                        name = getattr(node, "name", "<lambda>")
                        out.append(f"{path.relative_to(root)}:{node.lineno} {name} takes {n}")
    return out


def test_no_function_in_measure_or_pipeline_takes_more_than_seven_parameters():
    assert over_limit(SRC) == []


def test_the_count_sees_every_kind_of_parameter(tmp_path):
    """The check can fail: eight parameters of every kind are counted, a method's self is not."""
    (tmp_path / "measure").mkdir()
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "measure" / "m.py").write_text(
        "def f(a, /, b, *c, d, e=1, **f): ...\n"
        "def g(a, b, c, d, e, f, g, *, h): ...\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g): ...\n")
    (tmp_path / "pipeline" / "p.py").write_text("h = lambda a, b, c, d, e, f, g, h: None\n")
    assert over_limit(tmp_path) == ["measure/m.py:2 g takes 8", "pipeline/p.py:1 <lambda> takes 8"]
