"""`profopt schema NAME`: print the JSON Schema of a profopt document, for editors and integrators.

In: NAME, one of results, comparison, baseline, sides, bisect (generated from the Structs of documents/types*.py)
or spec (profopt.yml's, generated from specfile/keys.py). Out: the packaged `schema/<NAME>.schema.json`, byte for
byte, on stdout and exit 0; an unknown NAME is a `UsageError` (exit 2) listing the names.
"""
from __future__ import annotations

import argparse
import sys
from importlib import resources

from profopt_ci.documents.names import SCHEMA_FILES
from profopt_ci.errors import EXIT_OK, UsageError

NAMES = (*SCHEMA_FILES.values(), "spec")
FILES = {**{name: name for name in SCHEMA_FILES.values()}, "spec": "profopt"}  # NAME → schema/<file>.schema.json


def register(sub) -> None:
    s = sub.add_parser("schema", help="print the JSON Schema of a document or of profopt.yml")
    s.add_argument("name", metavar="NAME", help=f"one of {', '.join(NAMES)}")
    s.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.name not in FILES:
        raise UsageError(f"unknown schema {args.name[:80]!r} — expected one of {', '.join(NAMES)}")
    data = resources.files("profopt_ci").joinpath(f"schema/{FILES[args.name]}.schema.json").read_bytes()
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return EXIT_OK
