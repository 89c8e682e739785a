"""The report's words in its language: message lookup, messages as data, decision/verdict words,
bottleneck classes.

In: a language (`en` or `zh`), a message key and its fields, or a message object a producer wrote
(`{"id", "args", "text"}`, see `message`: a bottleneck's evidence, a comparison's notes). Out: plain
text in that language; English when the catalog lacks a key, and a plain string from an older file
as it is (English beats a wrong guess). The catalogs are data modules (words/messages_en.py,
words/messages_zh.py): adding a language is one more catalog; a message's fields are formatted by
Python's format specs (`{share:.0%}`) and the few list and term specs in SPECS.
"""
from __future__ import annotations

import functools
import numbers
import string
from collections.abc import Callable, Mapping

from profopt_ci.words import i18n_action, i18n_site, i18n_statements
from profopt_ci.words.messages_en import EN
from profopt_ci.words.messages_zh import TERMS_ZH, ZH

__all__ = ["LANGS", "EN", "ZH", "TERMS_ZH", "CATALOGS", "CLASSES", "Note", "message", "put", "said", "say", "note", "text_of", "t",
           "word", "bottleneck_class"]

LANGS = ("en", "zh")
Note = dict | str  # a comparison note: a message (`message`), or a plain string passed on from elsewhere
EN.update(i18n_action.EN)  # the action's failure causes (words/i18n_action.py)
ZH.update(i18n_action.ZH)
EN.update(i18n_site.EN)  # the site's pages (profopt site, words/i18n_site.py)
ZH.update(i18n_site.ZH)
EN.update(i18n_statements.EN)  # what a comparison states: reasons, details, the summary (words/i18n_statements.py)
ZH.update(i18n_statements.ZH)

CATALOGS: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}

# Bottleneck classes come from the analyzer as ids; unknown ones are shown as they are.
CLASSES: dict[str, dict[str, str]] = {
    "en": {
        "compute": "compute", "memory_capacity": "memory capacity",
        "memory_bandwidth": "memory bandwidth", "communication": "communication",
        "launch_overhead": "scheduling / launch overhead", "scheduling": "scheduling / launch overhead",
        "framework_overhead": "framework / interpreter overhead", "data_loading": "data loading / IO",
        "io": "data loading / IO", "host_device_sync": "host-device sync", "sync": "host-device sync",
        "transfer": "host-device transfer", "launch_framework_overhead": "launch / framework overhead",
        "interpreter_overhead": "interpreter overhead in Python code", "unknown": "unknown",
    },
    "zh": {
        "compute": "计算", "memory_capacity": "内存容量", "memory_bandwidth": "内存带宽",
        "communication": "通信", "launch_overhead": "调度 / 启动开销", "scheduling": "调度 / 启动开销",
        "framework_overhead": "框架 / 解释器开销", "data_loading": "数据加载 / IO", "io": "数据加载 / IO",
        "host_device_sync": "主机-设备同步", "sync": "主机-设备同步", "transfer": "主机-设备传输",
        "launch_framework_overhead": "启动 / 框架开销", "interpreter_overhead": "Python 代码的解释器开销",
        "unknown": "未知",
    },
}


def message(id: str, **args: object) -> dict:
    """A statement as data for a document: its id, its fields and `text`, the English rendering kept
    beside them for machines. `args` must be JSON values (a field may be a message itself: said in
    the reader's language by the `msg` spec); the id must be in both catalogs
    (tests/test_i18n_coverage.py fires every producer)."""
    for k, v in args.items():
        kind = type(v)
        if not (v is None or kind is str or kind is int or kind is float or kind is bool):
            args[k] = _json(v)
    template = EN[id]
    text = _Fields("en").format(template, **args) if _specs_in(template) else template.format(**args)
    return {"id": id, "args": args, "text": text}


@functools.cache
def _specs_in(template: str) -> bool:
    """Whether a template names one of SPECS' formats (else str.format says it, faster: a diff of
    10⁵ benchmarks makes a message per metric)."""
    return any(spec in SPECS["en"] for _, _, spec, _ in string.Formatter().parse(template) if spec)


def put(doc: dict, key: str, msg: dict) -> dict:
    """`doc` with a statement under `key`: its English, and its message beside it under `<key>_msg`."""
    doc[key], doc[f"{key}_msg"] = msg["text"], msg
    return doc


def said(lang: str, text: object, msg: object = None) -> str:
    """A statement a document holds as its English (`text`) with its message beside it (`msg`,
    `<key>_msg`): in English the English the producer wrote, in another language its message said
    by the catalog. A file from before the message (no `msg`) is said by its English."""
    if msg is not None and lang != "en":
        return say(lang, msg)
    if text is None and msg is not None:
        return say(lang, msg)
    return str(text or "")


def _json(value: object) -> object:
    """A field as a JSON value: numpy's numbers become Python's, tuples lists."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int or kind is float:
        return value
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return str(value)


def say(lang: str, m: object) -> str:
    """A message object in `lang`; a plain string (a file written before messages) as it is. A
    message the catalogs do not know, or whose fields do not fit its entry, is shown by its `text`."""
    if not isinstance(m, Mapping):
        if not isinstance(getattr(m, "id", None), str):
            return str(m)
        m = {"id": m.id, "args": m.args, "text": m.text}  # a read document's Message struct
    template = CATALOGS.get(lang, EN).get(str(m.get("id"))) or EN.get(str(m.get("id")))
    args = m.get("args")
    if template is not None and isinstance(args, Mapping):
        try:
            return _Fields(lang).format(template, **args)
        except (KeyError, IndexError, ValueError, TypeError):
            pass  # a document from another version of profopt: its own English
    return str(m.get("text") or m.get("id") or "")


def _shares(sep: str, terms: Mapping[str, str]) -> Callable[[object], str]:
    return lambda pairs: sep.join(f"{terms.get(k, k)} {v:.0%}" for k, v in pairs)


def _ops(unit: str) -> Callable[[object], str]:
    return lambda pairs: ", ".join(f"{name} {v:.3g} {unit}" for name, v in pairs)


def _calls(unit: str) -> Callable[[object], str]:
    return lambda pairs: ", ".join(f"{name} ×{n:g}/{unit}" for name, n in pairs)


def _names(sep: str, terms: Mapping[str, str] | None = None) -> Callable[[object], str]:
    """A list of names (benchmarks, keys) joined; with `terms`, each said in the language."""
    return lambda names: sep.join(terms.get(str(n), str(n)) if terms else str(n) for n in names)


def _cpusets(sep: str, word: str) -> Callable[[object], str]:
    """`[[cpus, [name, …]], …]`: which benchmarks ran on which CPUs."""
    return lambda sets: sep.join(word.format(cpus=cpus, names=", ".join(names)) for cpus, names in sets)


def _mismatch(sep: str, word: str) -> Callable[[object], str]:
    """`[[key, stored, now], …]`, the values as their repr: how the stored environment differs."""
    return lambda diffs: sep.join(word.format(key=k, stored=a, now=b) for k, a, b in diffs)


def _probes(sep: str, side: Mapping[str, str], threads: Callable[[object], str], none: str) -> Callable[[object], str]:
    """`[[side, busy threads, [[pool, size], …]], …]`: what each side's step said it needs (measure/cpus.describe)."""
    def said(probes: object) -> str:
        out = []
        for name, busy, declared in probes:
            parts = [threads(busy) if busy else "", ", ".join(f"{k} {v}" for k, v in declared)]
            out.append(f"{side.get(name, name)}{', '.join(p for p in parts if p) or none}")
        return sep.join(out)
    return said


def _cpuwhy(w: Mapping[str, str]) -> Callable[[object], str]:
    """measure/topology.pick's reasons for a CPU set, said in parts."""
    def said(why: object) -> str:
        if not isinstance(why, Mapping):
            return ""
        parts = [w["cores"].format(n=why.get("cores"))]
        if why.get("smt_shared"):
            parts.append(w["smt"].format(cores=why.get("pool_cores")))
        if why.get("node") is not None:
            parts.append(w["node_gpu" if why.get("node_why") == "gpu" else "node"].format(node=why["node"]))
        if why.get("parent_cpu") is not None:
            parts.append(w["with_parent" if why.get("with_parent") else "away"].format(cpu=why["parent_cpu"]))
        parts.append(w["pool"].format(pool=why.get("pool"), cores=why.get("pool_cores")))
        return w["sep"].join(parts)
    return said


def _age(unknown: str, hours: str, days: str) -> Callable[[object], str]:
    """A baseline's age in days (None: unknown), in hours under two days."""
    def say_age(age: object) -> str:
        if not isinstance(age, (int, float)):
            return unknown
        return hours.format(age * 24) if age < 2 else days.format(age)
    return say_age


# Format specs of message fields that Python's own do not cover: a term said in the language, a
# list of `[name, share]` or `[op, figure]` pairs.
SPECS: dict[str, dict[str, Callable[[object], str]]] = {
    "en": {"term": str, "shares": _shares(", ", {}), "ops_ms": _ops("ms"), "ops_mb_step": _ops("MB/step"),
           "calls": _calls("step"), "names": _names(", "), "terms": _names(", "),
           "cpusets": _cpusets("; ", "{cpus} for {names}"), "mismatch": _mismatch("; ", "{key}: stored {stored} vs now {now}"),
           "age": _age("of unknown age", "{:.0f} hours old", "{:.0f} days old"),
           "probes": _probes("; ", {"base": "base: ", "head": "head: "},
                             lambda n: f"{n} busy thread{'s' if n != 1 else ''}", "no probe"),
           "cpuwhy": _cpuwhy({"cores": "{n} distinct core(s)", "smt": "threads share cores (SMT): {cores} core(s) free",
                              "node": "NUMA node {node}", "node_gpu": "NUMA node {node} (the GPU's)",
                              "away": "away from CPU {cpu}, where profopt runs",
                              "with_parent": "with CPU {cpu}, where profopt runs (no other free)",
                              "pool": "of {pool} CPUs ({cores} cores) profopt may use", "sep": "; "})},
    "zh": {"term": lambda x: TERMS_ZH.get(str(x), str(x)), "shares": _shares("，", TERMS_ZH), "ops_ms": _ops("ms"),
           "ops_mb_step": _ops("MB/步"), "calls": _calls("步"), "names": _names(", "), "terms": _names("，", TERMS_ZH),
           "cpusets": _cpusets("；", "{names} 使用 {cpus}"), "mismatch": _mismatch("；", "{key}：存储时 {stored}，现在 {now}"),
           "age": _age("时长未知", "{:.0f} 小时前", "{:.0f} 天前"),
           "probes": _probes("；", {"base": "基线：", "head": "新版："}, lambda n: f"{n} 个忙碌线程", "未探测"),
           "cpuwhy": _cpuwhy({"cores": "{n} 个不同的物理核", "smt": "线程共用物理核（SMT）：只有 {cores} 个空闲核",
                              "node": "NUMA 节点 {node}", "node_gpu": "NUMA 节点 {node}（GPU 所在）",
                              "away": "避开 profopt 所在的 CPU {cpu}",
                              "with_parent": "与 profopt 共用 CPU {cpu}（没有其他空闲 CPU）",
                              "pool": "profopt 可用 {pool} 个 CPU（{cores} 个核）", "sep": "；"})},
}


def _statements(lang: str) -> dict[str, Callable[[object], str]]:
    """Specs of fields that are words themselves, said in `lang` by the catalog: a message (`msg`),
    messages (`msgs`), a metric key or several (`metric`, `metrics`), a side or both (`side`,
    `sides`), a verdict, broken constraints (`broken`: `[[metric, detail message], …]`)."""
    cat = CATALOGS[lang]

    def term(prefix: str, key: object) -> str:
        return cat.get(f"{prefix}.{key}") or EN.get(f"{prefix}.{key}") or str(key)
    sep, sep2, both = cat["sep"], cat["sep2"], cat["and"]
    brackets = ("（", "）") if lang == "zh" else (" (", ")")
    return {
        "msg": lambda m: say(lang, m),
        "metric": lambda key: term("mname", key),
        "side": lambda side: term("side", side),
        "verdict": lambda verdict: term("verdict", verdict),
        "msgs": lambda ms: sep.join(say(lang, m) for m in ms),
        "metrics": lambda keys: sep.join(term("mname", k) for k in keys),
        "sides": lambda sides: both.join(term("side", s) for s in sides),
        "broken": lambda pairs: sep2.join(f"{m}{brackets[0]}{say(lang, d)}{brackets[1]}" for m, d in pairs),
    }


for _lang in LANGS:
    SPECS[_lang].update(_statements(_lang))


class _Fields(string.Formatter):
    """str.format with the language's SPECS beside Python's format specs."""

    def __init__(self, lang: str) -> None:
        self.specs = SPECS.get(lang, SPECS["en"])

    def format_field(self, value: object, format_spec: str) -> str:
        spec = self.specs.get(format_spec)
        return spec(value) if spec else format(value, format_spec)


def note(lang: str, n: object) -> str:
    """A comparison note in `lang`: a message said by the catalog, a plain string (an older file's
    English, or words a producer passes on from elsewhere) as it is."""
    return say(lang, n)


def text_of(n: object) -> str:
    """A note's English: a message's `text`, a plain string itself (for logs and for machines)."""
    return str(n.get("text") or n.get("id") or "") if isinstance(n, Mapping) else str(n)


def t(lang: str, key: str, **fields: object) -> str:
    """The message `key` in `lang` (English when missing), with `fields` filled in."""
    text = CATALOGS.get(lang, EN).get(key) or EN.get(key, key)
    return text.format(**fields) if fields else text


def word(lang: str, kind: str, value: object) -> str:
    """A decision / verdict / side word; a value the catalog does not know is shown as it is."""
    key = f"{kind}.{value}"
    return t(lang, key) if key in EN else str(value)


def bottleneck_class(lang: str, cls: object) -> str:
    """The analyzer's bottleneck class id in `lang`; an unknown id (or a file's non-text one) is shown as it is."""
    text = cls if isinstance(cls, str) else ("unknown" if cls is None else str(cls))
    key = (text or "unknown").strip().lower().replace("-", "_").replace(" ", "_").replace("/", "_")
    return CLASSES.get(lang, CLASSES["en"]).get(key, text or "unknown")
