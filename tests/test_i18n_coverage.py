"""Every statement a producer can put in a report has a Chinese rendering.

The bottleneck note is messages (an id and its fields; words/i18n.message): each rule in rules.py
is fired with sample figures chosen to emit *every* evidence line it has (optional ones included),
bottleneck.py's fallbacks too, and every id emitted must have an en and a zh entry whose zh render
keeps no English; every catalog entry of the note must be emitted by something. The comparison's
notes are messages too: no producer puts an English string into a notes list (their source is
walked), every note id they name has en and zh entries with the same placeholders, and each, filled
with sample fields, says no English in zh beyond units, acronyms, flags, spec keys and the data.
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
from profopt_ci.analyze.facts import Facts
from profopt_ci.analyze.rules import RULES
from profopt_ci.measure import side_pass
from profopt_ci.report.render import render
from profopt_ci.words import i18n

# Besides the report's own list: words the notes and evidence keep on purpose.
KEEP = ZH_ALLOWED | {"jemalloc", "tcmalloc", "env", "NCCL", "memcpy", "memset", "GB", "valgrind", "callgrind", "cache_sim", "est_cycles",
                     "AVX", "UTC", "FLOP", "GFLOP", "NUMA", "SMT", "numpy", "numba", "Cython", "print", "DDP",
                     "AMX", "array", "bytes", "dtype",
                     "MHz", "nvidia", "smi", "lgc", "compile"}  # nvidia-smi -lgc, torch.compile: commands, not words
OPS = {"aten::addmm", "aten::item", "loop.py:3(f)", "nccl:all_reduce"}
MACHINE = {"matmul_gflops": 200.0, "copy_gbps": 20.0, "ridge_flops_per_byte": 10.0, "ram_mb": 1000.0}


def english(text: str) -> set[str]:
    for op in OPS:
        text = text.replace(op, " ")
    text = re.sub(r"--[a-z][a-z-]*", " ", text)  # CLI flags
    # code and keys (.item(), foreach=True, cpu_count): a mark between word characters, so a word
    # before a full stop or a bracket is still looked at
    text = re.sub(r"[\w.]*\w[._=(][\w('][\w.()'=<>,:/-]*|[\w.]*\(\)", " ", text)
    return set(re.findall(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z_]{2,}(?![A-Za-z0-9])", text)) - KEEP  # not int8


def test_the_english_finder_sees_a_word_before_a_full_stop_and_leaves_code_alone():
    assert english("the base failed. (see the log)") == {"the", "base", "failed", "see", "log"}
    assert english("foreach=True, .item(), cpu_count, mode='reduce-overhead'") == set()


def torch(**kw) -> dict:
    return {"kind": "torch", "step_time_ms": 10.0, "machine": MACHINE, **kw}


def gpu(**kw) -> dict:
    return torch(gpu={"total_mb": 1000.0, **kw})


def cprofile(**kw) -> dict:
    return {"kind": "cprofile", "step_time_ms": 40.0, "machine": MACHINE, **kw}


# Per rule, facts that make it emit every line it can (the signal is called directly, so the
# device figures are typed in here; tests/test_rules.py derives them from traces).
MAXIMAL: dict[str, list[Facts]] = {
    "near capacity": [Facts({"kind": "none", "reason": "CUDA out of memory", "gpu": {"total_mb": 1000.0},
                             "memory": {"device_peak_reserved_mb": 950.0, "alloc_retries": 2}, "machine": MACHINE},
                            {"peak_memory_mb": {"head": 950.0}, "cuda_max_allocated_mb": {"head": 200.0},
                             "cuda_max_reserved_mb": {"head": 2400.0}}),
                      Facts(torch(), {"peak_memory_mb": {"head": 950.0}}),
                      Facts(cprofile(), {"peak_memory_mb": {"head": 950.0}})],
    "KV-cache growth": [Facts({
        **gpu(), "memory": {"decode_growth": {"device": {"mb_per_span": 2.0, "r": 0.99, "spans": 8}},
                            "device_peak_allocated_mb": 800.0}})],
    "host-device sync": [Facts(gpu(sync_ms=2.0, dtoh_per_step=3) | {
        "ops": [{"name": "aten::item", "calls": 3, "category": "sync"}]})],
    "data loading": [Facts(torch(phase_shares={"data_loading": 0.2}, phases={"data_loading": 2.0})),
                     Facts(cprofile(phase_shares={"data_loading": 0.2}, phases={"data_loading": 8.0}))],
    "host-to-device transfer": [Facts(gpu(pageable_memcpy_ms=1.0, memcpy_ms=2.0, memset_ms=0.5))],
    "communication": [Facts(gpu(comm_share=0.3, comm_overlap=0.1)),
                      Facts(torch(ops=[{"name": "nccl:all_reduce", "total_ms": 3.0, "category": "communication"}]))],
    "GPU launch overhead": [Facts(gpu(busy_share=0.5, median_kernel_us=5.0, short_kernel_share=0.7, kernels_per_step=300)),
                            Facts(gpu(busy_share=0.5, median_kernel_us=5.0, kernels_per_step=300))],
    "optimizer launch overhead": [Facts(torch(phase_shares={"optimizer": 0.35}, phase_detail={
        "optimizer": {"ops_per_step": 300, "small_ops_share": 0.95}}))],
    "framework overhead": [Facts(torch(counters={"python_share": 0.6, "small_ops_share": 0.8, "ops_per_step": 400,
                                                 "small_ops_time_share": 0.1})),
                           Facts({**torch(counters={"python_share": 0.2, "small_ops_share": 0.9, "ops_per_step": 2000,
                                                    "small_ops_time_share": 0.2}), "machine": {**MACHINE, "op_floor_us": 2.0}},
                                 {"step_time_ms": {"head": 6.0}})],
    "interpreter overhead": [Facts({"kind": "cprofile", "step_time_ms": 40.0, "counters": {
        "python_share": 0.97, "py_lines_per_ms": 12000.0},
        "ops": [{"name": "loop.py:3(f)", "self_ms": 39.0, "category": "python"}]}),
                             Facts(cprofile(counters={"python_share": 0.97})),
                             Facts(torch(counters={"python_share": 0.98, "ops_per_step": 2},
                                         ops=[{"name": "loop.py:3(f)", "self_ms": 9.0, "category": "python"}]))],
    "decode bandwidth": [Facts(torch(phase_detail={"decode": {"gbps": 15.0}}))],
    "memory bandwidth": [Facts(torch(category_shares={"elementwise": 0.45, "copy/memory": 0.1, "reduction/norm": 0.1,
                                                      "optimizer": 0.05, "gemm": 0.3},
                                     counters={"flops_per_step": 1e6, "bytes_per_step": 1e8})),
                         Facts(torch(cuda=True, category_shares={"elementwise": 0.8, "gemm": 0.2},
                                     counters={"flops_per_step": 1e6, "bytes_per_step": 1e8}))],
    "compute": [Facts(torch(category_shares={"gemm": 0.8, "elementwise": 0.2},
                            counters={"flops_per_step": 1e9, "bytes_per_step": 1e7})),
                Facts(torch(cuda=True, category_shares={"gemm": 0.8, "elementwise": 0.2},
                            counters={"flops_per_step": 1e9, "bytes_per_step": 1e7}))],
}

# What a memory regression costs (memory_rules.memory_cost): every line it can say.
COST: list[Facts] = [
    Facts(torch(cuda=True, ops=[{"name": "aten::addmm", "self_ms": 2.0, "self_memory_mb": 3.0}]),
          {k: {"base": 100.0, "head": 150.0, "delta_pct": 50.0, "delta_mb": 50.0, "verdict": "regressed"}
           for k in ("peak_memory_mb", "cuda_max_allocated_mb")}
          | {"cuda_max_reserved_mb": {"head": 5000.0, "verdict": "regressed", "base": 3000.0, "delta_pct": 66.0}}),
    Facts(torch(memory={"device_peak_allocated_mb": 2000.0}), {}, torch(memory={"device_peak_allocated_mb": 1000.0})),
    Facts(torch(memory={"host_peak_allocated_mb": 2000.0}), {}, torch(memory={"host_peak_allocated_mb": 1000.0})),
]
# The base's note where the change removed its bottleneck: the head's hottest named, or none to name.
LOOP = MAXIMAL["interpreter overhead"][0].profile
FASTER = {"step_time_ms": {"verdict": "improved"}}
REMOVED = [(cprofile(counters={"python_share": 0.3}, ops=[{"name": "aten::addmm", "self_ms": 3.0}]), FASTER, LOOP),
           (cprofile(counters={"python_share": 0.3}), FASTER, LOOP)]


def _notes() -> list[dict]:
    """The bottleneck notes of every rule fired with its maximal facts, of the fallbacks and of no profile."""
    notes = [analyze.bottleneck(f.profile, f.metrics, f.base_profile) for fs in MAXIMAL.values() for f in fs]
    fallback = torch(category_shares={"gemm": 0.3, "elementwise": 0.35, "framework": 0.35},
                     counters={"python_share": 0.2}, ops=[{"name": "aten::addmm", "self_ms": 3.0}])
    notes += [analyze.bottleneck(fallback), analyze.bottleneck(torch(category_shares={"gemm": 0.45, "elementwise": 0.3, "framework": 0.25})),
              analyze.bottleneck(None), analyze.bottleneck({"kind": "none", "reason": "profile: none in the spec"}),
              analyze.bottleneck(side_pass.SKIPPED),  # compare took no profile: its figures held
              analyze.bottleneck(side_pass.NO_TIME)]  # … or the time budget was spent
    notes += [analyze.bottleneck(f.profile, f.metrics, f.base_profile) for f in COST]
    notes += [analyze.bottleneck(*args) for args in REMOVED]
    return notes


def _messages() -> list[dict]:
    return [m for n in _notes() for m in [*n["evidence_msgs"], n["next_action_msg"], *n["cost_msgs"]]]


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
    catalog = {k for k in i18n.EN if k.startswith(("bottleneck.", "next_action.", "cost."))}
    assert catalog - {"bottleneck.none", "bottleneck.not_analysed", "bottleneck.not_profiled_cls"} == emitted


def test_the_note_keeps_its_english_beside_the_messages():
    for n in _notes():
        assert n["evidence"] == [m["text"] for m in n["evidence_msgs"]]
        assert n["next_action"] == n["next_action_msg"]["text"]
        assert n["cost"] == [m["text"] for m in n["cost_msgs"]]
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


# ---- notes: messages too, checked at their producers ------------------------------------------------

# The action's failure causes are message keys (action.cause.*, words/i18n_action.py), not notes.
ACTION_PRODUCERS = ("action.outcome", "action.workspace", "action.image", "action.runs", "action.local",
                    "action.host", "action.entry")
# Every module that writes a comparison note (a suite collector's own words ride inside note.suite_said).
PRODUCERS = ("pipeline.compare_refs", "pipeline.compare_run", "pipeline.compare_notes", "pipeline.diff_results", "pipeline.entries", "analyze.judge", "pipeline.stored", "pipeline.guards",
             "pipeline.confirm", "pipeline.run_tree", "pipeline.bisect_refs", "pipeline.nightly", "pipeline.reach_gate",
             "pipeline.reuse",
             "documents.comparison", "specfile.plan",
             "store.stored_baselines", "store.stores", "analyze.changepoints", "analyze.instruction_entries",
             "measure.instruction_runs", "measure.runner", "suites.callables", "suites.collect", "suites.expand",
             *ACTION_PRODUCERS)
NOTE_IDS = ("note.", "instr.what", "instr.functions")
SAMPLE = "7"
FIELD = re.compile(r"\{(\w+)(?::([^}]*))?\}")


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
        return [a + b for a in _strings(node.left) for b in _strings(node.right)] or _strings(node.left) + _strings(node.right)
    return []


def _is_notes(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id.endswith("notes")) or (
        isinstance(node, ast.Attribute) and node.attr.endswith("notes"))


def _trees() -> dict[str, ast.AST]:
    # a renamed producer fails here, not silently
    return {name: ast.parse(inspect.getsource(importlib.import_module(f"profopt_ci.{name}"))) for name in PRODUCERS}


def raw_notes() -> list[tuple[str, str]]:
    """English a producer puts into a notes list itself: appended, inserted, a notes list's items, passed
    to a function that takes the notes first, or returned by a `*_note(s)` function."""
    found = []
    for name, tree in _trees().items():
        takers = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.args.args
                  and f.args.args[0].arg.endswith("notes")}
        for node in ast.walk(tree):
            exprs: list[ast.AST] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_notes(node.func.value):
                exprs = {"append": node.args, "insert": node.args[1:], "extend": node.args}.get(node.func.attr, [])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in takers:
                exprs = node.args[:1] + [k.value for k in node.keywords if k.arg and k.arg.endswith("notes")]
            elif isinstance(node, ast.Call):
                exprs = [k.value for k in node.keywords if k.arg and k.arg.endswith("notes")]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_notes(t) or (isinstance(t, ast.Name) and t.id.endswith("_NOTE")) for t in targets):
                    exprs = [node.value] if node.value else []
            elif isinstance(node, ast.FunctionDef) and node.name.endswith(("_note", "_notes")):
                exprs = [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value]
            found += [(name, s) for e in exprs for s in _strings(e)]
    return found


def used_ids() -> set[str]:
    """The note ids the producers name: every string of theirs that is a note's catalog key."""
    return {n.value for tree in _trees().values() for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in i18n.EN
            and n.value.startswith(NOTE_IDS)}


def test_no_producer_writes_a_note_as_english():
    assert raw_notes() == []


def test_the_raw_note_finder_still_sees_a_raw_note():
    """The check above would pass on an empty walk: it must still catch each way a string gets in."""
    source = ("def f(notes, x):\n    notes.append(f'hello {x}')\n    notes.insert(0, 'first')\n"
              "    more_notes = ['a' + 'b']\n    return build(notes=['c'])\n"
              "def g_note():\n    return 'said'\n")
    tree = ast.parse(source)
    real = _trees
    try:
        globals()["_trees"] = lambda: {"sample": tree}
        assert sorted(s for _, s in raw_notes()) == ["ab", "c", "first", "hello 7", "said"]
    finally:
        globals()["_trees"] = real


def _placeholders(text: str) -> set[str]:
    return {m.group(1) for m in FIELD.finditer(text)}


def test_every_entry_has_both_languages_with_the_same_placeholders():
    assert set(i18n.EN) == set(i18n.ZH), set(i18n.EN) ^ set(i18n.ZH)
    for key in i18n.EN:
        assert _placeholders(i18n.EN[key]) == _placeholders(i18n.ZH[key]), key


def test_every_note_entry_is_said_by_a_producer():
    """No dead words, and a producer's id the catalog lacks would fail `message` itself."""
    catalog = {k for k in i18n.EN if k.startswith(NOTE_IDS)}
    used = used_ids()
    assert len(used) >= 30  # the walk still sees the producers
    assert catalog == used, (catalog - used, used - catalog)


# Sample values by the field's format spec: what a producer passes for it.
SAMPLES = {"names": ["train-step", "eval-step"], "terms": ["env", "params"], "cpusets": [["0-1", ["a", "b"]], ["2", ["c"]]],
           "mismatch": [["cpu_count", "2", "4"], ["os", "'a'", "'b'"]], "age": 0.5, "term": "slower",
           "probes": [["base", 2, [["torch", 2]]], ["head", 0, []]],
           "cpuwhy": {"cores": 2, "smt_shared": True, "node": 1, "node_why": "gpu", "parent_cpu": 0,
                      "with_parent": False, "pool": 8, "pool_cores": 4}}


def sample_note(key: str) -> dict:
    args = {}
    for m in FIELD.finditer(i18n.EN[key]):
        spec = m.group(2) or ""
        args[m.group(1)] = SAMPLES.get(spec, 7 if spec else SAMPLE)
    return i18n.message(key, **args)


def note_samples() -> list[dict]:
    return [sample_note(k) for k in sorted(i18n.EN) if k.startswith(NOTE_IDS)]


@pytest.mark.parametrize("m", note_samples(), ids=lambda m: m["id"])
def test_every_note_renders_in_zh_without_english(m):
    assert m["text"] == i18n.say("en", m)
    zh = i18n.say("zh", m)
    assert zh != m["text"], m
    for value in ("train-step", "eval-step"):  # benchmark names are data
        zh = zh.replace(value, " ")
    assert not english(zh), (m["id"], zh, english(zh))
    assert json.loads(json.dumps(m)) == m


def test_the_english_of_a_note_is_its_producers_old_wording():
    """Byte for byte what the producers wrote before notes were messages (snapshots and machines read it)."""
    from profopt_ci.analyze.changepoints import drift_note
    from profopt_ci.measure import runner

    d = {"delta_pct": 4.26, "fresh": 12.3456, "history_median": 11.84, "n": 9, "z": 3.14}
    assert drift_note("train", d)["text"] == (
        "the freshly measured base of train drifted from its nightly history: 12.35 ms vs a nightly median of 11.84 ms "
        "over the last 9 runs (4.3% slower, z +3.1) — the machine or its environment moved since the nightly runs; "
        "the paired comparison still holds")
    _, off = runner.check({"ms": 7.0}, [10.0, 10.0, 10.0], "lab")
    assert off["text"] == ("this runner ran 30% faster than its usual (probe 7 ms vs a median of 10 ms over the last 3 "
                           "runs of label lab): absolute times are off, ratios may shift by a few %")
    said = sample_note("note.stored_baseline")["text"]
    assert "(12 hours old)" in said and i18n.say("zh", sample_note("note.stored_baseline")).count("12 小时前") == 1


def test_a_file_whose_notes_are_plain_strings_still_renders():
    c = fx.keep()
    c["notes"] = ["a note worded by another version", "interrupted: partial results"]
    for lang in ("en", "zh"):
        out = render(c, "md", lang)
        assert "a note worded by another version" in out and "interrupted: partial results" in out


def test_a_zh_report_full_of_every_note_keeps_no_english():
    """The renderer says the notes through the catalogs: md and text, the bottleneck note too."""
    c = fx.keep()
    c["notes"] = note_samples()
    c["benchmarks"][0]["bottleneck"] = analyze.bottleneck(MAXIMAL["data loading"][0].profile)
    en = render(c, "md", "en", max_chars=None).replace("\\", "")  # Markdown's escapes
    assert all(m["text"] in en for m in c["notes"] if m["id"] != "instr.what")  # instr.what: said when counted
    for fmt in ("md", "text"):
        out = render(c, fmt, "zh", max_chars=None)
        out = re.sub(r"<!--.*?-->|</?(details|summary|sub)>|```.*?```", " ", out, flags=re.S)
        out = out.replace("\\", "").replace("@&#8203;", "@")
        for s in [*fx_data(c), "train-step", "eval-step"]:  # longest first, so a name inside a path goes with the path
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
        zh = i18n.say("zh", key, **fields)
        words = english(re.sub(r"`[^`]*`", " ", zh)) - {"Docker", "NVIDIA", "Container", "Toolkit"}  # code, names
        assert zh != i18n.say("en", key, **fields) and not words, (key, words)
