"""`profopt/results@1`: what one side measured (`run`, `merge`, each side of `compare`).

In: the spec (its hash, label, env), the commit, the machine fingerprint (`new_results`: the run's
own fields); then one entry per benchmark (`new_entry`, with the samples measured so far). Out: the
frozen `Results` (`build`; `pipeline.run_tree.results_of` builds a new one at each checkpoint),
written atomically (`save_json`, shared by every document), and read back with a version check and
validation against `schema/results.schema.json` by `documents.read.load_json`.
"""
from __future__ import annotations

import datetime as _dt
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec
from msgspec import Struct

from profopt_ci import __version__
from profopt_ci.documents.names import COMPARISON_SCHEMA, RESULTS_SCHEMA  # noqa: F401 — re-exported
from profopt_ci.documents.read import load_json, parse_document  # noqa: F401 — re-exported
from profopt_ci.documents.types import Results

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
STREAM_MIN_BENCHMARKS = 1_000  # past this a document is written compact, in chunks
CHUNK = 1_000
_MARK = b'"\x00benchmarks\x00"'

D = TypeVar("D", bound=Struct)


def build(data: dict) -> Results:
    """The results@1 of what a run measured so far (`new_results` and its entries): the frozen
    `Results`, made afresh at each checkpoint."""
    return construct(data, Results)


def construct(data: dict, kind: type[D], entries: list | None = None, entry: type | None = None) -> D:
    """`data` as the frozen document `kind`: every key and value checked against the model. A key it
    lacks, another type or a number out of range is a bug of the producer, never input: it raises
    (msgspec.ValidationError, the path in `data` named). `entries`, when given, is `data`'s
    `benchmarks` list handed over: each becomes its `entry` Struct in place, so each dict can go as
    its Struct is made (else both would be held at once for every entry)."""
    for i, part in enumerate(entries or ()):
        try:
            entries[i] = msgspec.convert(part, entry)  # type: ignore[index,arg-type]
        except msgspec.ValidationError as exc:
            raise msgspec.ValidationError(f"{exc} (in $.benchmarks[{i}])") from None
    return msgspec.convert(data, kind)


def save_json(doc: Struct, path: str | Path) -> None:
    """Write a built document (its Struct: only what the model allows is ever written) via a
    temporary file and rename, so a reader never sees half a file."""
    if not isinstance(doc, Struct):
        raise TypeError(f"save_json writes a built document (a documents.types Struct), not a {type(doc).__name__}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    if _big(doc):
        _write_streamed(doc, tmp)
    else:
        text = msgspec.json.encode(doc)
        if len(text) <= INDENT_MAX_CHARS:
            text = msgspec.json.format(text, indent=2)
        tmp.write_bytes(text + b"\n")
    tmp.replace(p)


def _big(doc: Struct) -> bool:
    benches = getattr(doc, "benchmarks", None)
    return isinstance(benches, (dict, list)) and len(benches) > STREAM_MIN_BENCHMARKS


def save_json_behind(doc: Struct, path: str | Path) -> Callable[[], None]:
    """`save_json` of a big document in a thread while the caller goes on (the reports); returns the
    wait, which re-raises what the write raised. Why: a big document's write spends most of its
    time in system calls, which release the GIL (docs/experiments.md, "Figures behind the code's
    choices"). A small document is written at once (the wait is then a no-op)."""
    if not _big(doc):
        save_json(doc, path)
        return lambda: None
    failure: list[BaseException] = []

    def write() -> None:
        try:
            save_json(doc, path)
        except BaseException as exc:  # handed to the waiter, which raises it in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=write, name="profopt-save-json", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failure:
            raise failure[0]
    return wait


def _write_streamed(doc: Struct, tmp: Path) -> None:
    """The document compact, `benchmarks` last and encoded CHUNK entries at a time: the whole
    text of a big document would otherwise be in memory at once."""
    encode = msgspec.json.Encoder().encode
    benches = doc.benchmarks  # type: ignore[attr-defined]
    # The rest of the document around a mark no encoding makes (a raw NUL: JSON text escapes it).
    head, tail = encode(msgspec.structs.replace(doc, benchmarks=msgspec.Raw(_MARK))).split(_MARK)
    is_list = isinstance(benches, list)
    keys = range(len(benches)) if is_list else list(benches)
    with open(tmp, "wb") as fh:
        fh.write(head + (b"[" if is_list else b"{"))
        for i in range(0, len(keys), CHUNK):
            chunk = benches[i:i + CHUNK] if is_list else {n: benches[n] for n in keys[i:i + CHUNK]}
            if i:
                fh.write(b",")
            fh.write(memoryview(encode(chunk))[1:-1])  # a view: the encoded text is not copied twice more
        fh.write((b"]" if is_list else b"}") + tail + b"\n")
