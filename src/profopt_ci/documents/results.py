"""`profopt/results@1`: what one side measured (`run`, `merge`, each side of `compare`).

In: the spec (its hash, label, env), the commit, the machine fingerprint; then one entry per benchmark
(`new_entry`) that the measure stage fills with samples. Out: the results@1 dict (`new_results`),
written atomically (`save_json`, shared by every document), and read back with a version check and
validation against `schema/results.schema.json` by `documents.read.load_json`.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from profopt_ci import __version__
from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA  # noqa: F401 — re-exported
from profopt_ci.documents.read import load_json, parse_document  # noqa: F401 — re-exported

if TYPE_CHECKING:  # types only: documents/ imports no stage at run time (docs/layout.md)
    from profopt_ci.spec.load import Benchmark, Spec


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_results(spec: Spec, *, commit: str | None, dirty: bool, fingerprint: dict, rounds: int) -> dict:
    return {
        "schema": RESULTS_SCHEMA,
        "tool_version": __version__,
        "created": now_iso(),
        "commit": commit,
        "dirty": dirty,
        "spec_hash": spec.hash,
        "hardware_label": spec.hardware_label,
        "fingerprint": fingerprint,
        "env": dict(spec.env),
        "rounds": rounds,
        "benchmarks": {},
    }


def new_entry(bench: Benchmark) -> dict:
    return {
        "kind": bench.kind,
        "params": bench.params,
        "unit": bench.unit,
        "items_per_iteration": bench.items_per_iteration,
        "status": "ok",
        "error": None,
        "samples": [],
        "summary": {},
        "profile": None,
    }


INDENT_MAX_CHARS = 2_000_000  # ~1,000 benchmarks of a comparison


def save_json(data: dict, path: str | Path) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    # indent forces json's pure-Python encoder (~10x slower): big documents are written compact.
    text = json.dumps(data, default=str)
    if len(text) <= INDENT_MAX_CHARS:
        text = json.dumps(data, indent=2, default=str)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(p)
