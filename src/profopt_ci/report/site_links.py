"""Where a benchmark's page lies in the site `profopt site` builds, for the site and for a PR's report.

In: a hardware label and a benchmark name (repository text: anything). Out: the page's path
relative to the site's root (`b/<label>/<name>-<hash>.html`) and its data script's
(`data/<label>/<name>-<hash>.js`), both made of `[A-Za-z0-9._-]` only; and the page's URL under a
site URL (`--site-url`). The hash keeps two names that read the same once cleaned apart. The report
owns this so that a report links to the site without importing the site.
"""
from __future__ import annotations

import hashlib
import re

_BAD = re.compile(r"[^A-Za-z0-9._-]")
NAME_CHARS = 60


def _part(text: str, limit: int) -> str:
    safe = _BAD.sub("_", text.strip())[:limit] or "_"
    return "_" + safe if safe.startswith(".") else safe


def slug(label: str, name: str) -> str:
    digest = hashlib.blake2b(f"{label}\0{name}".encode(), digest_size=5).hexdigest()
    return f"{_part(label, 80)}/{_part(name, NAME_CHARS)}-{digest}"


def page_path(label: str, name: str) -> str:
    return f"b/{slug(label, name)}.html"


def data_path(label: str, name: str) -> str:
    return f"data/{slug(label, name)}.js"


def page_url(site_url: str, label: str, name: str) -> str:
    return f"{site_url.rstrip('/')}/{page_path(label, name)}"
