"""The store read for the site: every stored run as one compact row, and a cache of those rows.

In: a store (store/stores.py), the labels asked for, the site's cache folder. Out: `Nightly` rows,
oldest first (by the time in the file name, then the path): per run its commit, time, the
environment's material fields, the runner probe, what failed, and per benchmark the median and CI
of each metric (`step_time_ms`, `throughput`, `peak_memory_mb`, …, `instructions` where counted,
`quality:NAME` for each numeric recorded value).

A run file is never rewritten once stored (docs/baselines.md), so its row is too: the rows are kept
in `<out>/.profopt-site/nightlies.msgpack` and a rebuild reads and checks only the files the cache
lacks. Every file read goes through the store's own check (`stores.check_doc`: the schema, the
commit matching the name); one that fails is named in a warning and left out, as `baseline list` does.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path

import msgspec
import numpy as np

from profopt_ci.measure.fingerprint import MATERIAL, MATERIAL_IF_KNOWN
from profopt_ci.store.layout import Entry, Store, Warn, label_dir, stderr_warn
from profopt_ci.store.stores import check_doc, entries

CACHE_VERSION = 3
CACHE_DIR = ".profopt-site"  # hidden: actions/upload-pages-artifact leaves dotfiles out
READ_BATCH = 64


FIGURES = 4  # significant figures the site keeps (the store keeps 6; the pages show 3)


class Nightly(msgspec.Struct, frozen=True):
    """One stored run, as much of it as the site shows. The benchmarks that ran are `names`; each
    metric is one flat float64 array as bytes, [median, low, high] per name in that order (NaN: no
    figure): what site/series.py lays into its arrays without converting, and the cache decodes fast."""

    path: str
    ts: str
    label: str
    commit: str
    created: str
    env: dict[str, str]
    runner_ms: float | None
    runner_key: str  # probe and Python: only probes of one kind are compared
    failed: dict[str, str]
    names: list[str]
    units: list[str | None]
    params: list[str]  # each benchmark's params as compact JSON text (shown on its page)
    metrics: dict[str, bytes]


class _Cache(msgspec.Struct):
    version: int
    store: str
    rows: dict[str, Nightly]


def _fig(value: object) -> float | None:
    """A positive finite figure to FIGURES significant figures, else None."""
    if type(value) is not float and type(value) is not int or not 0 < value < math.inf:  # noqa: E721 — bool is no figure
        return None
    return float(f"{value:.{FIGURES}g}")


def _triples(bench: dict) -> dict[str, tuple[float | None, float | None, float | None]]:
    out = {}
    for key, m in (bench.get("metrics") or {}).items():
        med = _fig(m.get("median"))
        if med is not None:
            out[key] = (med, _fig(m.get("ci_low")), _fig(m.get("ci_high")))
    counted = bench.get("instructions")
    if isinstance(counted, dict) and _fig(counted.get("instructions")) is not None:
        runs = [v for v in (_fig(x) for x in counted.get("runs") or []) if v is not None]
        out["instructions"] = (_fig(counted["instructions"]), min(runs, default=None), max(runs, default=None))
    for name, values in (bench.get("quality") or {}).items():
        numbers = [_fig(v) for v in values or []]
        if numbers and None not in numbers:
            out[f"quality:{name}"] = (_fig(statistics.median(numbers)), min(numbers), max(numbers))
    return out


def _params(bench: dict) -> str:
    params = bench.get("params")
    return msgspec.json.encode(params).decode() if isinstance(params, dict) and params else ""


def row_of(entry: Entry, doc: dict) -> Nightly:
    """The site's row of one checked baseline@1 document."""
    fp = doc.get("fingerprint") if isinstance(doc.get("fingerprint"), dict) else {}
    runner = doc.get("runner") if isinstance(doc.get("runner"), dict) else {}
    names, units, params, per = [], [], [], []
    for name, bench in doc["benchmarks"].items():
        names.append(str(name))
        units.append(str(bench["unit"]) if bench.get("unit") else None)
        params.append(_params(bench))
        per.append(_triples(bench))
    metrics: dict[str, bytes] = {}
    for key in sorted({k for p in per for k in p}):
        flat: list[float | None] = []
        for p in per:
            flat.extend(p.get(key, (None, None, None)))
        metrics[key] = np.asarray(flat, dtype="<f8").tobytes()   # None → NaN
    failed = doc.get("failed") if isinstance(doc.get("failed"), dict) else {}
    return Nightly(
        path=entry.path, ts=entry.ts, label=str(doc["hardware_label"]), commit=str(doc["commit"]),
        created=str(doc.get("created") or ""),
        env={k: str(fp[k]) for k in MATERIAL + MATERIAL_IF_KNOWN if fp.get(k) is not None},
        runner_ms=_fig(runner.get("ms")),
        runner_key=f"{runner.get('probe')}/{runner.get('python')}",
        failed={str(k): str(v) for k, v in failed.items()},
        names=names, units=units, params=params, metrics=metrics,
    )


def _load_cache(path: Path, store: Store) -> dict[str, Nightly]:
    try:
        cache = msgspec.msgpack.decode(path.read_bytes(), type=_Cache)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    if cache.version != CACHE_VERSION or cache.store != store.describe():
        return {}
    return cache.rows


def _save_cache(path: Path, store: Store, rows: dict[str, Nightly]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(msgspec.msgpack.encode(_Cache(CACHE_VERSION, store.describe(), rows)))
    tmp.replace(path)


def _entries(store: Store, labels: list[str] | None, warn: Warn) -> list[Entry]:
    if not labels:
        return entries(store, None, warn=warn)
    seen: dict[str, Entry] = {}
    for folder in sorted({label_dir(lab) for lab in labels}):
        for e in entries(store, folder, warn=warn):
            seen[e.path] = e
    return list(seen.values())


def read_nightlies(store: Store, *, labels: list[str] | None, cache_dir: Path | None,
                   warn: Warn = stderr_warn) -> tuple[list[Nightly], int]:
    """The runs of `labels` (all when None), oldest first, and how many files were read this time."""
    found = _entries(store, labels, warn)
    cache_path = cache_dir / "nightlies.msgpack" if cache_dir is not None else None
    cached = _load_cache(cache_path, store) if cache_path is not None else {}
    rows = {e.path: cached[e.path] for e in found if e.path in cached}
    todo = [e for e in found if e.path not in rows]
    for i in range(0, len(todo), READ_BATCH):
        chunk = todo[i:i + READ_BATCH]
        raws = store.read([e.path for e in chunk])
        for e in chunk:
            doc, why = check_doc(raws.get(e.path), e)
            if doc is None:
                warn(f"{store.describe()}: skipped {e.path}: {why}")
                continue
            rows[e.path] = row_of(e, doc)
    if cache_path is not None and (todo or len(rows) != len(cached)):
        _save_cache(cache_path, store, rows)
    wanted = set(labels or [])
    out = [r for r in rows.values() if not wanted or r.label in wanted]
    out.sort(key=lambda r: (r.ts, r.path))
    return out, len(todo)
