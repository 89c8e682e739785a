"""Baselines in the store: `profopt baseline list|show|push`, and what refresh and compare store or read.

In: results@1 documents, stored `profopt/baseline@1` documents, a store. Out: the baseline summary
of a run (`from_results`: per benchmark the per-round medians of each metric with their median and
an order-statistic 95% CI, the round count and a cost estimate, plus the recorded quality values
for constraints; never raw traces), samples rebuilt from a summary (`samples_from_summary`), the
lines of `list` and `show`, the baseline a query picks, and recorded costs for sharding.
The verbs that measure (refresh, `compare --baseline stored`) are `pipeline/stored.py`.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profopt_ci.documents import baseline as baseline_doc
from profopt_ci.documents.names import RESULTS_SCHEMA
from profopt_ci.documents.types_stored import Baseline
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.figures import is_measurement as _usable
from profopt_ci.figures import sig
from profopt_ci.gitutil import commit_info, git, toplevel
from profopt_ci.measure.fingerprint import MATERIAL, MATERIAL_IF_KNOWN, material_keys
from profopt_ci.measure.processes import METRICS
from profopt_ci.measure.rounds import stderr_log
from profopt_ci.specfile.load import Spec
from profopt_ci.store.stores import (
    BASELINE_SCHEMA,
    SHORT,
    GitStore,
    Store,
    age_days,
    at_or_before,
    entries,
    find,
    load,
    open_store,
)

CI_CONFIDENCE = 0.95
PROCESS_OVERHEAD_MS = 150.0   # a fresh worker process per sample: interpreter start and imports


# ---- the stored summary ------------------------------------------------------------------------


def median_ci(values: list[float], confidence: float = CI_CONFIDENCE) -> tuple[float | None, float | None]:
    """Distribution-free CI of the median from order statistics (as benchstat); None when n is too small."""
    from scipy.stats import binom

    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None, None
    half = (1 - confidence) / 2
    k = 0   # the k smallest and k largest values may lie outside the interval
    while binom.cdf(k, n, 0.5) <= half:
        k += 1
    if k == 0:
        return None, None
    return xs[k - 1], xs[n - k]


def bench_summary(entry: dict) -> dict:
    """One benchmark of a results@1 file, compacted: per-round values, median, CI, cost."""
    samples = entry.get("samples") or []
    metrics = {}
    for m in METRICS:
        vals = [float(s[m]) for s in samples if _usable(s.get(m))]
        if not vals:
            continue
        lo, hi = median_ci(vals)
        metrics[m] = {"median": sig(statistics.median(vals), 6), "ci_low": sig(lo, 6),
                      "ci_high": sig(hi, 6), "confidence": CI_CONFIDENCE, "n": len(vals),
                      "values": [sig(v, 6) for v in vals]}
    quality: dict[str, list] = {}
    for s in samples:
        for k, v in (s.get("quality") or {}).items():
            quality.setdefault(k, []).append(v)
    measured = [sum(s.get("values_ms") or []) * (s.get("loops") or 1) for s in samples]
    out = {
        "kind": entry.get("kind"), "params": entry.get("params") or {}, "unit": entry.get("unit"),
        "items_per_iteration": entry.get("items_per_iteration"), "rounds": len(samples),
        "round_cost_ms": sig(statistics.median(measured) + PROCESS_OVERHEAD_MS, 6) if measured else None,
        "metrics": metrics, "quality": quality,
    }
    if entry.get("quality"):  # the quality pass: constraints compare a stored trace step by step
        out["quality_trace"] = entry["quality"]
    if _counted(entry):  # instrument: instructions — the runs' counts, compared again by compare_stored
        out["instructions"] = entry["instructions"]
    return out


def _counted(entry: dict) -> bool:
    return (entry.get("instructions") or {}).get("status") == "ok"


def from_results(results: dict, *, ref: str | None = None) -> Baseline:
    """A baseline@1 document from a results@1 one (only benchmarks that finished are kept)."""
    benches, failed = {}, {}
    for name, entry in (results.get("benchmarks") or {}).items():
        if entry.get("status") == "ok" and (entry.get("samples") or _counted(entry)):
            benches[name] = bench_summary(entry)
        else:
            failed[name] = entry.get("status") or "failed"
    return baseline_doc.build(results, ref=ref, benchmarks=benches, failed=failed)


def samples_from_summary(summary: dict) -> list[dict]:
    """Sample-shaped dicts rebuilt from stored per-round values, for the unpaired analysis."""
    metrics = summary.get("metrics") or {}
    quality = summary.get("quality") or {}
    n = max([len(m.get("values") or []) for m in metrics.values()] + [len(v) for v in quality.values()] + [0])
    out = []
    for i in range(n):
        s: dict[str, Any] = {"round": i, "order": 0}
        for m, data in metrics.items():
            vals = data.get("values") or []
            s[m] = vals[i] if i < len(vals) else None
        s["quality"] = {k: v[i] for k, v in quality.items() if i < len(v)}
        out.append(s)
    return out


def as_results(doc: dict) -> dict:
    """A stored baseline in the shape of results@1, so `profopt diff` can take it as one side."""
    benches = {}
    for name, b in (doc.get("benchmarks") or {}).items():
        samples = samples_from_summary(b)
        benches[name] = {"kind": b.get("kind"), "params": b.get("params") or {}, "unit": b.get("unit"),
                         "items_per_iteration": b.get("items_per_iteration"), "status": "ok", "error": None,
                         "samples": samples, "profile": None,
                         "summary": {m: v.get("median") for m, v in (b.get("metrics") or {}).items()}}
        if b.get("instructions"):
            benches[name]["instructions"] = b["instructions"]
        if b.get("quality_trace"):
            benches[name]["quality"] = b["quality_trace"]
    keep = ("tool_version", "created", "commit", "dirty", "spec_hash", "hardware_label", "fingerprint", "env",
            "rounds", "seed")
    return {"schema": RESULTS_SCHEMA, **{k: doc.get(k) for k in keep}, "benchmarks": benches,
            "stored_baseline": True}


def load_side(path: str | Path) -> dict:
    """results@1, or a stored baseline@1 (from `profopt baseline show --json`) as results@1."""
    from profopt_ci.documents.read import check_document, load_json

    data = load_json(path, (RESULTS_SCHEMA, BASELINE_SCHEMA))  # its errors name the file and what was expected
    if data["schema"] == BASELINE_SCHEMA:
        data = check_document(as_results(data), str(path), (RESULTS_SCHEMA,))
    return data


# ---- refresh ----------------------------------------------------------------------------------


def _branch(root: Path) -> str | None:
    name = git(["rev-parse", "--abbrev-ref", "HEAD"], root, check=False)
    return None if not name or name == "HEAD" else name


def push(store: str | None, cwd: Path) -> int:
    """`profopt baseline push`: send runs a `--no-push` refresh left in the local data branch."""
    target = open_store(store, toplevel(cwd))
    if not isinstance(target, GitStore):
        raise UsageError("baseline push is for a git store (git:BRANCH); a dir store needs no push")
    return target.sync()


# ---- list and show ------------------------------------------------------------------------------


def list_lines(store: Store, *, label: str | None, limit: int) -> list[str]:
    rows = entries(store, None)
    if label is not None:
        from profopt_ci.store.layout import label_dir

        rows = [e for e in rows if e.label == label_dir(label)]
    by_label: dict[str, list] = {}
    for e in rows:
        by_label.setdefault(e.label, []).append(e)
    shown = [e for group in by_label.values() for e in (group[:limit] if limit else group)]
    docs = {e.path: d for e, d in load(store, shown)}
    lines = [f"{'label':<20} {'measured (UTC)':<17} {'commit':<12} {'ref':<14} {'spec':<8} {'benchmarks':>10}  id"]
    for lab in sorted(by_label):
        group = by_label[lab]
        for e in (group[:limit] if limit else group):
            d = docs.get(e.path)
            if d is None:
                continue
            when = f"{e.ts[:4]}-{e.ts[4:6]}-{e.ts[6:8]} {e.ts[9:11]}:{e.ts[11:13]}"
            lines.append(f"{d['hardware_label']:<20} {when:<17} {d['commit'][:SHORT]:<12} "
                         f"{str(d.get('ref') or '-')[:14]:<14} {str(d.get('spec_hash') or '-')[:8]:<8} "
                         f"{len(d['benchmarks']):>10}  {e.id}")
        if limit and len(group) > limit:
            lines.append(f"{'':<20} … {len(group) - limit} older run(s) of {lab} (--limit 0 shows all)")
    return lines


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def show_lines(store: Store, entry_path: str, doc: dict) -> list[str]:
    fp = doc.get("fingerprint") or {}
    lines = [
        f"baseline {entry_path} ({store.describe()})",
        f"label {doc['hardware_label']} · commit {doc['commit'][:SHORT]}"
        + (f" ({doc['ref']})" if doc.get("ref") else "")
        + f" · measured {str(doc.get('created'))[:16].replace('T', ' ')} UTC"
        + f" ({_age_text(doc)})"
        + f" · spec {str(doc.get('spec_hash') or '-')[:8]} · profopt {doc.get('tool_version', '?')}",
        "environment: " + " · ".join(f"{k} {fp.get(k)}" for k in MATERIAL + MATERIAL_IF_KNOWN + ("python", "os")
                                   if fp.get(k) is not None),
        "",
        f"{'benchmark':<28} {'rounds':>6} {'step time ms (95% CI)':>30} {'throughput':>12} {'peak MB':>9}",
    ]
    for name, b in doc["benchmarks"].items():
        m = b.get("metrics") or {}
        st = m.get("step_time_ms") or {}
        ci = f"{_fmt(st.get('median'))} ({_fmt(st.get('ci_low'))}–{_fmt(st.get('ci_high'))})" if st else "-"
        tp = (m.get("throughput") or {}).get("median")
        mem = (m.get("peak_memory_mb") or {}).get("median")
        lines.append(f"{name[:28]:<28} {b.get('rounds', '-'):>6} {ci:>30} {_fmt(tp):>12} {_fmt(mem):>9}")
    for name, status in (doc.get("failed") or {}).items():
        lines.append(f"{name[:28]:<28} {status} (not stored)")
    return lines


def pick(store: Store, repo: Path | None, *, ident: str | None, label: str | None, at: str | None) -> tuple[str, dict]:
    """The run `profopt baseline show` means: an id, or the newest for a label at or before a commit."""
    if ident:
        e, doc = find(store, ident)
        return e.path, doc
    if label is None:
        raise UsageError("baseline show: name a run (an id from `profopt baseline list`) or a label (--label, "
                         "or a spec with a hardware_label)")
    if repo is None:
        rows = load(store, entries(store, label)[:1], label=label)
        if not rows:
            raise UsageError(f"{store.describe()}: no stored baseline for label {label}")
        return rows[0][0].path, rows[0][1]
    from profopt_ci.measure.checkouts import resolve_commit

    commit = resolve_commit(repo, at or "HEAD")
    found = at_or_before(store, repo, label, commit, limit=1)
    if not found:
        raise UsageError(f"{store.describe()}: no stored baseline for label {label} at or before {commit[:SHORT]}")
    return found[0][0].path, found[0][1]


# ---- compare against the store ----------------------------------------------------------------


def material_differences(stored: dict, current: dict) -> list[tuple[str, Any, Any]]:
    return [(k, stored.get(k), current.get(k)) for k in material_keys(stored, current)]


def _mismatch_text(diffs: list[tuple[str, Any, Any]]) -> str:
    return "; ".join(f"{k}: stored {a!r} vs now {b!r}" for k, a, b in diffs)


def _age_text(doc: dict) -> str:
    age = age_days(doc)
    if age is None:
        return "of unknown age"
    return f"{age * 24:.0f} hours old" if age < 2 else f"{age:.0f} days old"


def _baseline_meta(mode: str, target: Store, path: str | None, doc: dict | None, dist: int | None,
                   base_commit: str) -> dict:
    return {"mode": mode, "store": target.describe(), "path": path,
            "commit": doc["commit"] if doc else None, "created": doc.get("created") if doc else None,
            "age_days": None if doc is None or age_days(doc) is None else round(age_days(doc), 2),
            "commits_before_base": dist, "base_commit": base_commit}


RUNNER_HISTORY_N = 20


def runner_history(spec: Spec, store: str | None, record: dict | None) -> list[float]:
    """The runner probes of the label's newest stored runs (quietly none: no store, no branch yet)."""
    from profopt_ci.measure import runner
    from profopt_ci.store.stores import entries, load

    repo = toplevel(spec.path.resolve().parent)
    if record is None or (repo is None and not str(store or "").startswith("dir:")):
        return []
    quiet = lambda _message: None  # noqa: E731 — a missing store is the normal case of a first run
    try:
        target = open_store(store, repo, log=quiet, push=False)
        chosen = entries(target, spec.hardware_label, warn=quiet)[:RUNNER_HISTORY_N]
        docs = [doc for _, doc in load(target, chosen, label=spec.hardware_label, warn=quiet)]
    except (UsageError, InfraError, OSError):
        return []
    return runner.history_of(docs, record)


def nightly_step_times(spec: Spec, store: str | None, commit: str) -> tuple[dict[str, float], str | None]:
    """Each benchmark's step time in the newest nightly at or before `commit` (the median of its
    rounds) and that nightly's commit; quietly nothing without a store, a branch or a run."""
    repo = toplevel(spec.path.resolve().parent)
    if repo is None:
        return {}, None
    quiet = lambda _message: None  # noqa: E731 — no store is the normal case of a first run
    try:
        found = at_or_before(open_store(store, repo, log=quiet, push=False), repo, spec.hardware_label, commit,
                             limit=1, warn=quiet)
    except (UsageError, InfraError, OSError):
        return {}, None
    if not found:
        return {}, None
    _, doc, _ = found[0]
    out = {}
    for name, stored in (doc.get("benchmarks") or {}).items():
        step = ((stored or {}).get("metrics") or {}).get("step_time_ms") or {}
        if _usable(step.get("median")):
            out[name] = float(step["median"])
    return out, doc.get("commit")


def costs(spec: Spec, store: str | None, *, log: Callable[[str], None] = stderr_log) -> tuple[dict[str, float], str | None]:
    """Recorded cost per benchmark (ms of one full run) from the newest baseline at or before HEAD."""
    root = spec.path.resolve().parent
    repo = toplevel(root)
    commit, _ = commit_info(root)
    if repo is None or commit is None:
        return {}, None
    try:
        found = at_or_before(open_store(store, repo), repo, spec.hardware_label, commit, limit=1)
    except (UsageError, InfraError) as exc:
        log(f"profopt: no recorded costs for sharding ({exc}); splitting by name")
        return {}, None
    if not found:
        return {}, None
    _, doc, _ = found[0]
    out = {}
    for b in spec.benchmarks:
        stored = doc["benchmarks"].get(b.name) or {}
        per_round = stored.get("round_cost_ms")
        if _usable(per_round):
            out[b.name] = float(per_round) * b.settings.rounds
    return out, doc["commit"]
