"""Collect a spec's suites in a side (a process of its environment) and turn them into `Benchmark`s.

In: a spec's `Suite`s, a `Side` (checkout, interpreter, venv), the settings' defaults and the
command line's overrides. Out: `Collection` — the benchmarks (each an ordinary `Benchmark` whose
callable is a suite target), what was skipped and why (file:line), and the errors of suites that
could not be collected at all; `probe` runs each collected benchmark once in that side and says
which cannot run there, and why.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from profopt_ci.harness.suite_targets import parse_target, target
from profopt_ci.measure.processes import Side, child_env, read_answer, run_child, tail
from profopt_ci.specfile.model import Benchmark, Spec, Suite, env_of, parse_constraints, resolve_settings
from profopt_ci.words.i18n import message

COLLECT_TIMEOUT_S = 600.0


@dataclass
class Collection:
    benchmarks: list[Benchmark] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {suite, name, file, line, why}
    errors: list[dict] = field(default_factory=list)  # {suite, file, line, error}: a suite not collected
    notes: list[dict] = field(default_factory=list)  # messages (note.suite_said)
    entries: list[dict] = field(default_factory=list)  # what the collector said of each kept benchmark
    answers: dict[str, dict] = field(default_factory=dict)  # suite key → the collector's answer (with its reach)

    def names(self) -> set[str]:
        return {b.name for b in self.benchmarks}


def key(suite: Suite) -> str:
    """A suite item's own key (two items may name one path with different selects)."""
    return f"{suite.index}:{label(suite)}"


def label(suite: Suite) -> str:
    """How a suite is named in messages and as the name of its failed placeholder."""
    return f"{suite.kind}:{suite.path}"


def _collector(job: dict, spec: Spec, side: Side, what: str, env: dict[str, str] | None = None) -> dict:
    """One collector process in the side's checkout and environment (plus the suite item's `env`, so
    a src layout's `PYTHONPATH: src` holds while collecting too); its answer, or an error entry."""
    if env:
        spec = replace(spec, env={**spec.env, **env})
    with tempfile.TemporaryDirectory(prefix="profopt-suite-") as work:
        job_path, out_path = Path(work) / "job.json", Path(work) / "out.json"
        job_path.write_text(json.dumps(job))
        res = run_child([side.python, "-m", "profopt_ci.suites.collector", str(job_path), str(out_path)],
                        cwd=side.root, env=child_env(spec, None, side), timeout_s=COLLECT_TIMEOUT_S)
        data, why = read_answer(out_path) if res.returncode == 0 and not res.timed_out else (None, "")
    if data is None:
        cause = "timed out" if res.timed_out else (why or f"exited {res.returncode}")
        return {"errors": [{"file": job.get("path"), "line": None,
                            "error": f"{what} on {side.name} {cause}\n{tail(res.stderr)}".strip()}]}
    return data


def collect(spec: Spec, suites: list[Suite], side: Side, overrides: dict[str, Any] | None = None,
            defaults: dict[str, Any] | None = None, reach: dict | None = None) -> Collection:
    """Every suite collected in `side`, in order; names made unique across suites. `reach`
    ({repo, venv}): each collector's reach recorded too (in `answers`)."""
    answers = {}
    for suite in suites:
        job = {"kind": suite.kind, "path": suite.path, "select": suite.select, **({"reach": reach} if reach else {})}
        answers[key(suite)] = _collector(job, spec, side, f"collecting {label(suite)}", env_of(suite.item.get("env")))
    return collection(spec, suites, answers, overrides, defaults)


def collection(spec: Spec, suites: list[Suite], answers: dict[str, dict], overrides: dict[str, Any] | None = None,
               defaults: dict[str, Any] | None = None) -> Collection:
    """The collectors' answers (suite key → answer) as a Collection: the benchmarks, what was
    skipped, the errors and notes — also from answers kept from an earlier collection (reach)."""
    out = Collection(answers=dict(answers))
    taken = {b.name for b in spec.benchmarks}
    defaults = defaults if defaults is not None else spec.raw.get("defaults") or {}
    for suite in suites:
        data = answers[key(suite)]
        for err in data.get("errors") or []:
            out.errors.append({"suite": label(suite), **err})
        for s in data.get("skipped") or []:
            out.skipped.append({"suite": label(suite), **s})
        if data.get("note"):
            out.notes.append(message("note.suite_said", suite=label(suite), text=str(data["note"])))
        files = data.get("files") or {}
        if files.get("added"):
            out.notes.append(message("note.suite_files_added", suite=label(suite), files=list(files["added"]),
                                     patterns=" ".join(files.get("python_files") or []), option="python_files",
                                     fixture="benchmark"))
        kept = [e for e in data.get("benchmarks") or [] if _params_match(e.get("params") or {}, suite.item.get("params"))]
        for entry in kept:
            bench = to_benchmark(suite, entry, taken, defaults, overrides or {})
            taken.add(bench.name)
            out.benchmarks.append(bench)
            out.entries.append({"suite": label(suite), **entry, "name": bench.name})
        if not kept and not data.get("errors"):
            out.errors.append({"suite": label(suite), "file": suite.path, "line": None,
                               "error": f"{label(suite)} collected no benchmarks"
                                        + (f" matching select {suite.select!r}" if suite.select else "")
                                        + _patterns_said(files)})
    return out


def _patterns_said(files: dict) -> str:
    """Why a pytest folder may have collected nothing: the python_files patterns that applied, the
    files they skip, and those of them profopt collected (they use the benchmark fixture)."""
    if not files:
        return ""
    patterns = " ".join(files.get("python_files") or []) or "?"
    skipped = list(files.get("unmatched") or [])
    more = int(files.get("unmatched_n") or len(skipped)) - len(skipped)
    parts = []
    if skipped:
        parts.append(f"the project's python_files ({patterns}) skip {', '.join(skipped)}"
                     + (f" and {more} more" if more > 0 else "") + ", which use neither the benchmark fixture nor the marker")
    if files.get("added"):
        parts.append(f"collected though python_files ({patterns}) skip them, as they use the benchmark fixture: "
                     f"{', '.join(files['added'])} (no test there matched python_functions or the select)")
    return " — " + "; ".join(parts) if parts else ""


def _params_match(params: dict, wanted: dict | None) -> bool:
    """The suite item's `params` filter: every named parameter is one of the listed values (as text)."""
    for key, allowed in (wanted or {}).items():
        values = allowed if isinstance(allowed, list) else [allowed]
        got = str(params.get(key))
        if not any(got == str(v) or got.strip("'\"") == str(v) for v in values):
            return False
    return True


def to_benchmark(suite: Suite, entry: dict, taken: set[str], defaults: dict[str, Any],
                 overrides: dict[str, Any]) -> Benchmark:
    """A collected benchmark as an ordinary `Benchmark` (settings from the item, then the overrides)."""
    name = entry["name"]
    if name in taken:  # the same test name in two files: the file's name tells them apart
        name = f"{Path(entry.get('file') or suite.path).name}::{name}"
    name = name.replace("/", ".")  # names become parts of file names (worker jobs, profiles)
    own = {**suite.item}
    if entry.get("timeout_s"):  # asv's `timeout`
        own.setdefault("timeout_s", entry["timeout_s"])
    settings = resolve_settings(defaults, {**own, **overrides})
    constraints = parse_constraints(suite.item.get("constraints"))
    recorded = {"memory": "mem_bytes", "track": "track"}.get(entry.get("asv_type") or "")
    if recorded and not any(c.metric == recorded for c in constraints):
        # asv's mem_/track_ values are compared between the sides, not timed
        constraints += parse_constraints([{"metric": recorded, "rel_tol": settings.threshold / 100}])
    judged = entry.get("judged")
    return Benchmark(
        name=name, callable=target(suite.kind, entry["locator"]), command=None,
        params=dict(entry.get("params") or {}), items_per_iteration=None,
        unit=entry.get("unit") or "items", goal=None, constraints=constraints, env=env_of(suite.item.get("env")),
        settings=settings, judged=tuple(judged) if judged is not None else None, suite=suite.kind)


def probe(spec: Spec, benches: list[Benchmark], side: Side) -> dict[str, str]:
    """Each suite benchmark run once in `side`: {name: why it cannot run there} for those that fail."""
    by_kind: dict[tuple, dict[str, str]] = {}  # one process per kind and env (each suite item's own)
    for b in benches:
        parsed = parse_target(b.callable)
        if parsed:
            by_kind.setdefault((parsed[0], tuple(sorted(b.env.items()))), {})[parsed[1]] = b.name
    failed: dict[str, str] = {}
    for (kind, env), names in by_kind.items():
        data = _collector({"kind": kind, "probe": list(names)}, spec, side, f"running the {kind} benchmarks once",
                          dict(env))
        answers = data.get("probe")
        if answers is None:
            err = (data.get("errors") or [{"error": "no answer"}])[0]["error"]
            failed.update({name: err for name in names.values()})
            continue
        for loc, why in answers.items():
            if why and loc in names:
                failed[names[loc]] = why
    return failed
