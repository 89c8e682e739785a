"""The words in their language, by two functions: producers make messages (`message`: a statement
as data, its id, its fields and its English), renderers say them (`say`).

In: a language (`en` or `zh`), a message object a producer wrote (`{"id", "args", "text"}`: a
bottleneck's evidence, a comparison's notes), or a catalog key and its fields. Out: plain
text in that language; English when the catalog lacks a key, and a plain string from an older file
as it is (English beats a wrong guess). The catalogs are data modules (words/messages_en.py,
words/messages_zh.py and the i18n_* parts merged into them): adding a language is one more catalog;
a message's fields are formatted by Python's format specs (`{share:.0%}`) and the few list and term
specs in SPECS, whose words are catalog entries too (`spec.*`). No word is held anywhere else.
"""
from __future__ import annotations

import functools
import numbers
import string
from collections.abc import Callable, Mapping

import msgspec

from profopt_ci.words import (
    i18n_action,
    i18n_bisect,
    i18n_bottleneck,
    i18n_policy,
    i18n_reach,
    i18n_site,
    i18n_statements,
)
from profopt_ci.words.messages_en import EN
from profopt_ci.words.messages_zh import TERMS_ZH, ZH

__all__ = ["LANGS", "EN", "ZH", "TERMS_ZH", "CATALOGS", "Note", "message", "say"]

LANGS = ("en", "zh")
Note = dict | str  # a comparison note: a message (`message`), or a plain string passed on from elsewhere
EN.update(i18n_action.EN)  # the action's failure causes (words/i18n_action.py)
ZH.update(i18n_action.ZH)
EN.update(i18n_bisect.EN)  # a bisection's words and the nightly's issue (words/i18n_bisect.py)
ZH.update(i18n_bisect.ZH)
EN.update(i18n_site.EN)  # the site's pages (profopt site, words/i18n_site.py)
ZH.update(i18n_site.ZH)
EN.update(i18n_reach.EN)  # what a comparison says of its reach (words/i18n_reach.py)
ZH.update(i18n_reach.ZH)
EN.update(i18n_policy.EN)  # the accept label, a label event's comparison reused (words/i18n_policy.py)
ZH.update(i18n_policy.ZH)
EN.update(i18n_bottleneck.EN)  # the bottleneck note: classes, evidence, costs, next actions (words/i18n_bottleneck.py)
ZH.update(i18n_bottleneck.ZH)
EN.update(i18n_statements.EN)  # what a comparison states: reasons, details, the summary (words/i18n_statements.py)
ZH.update(i18n_statements.ZH)

CATALOGS: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}

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
    """Whether a template names one of SPECS' formats (else str.format says it, faster: a large diff
    makes a message per metric)."""
    return any(spec in SPECS["en"] for _, _, spec, _ in string.Formatter().parse(template) if spec)


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
    if isinstance(value, msgspec.Struct):  # a nested message as a document holds it (a `Message`)
        return _json(msgspec.to_builtins(value))
    return str(value)


def say(lang: str, m: object, /, default: str | None = None, **fields: object) -> str:
    """What a renderer shows, in `lang` (English where the catalog lacks it):

    - a message (`message()`'s dict, or a read document's `Message` struct): said by the catalog with
      its fields; one the catalogs do not know, or whose fields do not fit its entry (a document
      from another version of profopt), by its own `text`;
    - a catalog key (`"hl.none"`, `f"decision.{d}"`) with `fields` filled in; a key the catalog lacks
      is `default` where given (a document's word this version does not know), else itself;
    - any other string (an older file's English, words passed on from elsewhere) as it is; None as "".
    """
    if m is None:
        return ""
    if isinstance(m, str):
        template = CATALOGS.get(lang, EN).get(m) or EN.get(m)
        if template is None:
            return m if default is None else default
        return _Fields(lang).format(template, **fields) if fields else template
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


def _cpuwhy(sep: str, w: Callable[[str], str]) -> Callable[[object], str]:
    """measure/topology.pick's reasons for a CPU set, said in parts."""
    def said(why: object) -> str:
        if not isinstance(why, Mapping):
            return ""
        parts = [w("core_one") if why.get("cores") == 1 else w("cores").format(n=why.get("cores"))]
        if why.get("smt_shared"):
            parts.append(w("smt").format(cores=why.get("pool_cores")))
        if why.get("node") is not None:
            parts.append(w("node_gpu" if why.get("node_why") == "gpu" else "node").format(node=why["node"]))
        if why.get("parent_cpu") is not None:
            parts.append(w("with_parent" if why.get("with_parent") else "away").format(cpu=why["parent_cpu"]))
        parts.append(w("pool").format(pool=why.get("pool"), cores=why.get("pool_cores")))
        return sep.join(parts)
    return said


def _age(unknown: str, hours: str, days: str) -> Callable[[object], str]:
    """A baseline's age in days (None: unknown), in hours under two days."""
    def say_age(age: object) -> str:
        if not isinstance(age, (int, float)):
            return unknown
        return hours.format(age * 24) if age < 2 else days.format(age)
    return say_age


def _specs(lang: str) -> dict[str, Callable[[object], str]]:
    """Format specs of message fields that Python's own do not cover (a term said in the language, a
    list of `[name, share]` or `[op, figure]` pairs, …), their words the catalog's `spec.*` entries."""
    cat = CATALOGS[lang]

    def w(key: str) -> str:
        return cat.get(key) or EN[key]
    terms = TERMS_ZH if lang == "zh" else {}
    sep, sep2 = w("sep"), w("sep2")
    return {"term": lambda x: terms.get(str(x), str(x)), "shares": _shares(sep, terms), "ops_ms": _ops("ms"),
            "ops_mb_step": _ops(w("spec.mb_step")), "calls": _calls(w("spec.step")), "names": _names(", "),
            "terms": _names(sep, terms), "cpusets": _cpusets(sep2, w("spec.cpuset")),
            "mismatch": _mismatch(sep2, w("spec.mismatch")),
            "age": _age(w("spec.age_unknown"), w("spec.age_hours"), w("spec.age_days")),
            "probes": _probes(sep2, {"base": w("spec.probe.base"), "head": w("spec.probe.head")},
                              lambda n: w("spec.busy_thread" if n == 1 else "spec.busy_threads").format(n=n),
                              w("spec.no_probe")),
            "cpuwhy": _cpuwhy(sep2, lambda key: w(f"spec.cpuwhy.{key}"))}


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


SPECS: dict[str, dict[str, Callable[[object], str]]] = {lang: {**_specs(lang), **_statements(lang)} for lang in LANGS}


class _Fields(string.Formatter):
    """str.format with the language's SPECS beside Python's format specs."""

    def __init__(self, lang: str) -> None:
        self.specs = SPECS.get(lang, SPECS["en"])

    def format_field(self, value: object, format_spec: str) -> str:
        spec = self.specs.get(format_spec)
        return spec(value) if spec else format(value, format_spec)
