"""The YAML layer of the spec checks: text → composed node graph → plain data, and back to a position.

In: the spec's text and the name to show. Out: the composed `yaml.Node` (aliases walked once and
bounded, duplicate keys refused: specfile/guard.py), the plain Python data it constructs to, and
`FILE:LINE:COL` for any node or JSON path; a YAML problem is a `SpecError` pointing at its mark.
"""
from __future__ import annotations

from typing import Any

import yaml

from profopt_ci.errors import SpecError
from profopt_ci.specfile.guard import LOADER, check_graph


def where(shown: str, mark: yaml.Mark | None) -> str:
    if mark is None:
        return f"{shown}:1:1"
    return f"{shown}:{mark.line + 1}:{mark.column + 1}"


def compose(text: str, shown: str) -> yaml.Node | None:
    try:
        node = yaml.compose(text, Loader=LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        raise SpecError([f"{where(shown, mark)}: YAML syntax error: {what} — expected valid YAML"]) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"{shown}:1:1: YAML error: {exc} — expected valid YAML"]) from None
    if node is not None:
        # aliases walked once, bounded in expansion and depth; duplicate keys compared by value
        problems = check_graph(node, shown)
        if problems:
            raise SpecError(problems)
    return node


def construct(node: yaml.Node | None, text: str, shown: str) -> Any:
    if node is None:
        raise SpecError([f"{shown}:1:1: the spec is empty — expected `version: 1` and a `benchmarks` list"])
    try:
        return yaml.SafeLoader("").construct_document(node)  # the node already composed: no second parse
    except yaml.YAMLError as exc:  # constructor errors (bad tags) that compose let through
        mark = getattr(exc, "problem_mark", None)
        raise SpecError([f"{where(shown, mark)}: YAML error: {exc} — expected plain YAML values"]) from None
    except ValueError as exc:  # an integer of 4,300+ digits (int() refuses to convert it)
        raise SpecError([f"{shown}:1:1: a value cannot be read ({str(exc)[:200]}) — expected plain YAML values"]) from None


def node_at(node: yaml.Node | None, path: list[Any], *, key: bool = False) -> yaml.Node | None:
    """The YAML node at a JSON path; with key=True the key node of the last step."""
    cur = node
    for i, step in enumerate(path):
        last = i == len(path) - 1
        if isinstance(cur, yaml.MappingNode):
            for k, v in cur.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(step):
                    cur = k if (last and key) else v
                    break
            else:
                return cur
        elif isinstance(cur, yaml.SequenceNode) and isinstance(step, int) and step < len(cur.value):
            cur = cur.value[step]
        else:
            return cur
    return cur
