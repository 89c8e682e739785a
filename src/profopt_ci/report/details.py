"""The report's collapsible detail sections: the chart, environments, phases, hot ops, rounds and noise.

In: comparison@1's benchmark entries (the environments: the comparison's base and head sides) and
the language. Out: plain dicts and rows the templates print under "Details" (charted as % of base,
medians and spreads formatted, long values capped). Formatting only: no statistics beyond medians.
"""
from __future__ import annotations

import heapq
import statistics
from operator import attrgetter
from pathlib import PurePath

from profopt_ci.analyze.decide import ordered_metrics
from profopt_ci.documents.types import Sample
from profopt_ci.report.format import DASH, NAME_MAX, clip, num, pct, pvalue, value_text
from profopt_ci.report.headline import metric_word
from profopt_ci.report.instruction_words import block_note
from profopt_ci.words.i18n import say

_PHASES = attrgetter("phases_ms")

FINGERPRINT_ORDER = ("cpu_model", "cpu_count", "memory_gb", "os", "python", "numpy", "torch", "cuda",
                     "cudnn", "gpu_name", "gpu_driver", "cuda_driver", "gpu_persistence", "gpu_clocks", "gpu_ecc",
                     "gpu_mig")
CHART_MAX = 20
HOT_OPS_MAX = 10


def chart(benches: list[dict], lang: str, conf: str) -> dict | None:
    """Head relative to base = 100 by the verdict's estimate (100 + change %), with its CI;
    one benchmark charts its metrics, several their step time."""
    usable = [b for b in benches if _point((b.get("metrics") or {}).get("step_time_ms"))]
    if len(usable) == 1 or (not usable and len(benches) == 1):
        b = usable[0] if usable else benches[0]
        metrics = b.get("metrics") or {}
        points = [(metric_word(lang, k), _point(metrics[k])) for k in ordered_metrics(metrics)]
        points = [(label, p) for label, p in points if p]
        what = b.get("name", "?")
        total = len(points)
    else:
        biggest = heapq.nsmallest(CHART_MAX, usable, key=lambda b: -abs(b["metrics"]["step_time_ms"].get("delta_pct") or 0))
        keep = {id(b) for b in biggest}
        points = [(b.get("name", "?"), _point(b["metrics"]["step_time_ms"])) for b in usable if id(b) in keep]
        what = metric_word(lang, "step_time_ms")
        total = len(usable)
    if not points:
        return None
    top = max(max(max(v for v in p if v is not None) for _, p in points), 100.0)
    return {"title": say(lang, "chart.title", what=what), "y_label": say(lang, "chart.y"),
            "labels": [p[0] for p in points],
            "head": [p[1][0] for p in points],
            "low": [p[1][1] for p in points], "high": [p[1][2] for p in points],
            "y_max": int(top * 1.1 // 10 + 1) * 10, "conf": conf,
            "shown": len(points), "total": total}


def has_chart(benches: list[dict], lang: str, conf: str) -> bool:
    """Whether `chart(benches, …)` draws anything, without building it (a look at two benchmarks
    where two have a step time change: then the chart has its largest changes)."""
    usable = 0
    for b in benches:
        if _point((b.get("metrics") or {}).get("step_time_ms")):
            usable += 1
            if usable == 2:
                return True
    if not usable and len(benches) != 1:
        return False
    return chart(benches, lang, conf) is not None


def _point(m: dict | None) -> tuple[float, float | None, float | None] | None:
    """(estimate, CI low, CI high) as % of base: 100 + the change column's figures."""
    if not m or not isinstance(m.get("delta_pct"), (int, float)):
        return None

    def rel(v: object) -> float | None:
        return round(100.0 + v, 1) if isinstance(v, (int, float)) else None

    mid = rel(m["delta_pct"])
    # A metric judged without a CI (memory, against its tolerance) is a point on the CI lines.
    return mid, rel(m.get("ci_low_pct")) or mid, rel(m.get("ci_high_pct")) or mid


def environments(c: dict, lang: str) -> list[dict]:
    base, head = c.get("base") or {}, c.get("head") or {}
    sides = [(say(lang, "env.ref"), base.get("ref"), head.get("ref")),
             (say(lang, "env.commit"), base.get("commit"), head.get("commit"))]
    rows: list[tuple] = []
    fb, fh = base.get("fingerprint") or {}, head.get("fingerprint") or {}
    keys = [k for k in FINGERPRINT_ORDER if k in fb or k in fh]
    keys += sorted((set(fb) | set(fh)) - set(keys))
    rows += [(k, fb.get(k), fh.get(k)) for k in keys]
    eb, eh = base.get("env") or {}, head.get("env") or {}
    rows += [(say(lang, "env.var", name=k), eb.get(k), eh.get(k)) for k in sorted(set(eb) | set(eh))]
    vb, vh = base.get("environment") or {}, head.get("environment") or {}
    if vb or vh:  # each side's venv has a path of its own by design; where each ran should match
        sides.append((say(lang, "env.python"), vb.get("python"), vh.get("python")))
        rows += [(say(lang, "env.where"), _where(vb, lang), _where(vh, lang)), *_packages(vb, vh, lang)]
    # ref and commit differ by design; only what should have been equal is marked.
    return [{"key": clip(str(k), 60), "base": value_text(b, 100), "head": value_text(h, 100),
             "differs": b != h and not designed} for designed, (k, b, h) in
            [(True, r) for r in sides] + [(False, r) for r in rows]]


def _where(e: dict, lang: str) -> str | None:
    """A side's own setup venv (nothing of profopt's but its worker), or profopt's environment."""
    return None if not e else say(lang, "env.own" if e.get("own") else "env.profopt")


def _packages(eb: dict, eh: dict, lang: str) -> list[tuple]:
    """The versions of the packages each side's steps imported, its suites' runners and what profopt
    added with them, each said as such ("8.3.4, added: the suite's runner"): one that differs is marked."""
    pb, ph = _versions(eb, lang), _versions(eh, lang)
    return [(say(lang, "env.package", name=k), pb.get(k), ph.get(k)) for k in sorted(set(pb) | set(ph))]


def _versions(e: dict, lang: str) -> dict[str, str]:
    out = dict(e.get("packages") or {})
    named = {_canonical(k): k for k in out}  # one row a distribution, however its name was spelled

    def put(name: str, text: str) -> None:
        out[named.setdefault(_canonical(name), name)] = text
    for name, version in (e.get("added") or {}).items():
        put(name, say(lang, "env.runner_dep", version=version))
    for name, runner in (e.get("runners") or {}).items():
        put(name, say(lang, "env.runner_added" if runner.get("added") else "env.runner_setup", version=runner.get("version")))
    return out


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def phases(b: dict) -> dict:
    prof = b.get("profile") or {}
    base = _profile_phases(prof, "base") or _sample_phases((b.get("samples") or {}).get("base"))
    head = _profile_phases(prof, "head") or _sample_phases((b.get("samples") or {}).get("head"))
    names = list(base) + [k for k in head if k not in base]
    rows = []
    for name in names:
        vb, vh = base.get(name), head.get(name)
        change = pct((vh / vb - 1) * 100) if isinstance(vb, (int, float)) and isinstance(vh, (int, float)) and vb else DASH
        rows.append({"phase": clip(str(name), 60), "base": num(vb), "head": num(vh), "change": change})
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rows": rows}


def _profile_phases(prof: dict, side: str) -> dict:
    """A side's profile phases: {} unless a mapping (a profile summary is free-form in the document)."""
    phases_ms = (prof.get(side) or {}).get("phases")
    return phases_ms if isinstance(phases_ms, dict) else {}


def may_have_phases(b: dict) -> bool:
    """False where `phases(b)` surely has no rows: no profile phases and no timed phase in a sample."""
    prof = b.get("profile")
    if prof and (_profile_phases(prof, "base") or _profile_phases(prof, "head")):
        return True
    samples = b.get("samples") or {}
    for side in ("base", "head"):
        rows = samples.get(side) or ()
        if isinstance(rows, list) and rows and type(rows[0]) is Sample and not _any_phases(rows):
            continue  # read rows (documents.types.Sample): their field read in C, not a Python call per row
        for s in rows:
            phases_ms = s.get("phases_ms")
            if phases_ms and any(isinstance(v, (int, float)) for v in phases_ms.values()):
                return True
    return False


def _any_phases(rows: list) -> bool:
    try:
        return any(map(_PHASES, rows))
    except AttributeError:  # read rows beside built ones: asked one by one
        return True


def _sample_phases(samples: list[dict] | None) -> dict:
    """Median ms per phase over the rounds, when no profile summarised them."""
    per: dict[str, list[float]] = {}
    for s in samples or []:
        for k, v in (s.get("phases_ms") or {}).items():
            if type(v) is float or isinstance(v, (int, float)):
                if k in per:
                    per[k].append(v)
                else:
                    per[k] = [v]
    return {k: statistics.median(v) for k, v in per.items()}


def hot_ops(b: dict, lang: str) -> dict:
    prof = b.get("profile") or {}
    rows_in = [r for r in prof.get("hot_diff") or [] if isinstance(r, dict)]  # free-form: what a file holds
    # the rows the profile can tell from its own noise first (analyze/bottleneck.hot_diff)
    diff = sorted(rows_in, key=lambda r: (r.get("noise") is True, -abs(_figure(r.get("delta_ms")))))[:HOT_OPS_MAX]
    rows = [{"op": clip(str(r.get("name", "?")), 80), "base": num(r.get("base_ms")),
             "head": num(r.get("head_ms")),
             "delta": (NOISE_MARK if r.get("noise") is True else "") + num(r.get("delta_ms"))} for r in diff]
    notes = []
    if any(isinstance(r.get("noise"), bool) for r in diff):
        notes.append(say(lang, "hot.noise", mark=NOISE_MARK.strip(), base=_chunks(prof, "base"),
                       head=_chunks(prof, "head")))
    for side in ("base", "head"):
        summary = prof.get(side) or {}
        summary = summary if isinstance(summary, dict) else {}
        label = say(lang, f"side.{side}") + say(lang, "colon")
        if summary.get("kind") == "none" and summary.get("reason"):
            notes.append(f"{label} " + say(lang, "no_profile", reason=clip(str(summary["reason"]), 160)))
        elif summary.get("trace_path"):
            notes.append(f"{label} " + say(lang, "trace", path=clip(shown_path(str(summary["trace_path"])), 160)))
        counters = summary.get("counters")  # a free-form summary: anything a file holds
        profiled = counters.get("profiled_step_ms") if isinstance(counters, dict) else None
        if rows and isinstance(profiled, (int, float)) and isinstance(summary.get("step_time_ms"), (int, float)):
            notes.append(say(lang, "hot.profiled_step", side=say(lang, f"side.{side}"), profiled=num(profiled),
                           plain=num(summary["step_time_ms"])))
    notes += _instruction_notes(b, lang)
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rows": rows, "notes": notes}


NOISE_MARK = "≈ "


def _chunks(prof: dict, side: str) -> str:
    summary = prof.get(side)
    chunks = summary.get("chunks") if isinstance(summary, dict) else None
    return str(chunks) if isinstance(chunks, int) and not isinstance(chunks, bool) else DASH


def shown_path(path: str) -> str:
    """A profile file as a report shows it: its folder's name and its own, never the absolute path of
    the disk it was written on (a PR comment's reader has none of the runner's disk; compare writes
    profiles to profopt-profiles/ beside its output, which is where that name points)."""
    pure = PurePath(path)
    return "/".join(pure.parts[1:][-2:]) if pure.is_absolute() else path


def _figure(value: object) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def may_have_hot_ops(b: dict) -> bool:
    """False where `hot_ops(b, …)` surely has neither rows nor notes: no profile, no instruction counts."""
    return bool(b.get("profile") or b.get("instructions"))


def _instruction_notes(b: dict, lang: str) -> list[str]:
    """instrument: instructions — callgrind's per-function Ir diff, one line per function."""
    from profopt_ci.analyze.instruction_entries import diff_lines

    block = b.get("instructions") or {}
    rows = block.get("function_diff") or []
    if not rows:
        return []
    return [clip(line, 200) for line in diff_lines(rows[:HOT_OPS_MAX])] + [block_note(lang, n) for n in block.get("notes") or []]


def noise(b: dict) -> dict:
    m = (b.get("metrics") or {}).get("step_time_ms") or {}
    samples = b.get("samples") or {}
    return {"name": clip(str(b.get("name", "?")), NAME_MAX), "rounds": b.get("rounds", DASH),
            "outliers": b.get("outlier_rounds", DASH),
            "base": _spread(samples.get("base")), "head": _spread(samples.get("head")),
            "p": pvalue(m.get("p_value")), "p_adj": pvalue(m.get("p_adjusted"))}


def _spread(samples: list[dict] | None) -> dict:
    values = [s["step_time_ms"] for s in samples or [] if isinstance(s.get("step_time_ms"), (int, float))]
    if not values:
        return {"text": DASH, "cv": DASH}
    mean = sum(values) / len(values)
    # Plain floats: statistics.stdev's exact Fractions cost a third of a 500-benchmark render.
    var = sum((x - mean) ** 2 for x in values) / (len(values) - 1) if len(values) > 1 else 0.0
    cv = var ** 0.5 / mean * 100 if len(values) > 1 and mean else None
    return {"text": f"{num(statistics.median(values))} ({num(min(values))}–{num(max(values))})",
            "cv": pct(cv, signed=False) if cv is not None else DASH}
