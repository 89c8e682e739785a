"""The report's words in its language: message lookup, messages as data, decision/verdict words,
bottleneck classes, and the producers' English notes translated.

In: a language (`en` or `zh`), a message key and its fields, a message object a producer wrote
(`{"id", "args", "text"}`, see `message`), or an English note. Out: plain text in that language;
English when the catalog lacks a key, and a plain string from an older file as it is (English beats
a wrong guess). The catalogs are data modules (report/messages_en.py, report/messages_zh.py); a
message's fields are formatted by Python's format specs (`{share:.0%}`) and the few list and term
specs in SPECS; the notes' patterns are report/i18n_zh.py.
"""
from __future__ import annotations

import numbers
import string
from collections.abc import Callable, Mapping

from profopt_ci.report import i18n_action, i18n_zh
from profopt_ci.report.messages_en import EN
from profopt_ci.report.messages_zh import TERMS_ZH, ZH

__all__ = ["LANGS", "EN", "ZH", "TERMS_ZH", "CATALOGS", "CLASSES", "message", "say", "note", "t", "word", "bottleneck_class"]

LANGS = ("en", "zh")
EN.update(i18n_action.EN)  # the action's failure causes (report/i18n_action.py)
ZH.update(i18n_action.ZH)

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
    beside them for machines. `args` must be JSON values; the id must be in both catalogs
    (tests/test_i18n_coverage.py fires every producer)."""
    args = {k: _json(v) for k, v in args.items()}
    return {"id": id, "args": args, "text": _Fields("en").format(EN[id], **args)}


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
        return str(m)
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


# Format specs of message fields that Python's own do not cover: a term said in the language, a
# list of `[name, share]` or `[op, figure]` pairs.
SPECS: dict[str, dict[str, Callable[[object], str]]] = {
    "en": {"term": str, "shares": _shares(", ", {}), "ops_ms": _ops("ms"), "ops_mb_step": _ops("MB/step"),
           "calls": _calls("step")},
    "zh": {"term": lambda x: TERMS_ZH.get(str(x), str(x)), "shares": _shares("，", TERMS_ZH), "ops_ms": _ops("ms"),
           "ops_mb_step": _ops("MB/步"), "calls": _calls("步")},
}


class _Fields(string.Formatter):
    """str.format with the language's SPECS beside Python's format specs."""

    def __init__(self, lang: str) -> None:
        self.specs = SPECS.get(lang, SPECS["en"])

    def format_field(self, value: object, format_spec: str) -> str:
        spec = self.specs.get(format_spec)
        return spec(value) if spec else format(value, format_spec)


# Comparison notes arrive in English from their producers; i18n_zh translates them by pattern (it
# says why there, and tests/test_i18n_coverage.py holds every producer to it).
def note(lang: str, text: str) -> str:
    """A comparison note in `lang`: a known English note translated, anything else as it is."""
    return i18n_zh.note(text) if lang == "zh" else text


def t(lang: str, key: str, **fields: object) -> str:
    """The message `key` in `lang` (English when missing), with `fields` filled in."""
    text = CATALOGS.get(lang, EN).get(key) or EN.get(key, key)
    return text.format(**fields) if fields else text


def word(lang: str, kind: str, value: object) -> str:
    """A decision / verdict / side word; a value the catalog does not know is shown as it is."""
    key = f"{kind}.{value}"
    return t(lang, key) if key in EN else str(value)


def bottleneck_class(lang: str, cls: str | None) -> str:
    """The analyzer's bottleneck class id in `lang`; an unknown id is shown as it is."""
    key = (cls or "unknown").strip().lower().replace("-", "_").replace(" ", "_").replace("/", "_")
    return CLASSES.get(lang, CLASSES["en"]).get(key, cls or "unknown")
