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
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from profopt_ci import __version__
from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA  # noqa: F401 — re-exported
from profopt_ci.documents.read import load_json, parse_document  # noqa: F401 — re-exported
from profopt_ci.documents.types import json_default

if TYPE_CHECKING:  # types only: documents/ imports no stage at run time (docs/layout.md)
    from profopt_ci.specfile.load import Benchmark, Spec


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
STREAM_MIN_BENCHMARKS = 1_000  # past this a document is written compact, by msgspec, in chunks
CHUNK = 1_000


def _big(data: dict) -> bool:
    benches = data.get("benchmarks")
    return isinstance(benches, (dict, list)) and len(benches) > STREAM_MIN_BENCHMARKS


def save_json(data: dict, path: str | Path) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    if _big(data):
        _write_streamed(data, tmp)
    else:
        # indent forces json's pure-Python encoder (~10x slower): big documents are written compact.
        text = json.dumps(data, default=json_default)
        if len(text) <= INDENT_MAX_CHARS:
            text = json.dumps(data, indent=2, default=json_default)
        tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(p)


def save_json_behind(data: dict, path: str | Path) -> Callable[[], None]:
    """`save_json` of a big document in a thread while the caller goes on (the reports); returns the
    wait, which re-raises what the write raised. The thread only reads `data`: nothing may change it
    until the wait. Why: at 10⁵ benchmarks the ~450 MB write spends ~1 s in system calls, which
    release the GIL. A small document is written at once (the wait is then a no-op)."""
    if not _big(data):
        save_json(data, path)
        return lambda: None
    failure: list[BaseException] = []

    def write() -> None:
        try:
            save_json(data, path)
        except BaseException as exc:  # handed to the waiter, which raises it in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=write, name="profopt-save-json", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failure:
            raise failure[0]
    return wait


def _write_streamed(data: dict, tmp: Path) -> None:
    """The document compact, `benchmarks` last and encoded CHUNK entries at a time: at 10⁵
    benchmarks the whole text would be ~450 MB in memory at once, and json.dumps takes ~9 s."""
    import msgspec

    encode = msgspec.json.Encoder(enc_hook=str).encode
    rest = {k: v for k, v in data.items() if k != "benchmarks"}
    benches = data["benchmarks"]
    is_list = isinstance(benches, list)
    keys = range(len(benches)) if is_list else list(benches)
    with open(tmp, "wb") as fh:
        fh.write(encode(rest)[:-1] + (b',"benchmarks":' if rest else b'"benchmarks":') + (b"[" if is_list else b"{"))
        for i in range(0, len(keys), CHUNK):
            chunk = benches[i:i + CHUNK] if is_list else {n: benches[n] for n in keys[i:i + CHUNK]}
            if i:
                fh.write(b",")
            fh.write(memoryview(encode(chunk))[1:-1])  # a view: the ~450 MB are not copied twice more
        fh.write((b"]" if is_list else b"}") + b"}\n")
