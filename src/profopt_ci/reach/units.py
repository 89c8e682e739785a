"""A Python source as code units: what a change to it can reach.

In: a file's bytes. Out: `Units` — the module unit's fingerprint (every module-level and class-level
statement, with each function's body left out), one fingerprint per function unit (a function or
method not nested in another function, keyed by its qualified name, its nested functions, lambdas
and comprehensions inside it), and each function unit's lines, which is how a code object that ran
(its first line) is mapped to the unit it belongs to.

Two sources whose units have equal fingerprints run the same: the fingerprints are the syntax
trees without positions (so lines that only moved are no change), comments (not in the tree) and
docstrings (the first string of a module, class or function body). None where a source does not
parse: then the file as a whole is what changed.
"""
from __future__ import annotations

import ast
import bisect
import hashlib
from dataclasses import dataclass, field

MODULE = "<module>"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BODIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)


@dataclass(frozen=True)
class Units:
    module: str  # the module unit's fingerprint
    functions: dict[str, str]  # qualname → fingerprint
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # (first line, last line, qualname), sorted

    def unit_at(self, line: int) -> str:
        """The unit a code object starting at `line` belongs to: the function unit whose lines hold
        it (decorators included), else the module (its body, a class body, a module-level lambda)."""
        # function units never nest, so the last one starting at or before the line is the only candidate
        i = bisect.bisect_right(self.spans, (line, float("inf"), "")) - 1
        if i >= 0 and self.spans[i][0] <= line <= self.spans[i][1]:
            return self.spans[i][2]
        return MODULE


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def units_of(source: bytes | str) -> Units | None:
    """The units of a source, or None where it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, _BODIES):
            _drop_docstring(node)
    found: list[tuple[str, ast.AST]] = []
    _collect(tree.body, "", found)
    functions: dict[str, str] = {}
    spans = []
    seen: dict[str, int] = {}
    for qualname, node in found:
        seen[qualname] = seen.get(qualname, 0) + 1
        key = qualname if seen[qualname] == 1 else f"{qualname}#{seen[qualname]}"  # a name defined twice
        functions[key] = fingerprint(ast.dump(node))
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans.append((start, node.end_lineno or node.lineno, key))
    bodies = [node.body for _, node in found]
    for _, node in found:
        node.body = [ast.Pass()]
    module = fingerprint(ast.dump(tree))
    for (_, node), body in zip(found, bodies, strict=True):
        node.body = body
    return Units(module=module, functions=functions, spans=sorted(spans))


def _drop_docstring(node: ast.AST) -> None:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]


def _collect(body: list[ast.stmt], prefix: str, found: list[tuple[str, ast.AST]]) -> None:
    """Function units in source order: functions at module level or in class bodies, at any depth of
    classes and of compound statements (a def under `if`/`try` is still a module-level def)."""
    for node in body:
        if isinstance(node, _FUNCTIONS):
            found.append((prefix + node.name, node))
        elif isinstance(node, ast.ClassDef):
            _collect(node.body, f"{prefix}{node.name}.", found)
        else:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, name, None)
                if isinstance(inner, list):
                    _collect([n for n in inner if isinstance(n, ast.AST)], prefix, found)


def changed_units(old: Units | None, new: Units | None, ran: set[str]) -> list[str]:
    """Which of the units that ran (`ran`, with MODULE where the file was imported or its body ran)
    differ between two versions of a file: a unit missing from `new` changed too. A version that
    does not parse changes everything that ran of it."""
    if old is None or new is None:
        return [MODULE]
    out = [MODULE] if MODULE in ran and old.module != new.module else []
    return out + [name for name in sorted(ran - {MODULE}) if old.functions.get(name) != new.functions.get(name)]
