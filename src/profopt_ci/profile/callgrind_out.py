"""A reader of callgrind's output format (valgrind.org/docs/manual/cl-format.html), stdlib only.

In: the text of one `callgrind.out.*` dump. Out: a `Dump` with the event names, the totals per
event, the trigger (`desc: Trigger: Client Request: LABEL`) and each function's self cost per
event, keyed `name` (with the object's file name in `objects`).

What is read and why: `events:` names the columns; `positions:` says how many leading position
columns a cost line has (skipped); `fn=`/`cfn=`/`ob=`/`cob=` may be compressed as `(id) name`
then `(id)`; a cost line right after `calls=` is the inclusive cost of that call, which belongs
to the callee, so it is not the caller's self cost and is skipped; `totals:` is the sum of all
self costs (the `summary:` line is not used: after ZERO_STATS callgrind 3.19 writes a wrapped,
negative value there). Several `part:`s (threads dumped separately) add up.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_COST_START = "0123456789+-*"
_RECURSION = re.compile(r"'\d+$")  # `f'2`: callgrind's name for a recursion level of f (--separate-recs)


@dataclass
class Dump:
    events: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    trigger: str = ""
    functions: dict[str, dict[str, int]] = field(default_factory=dict)  # name → event → self cost
    objects: dict[str, str] = field(default_factory=dict)  # name → object file name

    def total(self, event: str = "Ir") -> int:
        if event in self.totals:
            return self.totals[event]
        return sum(f.get(event, 0) for f in self.functions.values())


class FormatError(ValueError):
    pass


class _Names:
    """Compressed names: `(id) name` defines id, `(id)` refers to it."""

    def __init__(self) -> None:
        self.table: dict[str, str] = {}

    def resolve(self, value: str) -> str:
        value = value.strip()
        if not value.startswith("("):
            return value
        ident, _, name = value.partition(")")
        ident = ident[1:]
        name = name.strip()
        if name:
            self.table[ident] = name
            return name
        return self.table.get(ident, f"({ident})")


def parse(text: str) -> Dump:
    dump = Dump()
    fns, obs = _Names(), _Names()
    n_pos = 1
    fn, ob = "???", "???"
    skip_next = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line[0] in _COST_START:
            if skip_next:
                skip_next = False
                continue
            _add(dump, fn, line.split()[n_pos:])
            continue
        key, sep, value = line.partition("=")
        if sep and key in ("fn", "cfn", "ob", "cob", "calls", "fl", "fi", "fe", "cfi", "cfl", "jump", "jcnd"):
            if key == "fn":
                fn = _RECURSION.sub("", fns.resolve(value))
                dump.objects.setdefault(fn, os.path.basename(ob))
            elif key == "cfn":
                fns.resolve(value)
            elif key == "ob":
                ob = obs.resolve(value)
            elif key == "cob":
                obs.resolve(value)
            elif key == "calls":
                skip_next = True
            continue
        _header(dump, line)
        if line.startswith("positions:"):
            n_pos = len(line.split(":", 1)[1].split())
    return dump


def _add(dump: Dump, fn: str, costs: list[str]) -> None:
    if not dump.events:
        raise FormatError("a cost line before the `events:` line")
    own = dump.functions.setdefault(fn, {})
    for event, value in zip(dump.events, costs, strict=False):
        own[event] = own.get(event, 0) + int(value)


def _header(dump: Dump, line: str) -> None:
    name, _, value = line.partition(":")
    value = value.strip()
    if name == "events":
        dump.events = value.split()
    elif name == "totals":
        dump.totals = {e: int(v) for e, v in zip(dump.events, value.split(), strict=False)}
    elif name == "desc" and value.startswith("Trigger:"):
        dump.trigger = value.split("Client Request:", 1)[-1].strip() if "Client Request:" in value else value


def read(path: str | os.PathLike[str]) -> Dump:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse(fh.read())


def per_step(small: Dump, big: Dump, n: int, event: str = "Ir") -> dict[str, float]:
    """Each function's self `event` per step, from a dump of n steps and one of 2n steps."""
    names = small.functions.keys() | big.functions.keys()
    out = {}
    for name in names:
        value = (big.functions.get(name, {}).get(event, 0) - small.functions.get(name, {}).get(event, 0)) / n
        if value:
            out[name] = value
    return out
