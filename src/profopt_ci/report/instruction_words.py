"""What the report says about instruction counts (instrument: instructions), in one language.

In: a comparison@1 dict, or one metric entry of it. Out: strings for the view (report/view.py) and
the headline (report/headline.py):
- the meta line's part: "instructions τ ±0.5%, 2 valgrind runs per side";
- the label of an instruction interval: it is the range of the runs ± the noise floor
  (measure/instruction_runs.instruction_change), not a confidence interval, so it is never called "CI";
- what an instruction count is (instructions, not time; …), which every report with counts
  states in its notes, whichever path (compare, diff, a stored baseline) made the comparison.
No statistics here, only words around the JSON's figures.
"""
from __future__ import annotations

from profopt_ci.measure.instruction_runs import FUNCTIONS_NOTE, WHAT_IT_IS
from profopt_ci.words.i18n import say

INSTRUCTION_METRICS = ("instructions", "est_cycles")


def is_runs_range(key: str, m: dict) -> bool:
    """The metric's interval is the range of runs ± floor (older files lack `interval`: by key)."""
    return m.get("interval") == "runs_range" or (key in INSTRUCTION_METRICS and m.get("p_value") is None)


def floor_text(m: dict) -> str:
    floor = m.get("noise_floor_pct")
    return f"{floor:.2g}" if isinstance(floor, (int, float)) else "?"


def counted(c: dict) -> bool:
    """Any benchmark measured with instrument: instructions."""
    return any(b.get("instructions") for b in c.get("benchmarks") or [])


def instructions_only(c: dict) -> bool:
    """Counted, and no benchmark has a walltime figure: the rounds and the time threshold say nothing."""
    if not counted(c):
        return False
    for b in c.get("benchmarks") or []:
        samples = b.get("samples") or {}
        if samples.get("base") or samples.get("head"):
            return False
        if any(k not in INSTRUCTION_METRICS for k in b.get("metrics") or {}):
            return False
    return True


def _span(values: list) -> str:
    nums = sorted({v for v in values if isinstance(v, (int, float))})
    if not nums:
        return "?"
    return f"{nums[0]:g}" if len(nums) == 1 else f"{nums[0]:g}–{nums[-1]:g}"


def meta_part(c: dict, lang: str) -> str | None:
    """"instructions τ ±0.5%, 2 valgrind runs per side", from the instruction metrics."""
    ms = [m for b in c.get("benchmarks") or [] for k, m in (b.get("metrics") or {}).items() if k == "instructions"]
    if not ms:
        return None
    taus = sorted({m["threshold_pct"] for m in ms if isinstance(m.get("threshold_pct"), (int, float))})
    runs = [m.get(k) for m in ms for k in ("n_base", "n_head")]
    return say(lang, "meta.instr", t="/".join(f"{x:g}" for x in taus) or "?", runs=_span(runs))


def threshold_shown(c: dict) -> str:
    """The threshold a "no change beyond ±x%" headline means: τ of the counts when nothing was timed."""
    if instructions_only(c):
        taus = {m.get("threshold_pct") for b in c.get("benchmarks") or []
                for k, m in (b.get("metrics") or {}).items() if k in INSTRUCTION_METRICS}
        taus.discard(None)
        if taus:
            return "/".join(f"{x:g}" for x in sorted(taus))
    return f"{c.get('threshold_pct') or 0:g}"


def cell_suffix(lang: str, key: str, m: dict) -> str:
    """Appended to the interval cell of an instruction metric: "(range of runs ±0.02%)"."""
    return say(lang, "instr.cell", floor=floor_text(m)) if is_runs_range(key, m) else ""


def column_header(lang: str, conf: str, rows: list[dict]) -> str:
    """The interval column's header: CI, range of runs, or both when the table mixes them."""
    runs = [r.get("runs_range", False) for r in rows]
    if runs and all(runs):
        return say(lang, "col.runs_range")
    if any(runs):
        return say(lang, "col.ci_or_runs", conf=conf)
    return say(lang, "col.ci", conf=conf)


def notes(c: dict, lang: str, given: list) -> list:
    """The comparison's notes (messages, or an older file's English) with what an instruction count is
    said once, in `lang`, whichever producer wrote it."""
    kept = [n for n in given if say("en", n) != WHAT_IT_IS]
    return kept + [say(lang, "instr.what")] if counted(c) else kept


def block_note(lang: str, n: object) -> str:
    """An instructions block's note in `lang` (an older file's English one too)."""
    return say(lang, "instr.functions") if say("en", n) == FUNCTIONS_NOTE else say(lang, n)
