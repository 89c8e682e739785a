"""Instruction counts into the outputs: a comparison entry, the per-function Ir diff, results@1.

In: side results of `instructions.measure_side` ({"status", "runs", "functions", …}). Out, on a
comparison entry (docs/data-model.md): metrics `instructions` (and `est_cycles`), an
`instructions` block {"base", "head", "function_diff", "notes"}, and — when valgrind failed on a
side — decision `failed` with the valgrind tail in `error`, the walltime metrics kept.

The function diff is callgrind's self Ir per step of each function (per C function: see
the message instr.functions), base vs head, the largest absolute changes first.
"""
from __future__ import annotations

from profopt_ci.analyze.decide import check_constraint, decided
from profopt_ci.measure.callgrind import TOP_FUNCTIONS
from profopt_ci.measure.instruction_runs import side_metrics
from profopt_ci.specfile.load import Benchmark
from profopt_ci.words.i18n import message

DIFF_ROWS = 10
MIN_SHARE = 0.001  # a function row must move at least 0.1% of the base's Ir per step


def _summary(side: dict | None) -> dict | None:
    if side is None:
        return None
    keep = ("status", "error", "n", "runs", "est_cycles_runs", "instructions", "est_cycles", "functions", "objects")
    return {k: side.get(k) for k in keep if k in side}


def function_diff(base: dict, head: dict, top: int = DIFF_ROWS) -> list[dict]:
    """Rows {name, object, base_ir, head_ir, delta_ir, delta_pct}, biggest |delta_ir| first."""
    bf, hf = base.get("functions") or {}, head.get("functions") or {}
    # A name missing from a cut list is at most that list's smallest entry: assume that, so a
    # change is never overstated; from a complete list it is 0.
    b_floor = min(bf.values()) if len(bf) >= TOP_FUNCTIONS else 0.0
    h_floor = min(hf.values()) if len(hf) >= TOP_FUNCTIONS else 0.0
    objects = {**(base.get("objects") or {}), **(head.get("objects") or {})}
    total = base.get("instructions") or sum(bf.values()) or 1.0
    rows = []
    for name in bf.keys() | hf.keys():
        b, h = bf.get(name, b_floor), hf.get(name, h_floor)
        if abs(h - b) < MIN_SHARE * total:
            continue
        listed = name in bf and name in hf  # else one side's value is the assumed bound, not a count
        rows.append({"name": name, "object": objects.get(name, ""), "base_ir": round(b, 1), "head_ir": round(h, 1),
                     "delta_ir": round(h - b, 1),
                     "delta_pct": round((h / b - 1) * 100, 2) if listed and b > 0 else None,
                     "only_in": None if listed else ("head" if name in hf else "base")})
    rows.sort(key=lambda r: (-abs(r["delta_ir"]), r["name"]))
    return rows[:top]


def _count(x: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g}{suffix}"
    return f"{x:.3g}"


def diff_lines(rows: list[dict]) -> list[str]:
    """"list_sort (libpython3.11.so): Ir +12.3% (1.2M → 1.35M per step)"; plain text (the view escapes)."""
    out = []
    for r in rows:  # a comparison file's rows: any figure may be missing (a row without its figures is left out)
        where = f" ({r['object']})" if r.get("object") else ""
        base_ir, head_ir = r.get("base_ir"), r.get("head_ir")
        if r.get("delta_pct") is not None and base_ir is not None and head_ir is not None:
            figures = f"Ir {r['delta_pct']:+.1f}% ({_count(base_ir)} → {_count(head_ir)} per step)"
        elif r.get("only_in") == "head" and head_ir is not None:
            figures = f"Ir new in head: {_count(head_ir)} per step (base below its top {TOP_FUNCTIONS})"
        elif r.get("only_in") != "head" and base_ir is not None:
            figures = f"Ir gone in head: {_count(base_ir)} per step in base"
        else:
            continue
        out.append(f"{r.get('name') or '?'}{where}: {figures}")
    return out


def merge(entry: dict, bench: Benchmark, sides: dict[str, dict] | None) -> dict:
    """The entry with one benchmark's instruction results in it (a new one: before `finish` a dict)."""
    if not sides:
        return entry
    base, head = sides.get("base"), sides.get("head")
    block = {"base": _summary(base), "head": _summary(head), "function_diff": [], "notes": [message("instr.functions")]}
    if entry.get("decision") == "failed" or not _ok(base) or not _ok(head):
        return {**entry, "instructions": block}
    changes = {"instructions": {**block, "function_diff": function_diff(base, head)},
               "metrics": {**entry["metrics"], **side_metrics(bench, base, head)}}
    if not entry["samples"]["base"] and not entry["samples"]["head"] and not entry.get("quality"):
        # instructions only and no quality pass (results of an older profopt): the counted runs' values
        b, h = [{"quality": base.get("quality") or {}}], [{"quality": head.get("quality") or {}}]
        changes["constraints"] = [check_constraint(c, b, h) for c in bench.constraints]
    return {**entry, **changes}


def _ok(side: dict | None) -> bool:
    return side is not None and side.get("status") == "ok"


def mark_failures(entries: list[dict]) -> list[dict]:
    """After `finish`, the entries again: a side whose valgrind run failed fails the benchmark
    (exit 3), metrics kept."""
    return [_instr_failed(e) for e in entries]


def _instr_failed(e: dict) -> dict:
    block = e.get("instructions") or {}
    for side in ("base", "head"):
        s = block.get(side)
        if s is None or s.get("status") == "ok" or e.get("decision") == "failed":
            continue
        first = (s.get("error") or s["status"]).splitlines()[0]
        e = decided(e, "failed", message("reason.instr_failed", status=s["status"], side=side, error=first),
                    error={"side": side, "status": s["status"], "message": s.get("error") or s["status"],
                           "instrument": "instructions"})
    return e


def results_entry(entry: dict, side: dict) -> dict:
    """A results@1 entry again, with the side result under `instructions` and its medians in `summary`."""
    summary = dict(entry.get("summary") or {})
    if side.get("status") == "ok":
        summary["instructions"] = side["instructions"]
        if side.get("est_cycles") is not None:
            summary["est_cycles"] = side["est_cycles"]
    return {**entry, "summary": summary, "instructions": _summary(side)}
