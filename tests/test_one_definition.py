"""Each concept defined once (issue 40 §2): the decision order, a user's metric name → its key, the settings.

Read from src/ by AST, so a second copy fails here even when it agrees with the first today: two
definitions drift (the report once listed decisions in an order analyze did not define).
"""
from __future__ import annotations

import ast
from pathlib import Path

from profopt_ci.analyze import bisection, decide
from profopt_ci.report import view
from profopt_ci.specfile import keys

SRC = Path(__file__).resolve().parent.parent / "src" / "profopt_ci"
DECISION_NAMES = {row.name for row in decide.DECISIONS}
HOME_OF_DECISIONS = "analyze/decide.py"
HOME_OF_METRIC_NAMES = "specfile/keys.py"


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SRC).as_posix(), ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted(SRC.rglob("*.py"))]


def _string(node: ast.AST | None) -> str | None:
    """A literal string, or the first argument of a call that is one (a table row: `Row("keep", …)`)."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _decision_sequences(tree: ast.Module) -> list[tuple[int, list[str], ast.AST]]:
    """(line, the decision names in the order written, the literal) of every tuple, list or dict literal."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None]
        else:
            continue
        names = [s for s in map(_string, elts) if s in DECISION_NAMES]
        if names:
            out.append((node.lineno, names, node))
    return out


def test_decision_order_written_once():
    """No literal but analyze's table lists every decision in its precedence or its severity order."""
    orders = {tuple(decide.DECISION_ORDER), tuple(sorted(DECISION_NAMES, key=decide.SEVERITY.__getitem__))}
    found = [(path, line) for path, tree in _modules() for line, names, _ in _decision_sequences(tree)
             if tuple(names) in orders]
    assert [path for path, _ in found] == [HOME_OF_DECISIONS], found


def test_no_decision_ranked_outside_analyze():
    """A dict of decision names to numbers is a ranking: only analyze's table may hold one."""
    ranked = []
    for path, tree in _modules():
        for line, names, node in _decision_sequences(tree):
            numbers = isinstance(node, ast.Dict) and all(
                isinstance(v, ast.Constant) and isinstance(v.value, int) for v in node.values)
            if numbers and len(names) >= 2 and path != HOME_OF_DECISIONS:
                ranked.append((path, line))
    assert ranked == []


def test_report_lists_decisions_in_analyzes_order():
    """The report's order is the table's severity, whatever the table says."""
    assert view.SEVERITY is decide.SEVERITY
    benches = [{"name": f"b{i}", "decision": name} for i, name in enumerate(reversed(decide.DECISION_ORDER))]
    shown, unchanged = view.report_order(benches)
    by_severity = [row.name for row in sorted(decide.DECISIONS, key=lambda row: row.severity)]
    assert [b["decision"] for b in [*shown, *unchanged]] == by_severity
    assert [b["decision"] for b in unchanged] == [by_severity[-1]]


def test_overall_takes_the_table_precedence():
    for i, name in enumerate(decide.DECISION_ORDER):
        entries = [{"decision": later} for later in decide.DECISION_ORDER[i:]]
        assert decide.overall(entries[::-1]) == name


def test_decision_table_is_complete():
    """Every decision the documents allow has one row, distinct ranks, and its word in the catalogs."""
    from typing import get_args

    from profopt_ci.documents.types import Decision
    from profopt_ci.words.messages_en import EN
    from profopt_ci.words.messages_zh import ZH

    assert DECISION_NAMES == set(get_args(Decision))
    assert len(decide.DECISIONS) == len(DECISION_NAMES)
    for rank in ("precedence", "severity"):
        assert sorted(getattr(row, rank) for row in decide.DECISIONS) == list(range(len(DECISION_NAMES)))
    for row in decide.DECISIONS:
        assert row.message in EN and row.message in ZH, row


def _maps_a_user_name(node: ast.Dict) -> bool:
    """Whether a dict literal maps a metric as a user names it (`step_time`, `peak_memory`) to a key."""
    targets = {"step_time": "step_time_ms", "peak_memory": "peak_memory_mb"}
    for k, v in zip(node.keys, node.values, strict=True):
        key = _string(k)
        if key in targets and (_string(v) == targets[key] or isinstance(v, (ast.Name, ast.Attribute))):
            return True
    return False


def test_metric_name_map_written_once():
    found = [(path, node.lineno) for path, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Dict) and _maps_a_user_name(node)]
    assert [path for path, _ in found] == [HOME_OF_METRIC_NAMES], found


def test_bisect_takes_its_metric_names_from_the_map():
    tree = ast.parse((SRC / "analyze" / "bisection.py").read_text(encoding="utf-8"))
    imported = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("profopt_ci.specfile.keys", "METRIC_KEYS") in imported
    assert bisection.METRICS.items() <= keys.METRIC_KEYS.items()
    assert keys.GOAL_METRICS.items() <= keys.METRIC_KEYS.items()
    assert bisection.metric_key("peak_memory", []) == ("peak_memory_mb", False)


# ---- the settings: one class, declared once -------------------------------------------------------

HOME_OF_SETTINGS = "specfile/keys.py"


def _classes_named(name: str) -> list[str]:
    return [f"{rel}:{node.lineno}" for rel, tree in _modules() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.name == name]


def test_settings_are_declared_once():
    """The spec's settings block and the settings every stage reads are one class: a second
    declaration (a resolved copy of the keys) is what drifted before."""
    assert [where.split(":")[0] for where in _classes_named("Settings")] == [HOME_OF_SETTINGS]


def test_resolved_settings_are_the_spec_keys_with_every_default_applied():
    from profopt_ci.specfile.load import Benchmark, parse_spec

    spec = parse_spec("version: 1\ndefaults: {threshold: 5%}\nbenchmarks:\n  - {name: a, callable: 'm:f'}\n", "x.yml")
    s = spec.benchmarks[0].settings
    assert type(s) is keys.Settings and Benchmark.__annotations__["settings"] in ("Settings", keys.Settings)
    assert all(getattr(s, key) is not keys.UNSET for key in keys.SETTING_KEYS)  # every key resolved
    assert s.threshold == 5.0 and s.instrument == ("walltime",)  # a percentage as its number
