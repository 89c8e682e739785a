"""The documents' JSON Schemas, generated from their Structs: what `profopt schema NAME` prints and
what the packaged `schema/<name>.schema.json` files hold.

In: the Structs of documents/types*.py. Out: `DOCUMENTS` (each document name's Struct),
`json_schema`, `schema_text`; `python -m profopt_ci.documents.schemas --write` regenerates the
packaged files and `--check` exits 1 when one differs (tests/test_document_types.py runs it).
"""
from __future__ import annotations

import json
import sys
from typing import Any

import msgspec
from msgspec import Struct

from profopt_ci.documents.names import (
    BASELINE_SCHEMA,
    BISECT_SCHEMA,
    COMPARISON_SCHEMA,
    RESULTS_SCHEMA,
    SCHEMA_FILES,
    SIDES_SCHEMA,
)
from profopt_ci.documents.types import Results
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.documents.types_stored import Baseline, Bisect, Sides

DOCUMENTS: dict[str, type[Struct]] = {RESULTS_SCHEMA: Results, COMPARISON_SCHEMA: Comparison,
                                      BASELINE_SCHEMA: Baseline, SIDES_SCHEMA: Sides, BISECT_SCHEMA: Bisect}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one document, generated from its Struct."""
    generated = msgspec.json.schema(DOCUMENTS[name])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": name,
            "description": f"Generated from {DOCUMENTS[name].__module__}.{DOCUMENTS[name].__name__}: "
                           "`python -m profopt_ci.documents.schemas --write`; do not edit by hand.",
            **generated}


def schema_text(name: str) -> str:
    """The packaged file's exact text for one document."""
    return json.dumps(json_schema(name), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """`--write`: regenerate the packaged schema files; `--check`: exit 1 when one differs."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "schema"
    stale = [n for n in DOCUMENTS if (folder / f"{SCHEMA_FILES[n]}.schema.json").read_text() != schema_text(n)]
    if "--write" in argv:
        for name in DOCUMENTS:
            (folder / f"{SCHEMA_FILES[name]}.schema.json").write_text(schema_text(name), encoding="utf-8")
        print(f"wrote {len(DOCUMENTS)} schemas to {folder}")
        return 0
    for name in stale:
        print(f"{folder / SCHEMA_FILES[name]}.schema.json differs from its Struct in documents/types*.py (run with --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
