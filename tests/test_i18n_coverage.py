"""Every statement a producer can put in a report has a Chinese rendering.

The bottleneck note is messages (an id and its fields; report/i18n.message): each rule in rules.py
is fired with sample figures chosen to emit *every* evidence line it has (optional ones included),
bottleneck.py's fallbacks too, and every id emitted must have an en and a zh entry whose zh render
keeps no English; every catalog entry of the note must be emitted by something. The notes are still
English translated by pattern (i18n_zh): every note template is collected from the producers' source
(strings that flow into a `notes` list, a `*_NOTE` constant, a `*_note()` function's result) with
sample values put in. A zh report made of them must not keep English words, beyond units, acronyms,
flags, spec keys and the data (op names) itself.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import re

import comparison_fixtures as fx
import pytest
from test_report_snapshots import ZH_ALLOWED

from profopt_ci.analyze import bottleneck as analyze
from profopt_ci.analyze.rules import RULES, Facts
from profopt_ci.report import i18n, i18n_zh
from profopt_ci.report.render import render

# Besides the report's own list: words the notes and evidence keep on purpose.
KEEP = ZH_ALLOWED | {"NCCL", "memcpy", "memset", "GB", "valgrind", "callgrind", "cache_sim", "est_cycles",
                     "AVX", "UTC", "FLOP", "numpy", "numba", "Cython", "print", "DDP"}
OPS = {"aten::addmm", "aten::item", "loop.py:3(f)", "nccl:all_reduce"}
MACHINE = {"copy_gbps": 20.0, "ridge_flops_per_byte": 10.0, "ram_mb": 1000.0}


def english(text: str) -> set[str]:
    for op in OPS:
        text = text.replace(op, " ")
    text = re.sub(r"--[a-z][a-z-]*", " ", text)  # CLI flags
    text = re.sub(r"[\w.]*[._=(][\w.()'=<>,:/-]*", " ", text)  # code and keys: .item(), foreach=True, cpu_count
    return set(re.findall(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z_]{2,}(?![A-Za-z0-9])", text)) - KEEP  # not int8


def torch(**kw) -> dict:
    return {"kind": "torch", "step_time_ms": 10.0, "machine": MACHINE, **kw}


def gpu(**kw) -> dict:
    return torch(gpu={"total_mb": 1000.0, **kw})


# Per rule, facts that make it emit every line it can (the signal is called directly, so the
# device figures are typed in here; tests/test_rules.py derives them from traces).
MAXIMAL: dict[str, list[Facts]] = {
    "near capacity": [Facts({"kind": "none", "reason": "CUDA out of memory", "gpu": {"total_mb": 1000.0},
                             "memory": {"device_peak_reserved_mb": 950.0}, "machine": MACHINE},
                            {"peak_memory_mb": {"head": 950.0}})],
    "memory regression": [
        Facts(torch(ops=[{"name": "aten::addmm", "self_memory_mb": 3.0}]),
              {k: {"base": 100.0, "head": 150.0, "delta_pct": 50.0, "verdict": "regressed"}
               for k in ("peak_memory_mb", "cuda_max_allocated_mb")} | {"cuda_max_reserved_mb": {"head": 5000.0}}),
        Facts(torch(memory={"device_peak_allocated_mb": 2000.0}), {},
              torch(memory={"device_peak_allocated_mb": 1000.0}))],
    "KV-cache growth": [Facts({
        **gpu(), "memory": {"decode_growth": {"device": {"mb_per_span": 2.0, "r": 0.99, "spans": 8}},
                            "device_peak_allocated_mb": 800.0}})],
    "host-device sync": [Facts(gpu(sync_ms=2.0, dtoh_per_step=3) | {
        "ops": [{"name": "aten::item", "calls": 3, "category": "sync"}]})],
    "data loading": [Facts(torch(phase_shares={"data_loading": 0.2}, phases={"data_loading": 2.0}))],
    "host-to-device transfer": [Facts(gpu(pageable_memcpy_ms=1.0, memcpy_ms=2.0, memset_ms=0.5))],
    "communication": [Facts(gpu(comm_share=0.3, comm_overlap=0.1)),
                      Facts(torch(ops=[{"name": "nccl:all_reduce", "total_ms": 3.0, "category": "communication"}]))],
    "GPU launch overhead": [Facts(gpu(busy_share=0.5, median_kernel_us=5.0, short_kernel_share=0.7, kernels_per_step=300)),
                            Facts(gpu(busy_share=0.5, median_kernel_us=5.0, kernels_per_step=300))],
    "optimizer launch overhead": [Facts(torch(phase_shares={"optimizer": 0.35}, phase_detail={
        "optimizer": {"ops_per_step": 300, "small_ops_share": 0.95}}))],
    "framework overhead": [Facts(torch(counters={"python_share": 0.6, "small_ops_share": 0.8, "ops_per_step": 40,
                                                 "small_ops_time_share": 0.1}))],
    "interpreter overhead": [Facts({"kind": "cprofile", "step_time_ms": 40.0, "counters": {
        "python_share": 0.97, "py_lines_per_ms": 12000.0},
        "ops": [{"name": "loop.py:3(f)", "self_ms": 39.0, "category": "python"}]})],
    "decode bandwidth": [Facts(torch(phase_detail={"decode": {"gbps": 15.0}}))],
    "memory bandwidth": [Facts(torch(category_shares={"elementwise": 0.45, "copy/memory": 0.1, "reduction/norm": 0.1,
                                                      "optimizer": 0.05, "gemm": 0.3},
                                     counters={"flops_per_step": 1e6, "bytes_per_step": 1e6}))],
    "compute": [Facts(torch(category_shares={"gemm": 0.8, "elementwise": 0.2},
                            counters={"flops_per_step": 1e9, "bytes_per_step": 1e7}))],
}


def _notes() -> list[dict]:
    """The bottleneck notes of every rule fired with its maximal facts, of the fallbacks and of no profile."""
    notes = [analyze.bottleneck(f.profile, f.metrics, f.base_profile) for fs in MAXIMAL.values() for f in fs]
    fallback = torch(category_shares={"gemm": 0.3, "elementwise": 0.35, "framework": 0.35},
                     counters={"python_share": 0.2}, ops=[{"name": "aten::addmm", "self_ms": 3.0}])
    notes += [analyze.bottleneck(fallback), analyze.bottleneck(torch(category_shares={"gemm": 0.45, "elementwise": 0.3, "framework": 0.25})),
              analyze.bottleneck(None), analyze.bottleneck({"kind": "none", "reason": "profile: none in the spec"})]
    return notes


def _messages() -> list[dict]:
    return [m for n in _notes() for m in [*n["evidence_msgs"], n["next_action_msg"]]]


def test_every_rule_has_maximal_facts_and_emits_from_them():
    assert set(MAXIMAL) == {r.name for r in RULES}
    for rule in RULES:
        for facts in MAXIMAL[rule.name]:
            assert rule.signal(facts), rule.name  # stale facts would make the tests below vacuous


@pytest.mark.parametrize("m", _messages(), ids=lambda m: m["id"])
def test_every_message_has_both_catalogs_and_its_zh_keeps_no_english(m):
    assert m["id"] in i18n.EN and m["id"] in i18n.ZH, m["id"]
    assert m["text"] == i18n.say("en", m)
    zh = i18n.say("zh", m)
    assert zh != m["text"], m
    for value in m["args"].values():  # a profiler's reason is its own words, passed on as data
        zh = zh.replace(value, " ") if isinstance(value, str) and value not in i18n.TERMS_ZH else zh
    assert not english(zh), (m["id"], zh, english(zh))
    assert json.loads(json.dumps(m)) == m  # plain JSON: ids, numbers, names


def test_every_bottleneck_entry_of_the_catalogs_is_emitted():
    """No dead words: each evidence and next-action entry is something a producer says."""
    emitted = {m["id"] for m in _messages()}
    catalog = {k for k in i18n.EN if k.startswith(("bottleneck.", "next_action."))}
    assert catalog - {"bottleneck.none", "bottleneck.not_analysed"} == emitted


def test_the_note_keeps_its_english_beside_the_messages():
    for n in _notes():
        assert n["evidence"] == [m["text"] for m in n["evidence_msgs"]]
        assert n["next_action"] == n["next_action_msg"]["text"]
    rule = next(r for r in RULES if r.name == "compute")
    assert rule.next_action == i18n.EN[rule.action]


def test_a_file_from_before_messages_still_renders():
    """comparison@1 files written before messages hold the English strings alone: they render as they
    are (a zh report shows that English), and a next action is said by its rule's id."""
    c = fx.keep()
    b = c["benchmarks"][0]
    b["bottleneck"] = {"class": "compute", "rule": "compute", "evidence": ["GEMM/conv/attention 61% of native time"],
                       "next_action": next(r.next_action for r in RULES if r.name == "compute")}
    en, zh = render(c, "md", "en"), render(c, "md", "zh")
    assert "GEMM/conv/attention 61% of native time" in en and "GEMM/conv/attention 61% of native time" in zh
    assert i18n.ZH["next_action.compute"].split("（")[0] in zh
    b["bottleneck"]["next_action"] = "an action worded by another version"
    assert "an action worded by another version" in render(c, "md", "zh")


# ---- notes, collected from the producers' source ----------------------------------------------------

# The action's failure causes are message keys (action.cause.*, report/i18n_action.py), not notes.
ACTION_PRODUCERS = ("action.outcome", "action.workspace", "action.image", "action.runs", "action.local",
                    "action.host", "action.entry")
PRODUCERS = ("pipeline.compare_refs", "pipeline.diff_results", "pipeline.entries", "pipeline.stored", "pipeline.guards",
             "store.stored_baselines", "analyze.changepoints", "measure.instruction_runs", "analyze.instruction_entries",
             "pipeline.run_tree",
             "store.stores", *ACTION_PRODUCERS)
SAMPLE = "7"  # what a placeholder becomes: a figure, a name, a list


def _strings(node: ast.AST) -> list[str]:
    """The string literals an expression evaluates to: itself, a list's items, both branches."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else SAMPLE for v in node.values)]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in _strings(node.left) for b in _strings(node.right)]
    return []


def _is_notes(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id.endswith("notes")


def note_templates() -> list[tuple[str, str]]:
    found = []
    for name in PRODUCERS:
        module = importlib.import_module(f"profopt_ci.{name}")  # a renamed producer fails here, not silently
        tree = ast.parse(inspect.getsource(module))
        # local functions that take the notes first, e.g. compare's `comparison(notes)`
        takers = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.args.args
                  and f.args.args[0].arg.endswith("notes")}
        for node in ast.walk(tree):
            exprs: list[ast.AST] = []
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
                    and _is_notes(node.func.value)):
                exprs = list(node.args)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in takers:
                exprs = node.args[:1] + [k.value for k in node.keywords if k.arg and k.arg.endswith("notes")]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any(n.endswith("notes") or n.endswith("_NOTE") or n == "WHAT_IT_IS" for n in names):
                    exprs = [node.value]
            elif isinstance(node, ast.FunctionDef) and node.name.endswith("_note"):
                exprs = [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value]
            found += [(name, s) for e in exprs for s in _strings(e)]
    return found


def test_the_note_collector_finds_the_known_producers():
    texts = [s for _, s in note_templates()]
    assert len(texts) >= 15
    assert any(s.startswith("the freshly measured base of") for s in texts)  # history.drift_note
    # instructions.WHAT_IT_IS is no longer a literal note: the report says it through i18n itself
    assert i18n.t("zh", "instr.what") != i18n.t("en", "instr.what")
    assert "interrupted: partial results" in texts                           # compare, inside a call


@pytest.mark.parametrize(("module", "template"), note_templates())
def test_every_note_template_is_translated(module, template):
    zh = i18n.note("zh", template)
    assert zh != template, f"{module}: no zh pattern for {template!r}"
    assert not english(zh), (module, zh, english(zh))


def test_note_parts_from_real_helpers_are_translated():
    from profopt_ci.store.stored_baselines import _age_text, _mismatch_text

    for doc in ({"created": None}, {"created": "2000-01-01T00:00:00Z"}):
        assert not english(i18n_zh._age(_age_text(doc)))
    assert not english(i18n_zh._mismatch(_mismatch_text([("cpu_count", 2, 4), ("os", "a", "b")])))


def test_a_zh_report_full_of_every_producer_keeps_no_english():
    """The renderer really uses the tables: the notes, evidence and actions land in md and text."""
    c = fx.keep()
    c["notes"] = [s for _, s in note_templates()]
    c["benchmarks"][0]["bottleneck"] = analyze.bottleneck(MAXIMAL["data loading"][0].profile)
    for fmt in ("md", "text"):
        out = render(c, fmt, "zh", max_chars=None)
        out = re.sub(r"<!--.*?-->|</?(details|summary|sub)>|```.*?```", " ", out, flags=re.S)
        out = out.replace("\\", "").replace("@&#8203;", "@")
        for s in fx_data(c):  # longest first, so a name inside a path goes with the path
            out = out.replace(s, " ")
        assert not english(out), (fmt, sorted(english(out)))


def fx_data(c: dict) -> list[str]:
    from test_report_snapshots import _data_strings

    return sorted(_data_strings(c), key=len, reverse=True)


def test_every_action_cause_the_action_uses_exists_and_is_translated():
    used = set()
    for name in ACTION_PRODUCERS:
        source = inspect.getsource(importlib.import_module(f"profopt_ci.{name}"))
        used |= set(re.findall(r"\"(action\.(?:cause|failed)\.\w+)\"", source))
    keys = {k for k in i18n.EN if k.startswith("action.")}
    assert used and used <= keys, used - keys  # a key the catalog lacks would print as the key itself
    assert len(used) >= 15  # the collector still sees the producers
    for key in sorted(keys):
        fields = {f: SAMPLE for f in re.findall(r"\{(\w+)", i18n.EN[key])}
        zh = i18n.t("zh", key, **fields)
        words = english(re.sub(r"`[^`]*`", " ", zh)) - {"Docker", "NVIDIA", "Container", "Toolkit"}  # code, names
        assert zh != i18n.t("en", key, **fields) and not words, (key, words)
