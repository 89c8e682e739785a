"""A statement in a document: its English under a key, its message beside it under `<key>_msg`, so
a machine reads the one and a renderer says the other in the reader's language (words/i18n.say)."""
from __future__ import annotations

import msgspec


def put(doc: dict, key: str, msg: dict | msgspec.Struct) -> dict:
    """`doc` with a statement under `key`: its English, and its message beside it under `<key>_msg`
    (a `message()` dict, or a shared frozen `Message` made from one)."""
    doc[key], doc[f"{key}_msg"] = msg["text"] if type(msg) is dict else msg.text, msg
    return doc
