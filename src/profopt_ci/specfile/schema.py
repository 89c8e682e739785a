"""profopt.yml's JSON Schema, generated from the typed model (specfile/keys.py), for editors and `profopt schema spec`.

In: `SpecKeys` and `DEFAULTS`. Out: `json_schema`, `schema_text` (the packaged file's exact text) and
`schema` (the packaged file, read); `python -m profopt_ci.specfile.schema --write` regenerates
`schema/profopt.schema.json` and `--check` exits 1 when it differs (tests/test_spec.py runs it).
"""
from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from profopt_ci.specfile.keys import DEFAULTS, LOCKSTEP_DEFAULTS, SETTING_KEYS, SpecKeys

FILE = "schema/profopt.schema.json"


def json_schema() -> dict[str, Any]:
    """The schema of profopt.yml: the model's, with each setting's default (DEFAULTS) written in."""
    generated = msgspec.json.schema(SpecKeys)
    for struct in generated["$defs"].values():
        for key, prop in struct["properties"].items():
            if key in SETTING_KEYS:
                prop["default"] = getattr(DEFAULTS, key)
            if key in LOCKSTEP_DEFAULTS:
                prop["description"] += (f" (default {LOCKSTEP_DEFAULTS[key]} with pairing: lockstep, "
                                        f"{getattr(DEFAULTS, key)} with pairing: rounds)")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://github.com/org/profopt-action/blob/v1/src/profopt_ci/{FILE}",
            "title": "profopt.yml (version 1)",
            "description": "Generated from profopt_ci.specfile.keys.SpecKeys: "
                           "`python -m profopt_ci.specfile.schema --write`; do not edit by hand.",
            **generated}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def schema() -> dict[str, Any]:
    """The packaged JSON Schema of profopt.yml."""
    return json.loads(resources.files("profopt_ci").joinpath(FILE).read_text(encoding="utf-8"))


def main(argv: list[str]) -> int:
    """`--write`: regenerate the packaged file; `--check`: exit 1 when it differs from the model."""
    path = Path(__file__).resolve().parent.parent / FILE
    if "--write" in argv:
        path.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {path}")
        return 0
    if path.read_text(encoding="utf-8") != schema_text():
        print(f"{path} differs from specfile/keys.py (run with --write)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
