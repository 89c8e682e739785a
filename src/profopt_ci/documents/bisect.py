"""`profopt/bisect@1`: the commit that changed a benchmark (`profopt bisect`, `baseline refresh --bisect`).

In: what pipeline/bisect_refs.py found: both ends, the comparison of the ends per benchmark, the steps
(each with its first bad commit, the effect against its good end with the CI, the candidates when
untestable commits hide the boundary), and every probe. Out: the bisect@1 (`build`: the frozen
`Bisect` that `schema/bisect.schema.json` is generated from, with the nightly's `change_point` when
`baseline refresh --bisect` explains one), and
`load_bisect`, the version-checked reader.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profopt_ci import __version__
from profopt_ci.documents.names import BISECT_SCHEMA
from profopt_ci.documents.read import load_json
from profopt_ci.documents.results import construct, now_iso
from profopt_ci.documents.types_stored import Bisect


def now() -> str:
    return now_iso()


def build(*, created: str, first_bad: dict | None, good: tuple[str | None, str], bad: tuple[str | None, str], metric: str,
          threshold_pct: float, hardware_label: str, commits: int, ends: list[dict], steps: list[dict],
          probes: list[dict], notes: list[dict | str], seconds: float, change_point: dict | None = None) -> Bisect:
    """The document, the frozen `Bisect`; `first_bad` is the step earliest in the history (None: the
    ends did not differ); `change_point`: the nightly step it explains (`baseline refresh --bisect`)."""
    return construct({
        "schema": BISECT_SCHEMA,
        "tool_version": __version__,
        "created": created,
        "good": {"ref": good[0], "commit": good[1]},
        "bad": {"ref": bad[0], "commit": bad[1]},
        "metric": metric,
        "threshold_pct": threshold_pct,
        "hardware_label": hardware_label,
        "commits": commits,
        "ends": ends,
        "first_bad": first_bad,
        "steps": steps,
        "probes": probes,
        "notes": notes,
        "seconds": round(seconds, 2),
        **({"change_point": change_point} if change_point is not None else {}),
    }, Bisect)


def load_bisect(path: str | Path) -> dict[str, Any]:
    """Read a bisect@1 file."""
    return load_json(path, BISECT_SCHEMA)
