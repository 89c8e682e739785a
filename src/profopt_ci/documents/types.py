"""The typed model of profopt's four documents: results@1, comparison@1, baseline@1, sides@1.

In: nothing. Out: msgspec Structs, the one source of the documents' JSON Schemas (the packaged
`schema/<name>.schema.json` files are generated from them) and the types every reader decodes into.
"""
from __future__ import annotations

from typing import Any

import msgspec


class Message(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A statement profopt makes in a document, as data: the message id (`bottleneck.python`), its
    fields, and `text`, the English rendering kept beside them for machines (report catalogs render
    `id` + `args` in any language)."""

    id: str
    args: dict[str, Any] = {}
    text: str
