"""`profopt/results@1`: what one side measured. Build, save atomically, load with a version check."""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from profopt_ci import __version__
from profopt_ci.errors import UsageError
from profopt_ci.spec import Benchmark, Spec

RESULTS_SCHEMA = "profopt/results@1"
COMPARISON_SCHEMA = "profopt/comparison@1"


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


def save_json(data: dict, path: str | Path) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(p)


def load_json(path: str | Path, expect: str) -> dict[str, Any]:
    """Load a profopt file and insist on its schema: an unknown one is a user error, not a guess."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file — expected a {expect} file") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}) — expected a {expect} file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    got = data.get("schema") if isinstance(data, dict) else None
    if got != expect:
        raise UsageError(f"{p}: schema is {got!r} — expected {expect!r}")
    return data
