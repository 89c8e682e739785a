"""The report's words in its language: message lookup, decision/verdict words, bottleneck classes,
and the producers' English (evidence, next actions, notes) translated.

In: a language (`en` or `zh`), a message key and its fields, or an English string a producer wrote.
Out: plain text in that language; English when the catalog lacks a key, and a producer's string as
it is when no pattern knows it (English beats a wrong guess). The catalogs are data modules
(report/messages_en.py, report/messages_zh.py); the producers' patterns are report/i18n_zh.py.
"""
from __future__ import annotations

from profopt_ci.report import i18n_action, i18n_zh
from profopt_ci.report.messages_en import EN
from profopt_ci.report.messages_zh import ZH

__all__ = ["LANGS", "EN", "ZH", "CATALOGS", "CLASSES", "evidence", "note", "next_action", "t", "word",
           "bottleneck_class"]

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


# Evidence, next actions and notes arrive in English from their producers; i18n_zh translates them by
# pattern (it says why there, and tests/test_i18n_coverage.py holds every producer to it).
def evidence(lang: str, text: str) -> str:
    """One line of the analyzer's evidence in `lang`: a known pattern translated, else as it is."""
    return i18n_zh.evidence(text) if lang == "zh" else text


def note(lang: str, text: str) -> str:
    """A comparison note in `lang`: a known English note translated, anything else as it is."""
    return i18n_zh.note(text) if lang == "zh" else text


def next_action(lang: str, rule: str | None, text: str, no_clear: str, no_profile: str) -> str:
    """The analyzer's next action in `lang`, by the rule that named it."""
    if lang != "zh":
        return text
    key = rule or ("_no_profile" if text == no_profile else "_no_clear" if text == no_clear else None)
    return i18n_zh.ACTIONS.get(key or "", text)


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
