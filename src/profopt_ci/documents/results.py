"""`profopt/results@1`: what one side measured. Build, save atomically, load with a version check."""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from profopt_ci import __version__
from profopt_ci.errors import UsageError
from profopt_ci.spec.load import Benchmark, Spec

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


MAX_DOCUMENT_BYTES = 4 * 1024 ** 3  # a results or comparison file past 4 GiB is not one of ours
_SCHEMA_FILES = {RESULTS_SCHEMA: "results", COMPARISON_SCHEMA: "comparison"}


class _BadNumber(ValueError):
    pass


def _no_constant(text: str) -> float:
    raise _BadNumber(f"{text} is not a number JSON allows")


def _int(text: str) -> int:
    if len(text) > 40:  # far past any count or seed; Python would refuse 4,300+ digits anyway
        raise _BadNumber(f"an integer of {len(text)} digits (at most 40)")
    return int(text)


def _where_bad(raw: bytes) -> str:
    """'$.path ' of the first NaN/inf/huge integer, found by a lenient re-parse (only on failure)."""
    from profopt_ci.documents.check import first_bad_number, json_path

    try:
        path = first_bad_number(json.loads(raw.decode("utf-8")))
    except (ValueError, RecursionError):
        return ""
    return f"{json_path(path)}: " if path is not None else ""


def load_json(path: str | Path, expect: str | tuple[str, ...]) -> dict[str, Any]:
    """Load a profopt file, insist on its `schema` and validate it against the packaged JSON Schema
    (results@1, comparison@1): a bad file is a user error naming the file and the field's path."""
    p = Path(path)
    wanted = (expect,) if isinstance(expect, str) else expect
    shown = " or ".join(wanted)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_DOCUMENT_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file — expected a {shown} file") from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise UsageError(f"{p}: larger than 4 GiB — expected a {shown} file")
    return parse_document(raw, str(p), wanted)


def parse_document(raw: bytes, p: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Bytes of a profopt document → the validated dict; `p` names it in errors (a path, an artifact)."""
    from profopt_ci.documents.check import validate
    from profopt_ci.gc_pause import paused

    shown = " or ".join(wanted)
    try:
        with paused():
            data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}) — expected a {shown} file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: cannot read ({exc})") from None
    except ValueError as exc:  # _BadNumber, or an integer Python refuses to convert
        raise UsageError(f"{p}: {_where_bad(raw)}{str(exc)[:200]} — expected a {shown} file") from None
    except RecursionError:
        raise UsageError(f"{p}: nested too deeply — expected a {shown} file") from None
    got = data.get("schema") if isinstance(data, dict) else None
    if got not in wanted:
        raise UsageError(f"{p}: schema is {str(got)[:80]!r} — expected {' or '.join(repr(w) for w in wanted)}")
    if got in _SCHEMA_FILES:
        validate(data, _SCHEMA_FILES[got], p)
    return data
