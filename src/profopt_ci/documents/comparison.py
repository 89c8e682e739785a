"""`profopt/comparison@1`: base vs head, the document every later stage reads (report, publish, action).

In: from the analysis, the judged benchmark entries and the overall verdict (decision, summary
sentence, counts — analyze.decide computes them; this module only records them); each side's ref,
commit, fingerprint and env; the differences besides code; the notes the report must show; and the
optional sections of the verb that builds it:
- `compare`: `pairing` (kind and CPU set), `dirty`, `new_in_pr`, `runner` (the runner probe against
  the label's history: measure/runner.py);
- `policy` (the `--fail-on` rule and who broke it: every compare and diff of the CLI; the accept
  label when the pull request carries it), `baseline`, `history`, `drift` (`compare --baseline
  stored|both`: pipeline.stored);
- `reused` (a label event's comparison taken from the cache: pipeline/reuse.py, through `rejudged`).
Out: the comparison@1 (`build`): the frozen `Comparison` Struct (documents/types_comparison.py, which
`schema/comparison.schema.json` is generated from), and
`load_comparison`, the version-checked reader (documents.read). The pipeline computes every part
first and builds the document last: nothing edits it afterwards (tests/test_frozen.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from profopt_ci import __version__
from profopt_ci.documents.names import COMPARISON_SCHEMA
from profopt_ci.documents.read import load_json
from profopt_ci.documents.results import construct, now_iso
from profopt_ci.documents.types import Note
from profopt_ci.documents.types_comparison import Comparison, Entry
from profopt_ci.documents.types_sections import Policy, Reused
from profopt_ci.words.i18n import message


def build(*, mode: str, hardware_label: str, entries: list[dict], verdict: dict[str, Any], base: dict,
          head: dict, diffs: list[dict], seed: int | None, notes: list[dict | str], threshold_pct: float | None,
          confidence: float, pairing: dict | None = None, dirty: bool | None = None,
          new_in_pr: list[dict] | None = None, runner: dict | None = None, policy: dict | None = None,
          baseline: dict | None = None, history: dict | None = None, drift: dict | None = None,
          reach: dict | None = None, reused: dict | None = None) -> Comparison:
    """One comparison@1, the frozen `Comparison`. `verdict` is {decision, summary, summary_msg, counts}; `mode`
    is paired (compare) or unpaired (diff, a stored baseline). The optional sections are left out
    when None. `entries` is handed over: each becomes its `Entry` in place."""
    rounds = max((e["rounds"] for e in entries), default=0)
    if diffs:
        scopes = sorted({d["scope"] for d in diffs})
        notes = [message("note.not_only_code", scopes=scopes), *notes]
    out: dict[str, Any] = {
        "schema": COMPARISON_SCHEMA,
        "tool_version": __version__,
        "created": now_iso(),
        "mode": mode,
        "hardware_label": hardware_label,
        "seed": seed,
        "rounds": rounds,
        "threshold_pct": threshold_pct,
        "confidence": confidence,
        "base": base,
        "head": head,
        "differences": diffs,
        "decision": verdict["decision"],
        "summary": verdict["summary"],
        "summary_msg": verdict.get("summary_msg"),
        "counts": verdict["counts"],
        "notes": notes,
        "benchmarks": entries,
    }
    if out["summary_msg"] is None:  # a verdict put together by hand (tests, the demo): its English alone
        del out["summary_msg"]
    sections = (("pairing", pairing), ("reach", reach), ("dirty", dirty), ("new_in_pr", new_in_pr), ("runner", runner),
                ("policy", policy), ("reused", reused), ("baseline", baseline), ("history", history), ("drift", drift))
    for key, value in sections:
        if value is not None:
            out[key] = value
    return construct(out, Comparison, entries, Entry)


_ENTRY_FIELDS = {f.name: f.type for f in msgspec.structs.fields(Entry)}


def entry(judged: dict) -> Entry:
    """A judged benchmark (the judge's draft, decided: analyze/judge.py) as its frozen `Entry`, every
    key and value checked against the model: one the model lacks is a bug that raises."""
    return msgspec.convert(judged, Entry)


def revised(e: Entry, **changes: Any) -> Entry:
    """A new entry: `e` with `changes`, each change checked and typed as its field."""
    try:
        return msgspec.structs.replace(e, **{k: msgspec.convert(v, _ENTRY_FIELDS[k]) for k, v in changes.items()})
    except KeyError as exc:
        raise msgspec.ValidationError(f"Object contains unknown field `{exc.args[0]}` (an Entry)") from None


def policy(fail_on: str, failing: list[str], label: str | None = None) -> dict:
    """The `policy` section: the `--fail-on` rule and the benchmarks that broke it (exit 1 if any);
    with `label`, the accept label the pull request carries, which makes a failing policy pass."""
    out: dict = {"fail_on": fail_on, "failing": list(failing)}
    if label is not None:
        out.update(accepted=bool(failing), label=label)
    return out


def rejudged(doc: Comparison, *, policy: dict | None, reused: dict, notes: list[dict],
             drop: tuple[str, ...] = ()) -> Comparison:
    """A new comparison of the same measurement: `doc`'s figures with a policy judged anew, `notes`
    said first (the notes of ids in `drop`, said by the judgement it replaces, left out), and
    `reused` recording when the rounds ran. `doc` stays as it was."""
    kept = [n for n in doc.notes if getattr(n, "id", None) not in drop]
    return msgspec.structs.replace(
        doc, created=now_iso(), policy=msgspec.UNSET if policy is None else msgspec.convert(policy, Policy),
        reused=msgspec.convert(reused, Reused), notes=[*(msgspec.convert(n, Note) for n in notes), *kept])


def load_comparison(path: str | Path) -> dict:
    """Read a comparison@1 file; anything else is a UsageError naming the file and the field."""
    return load_json(path, COMPARISON_SCHEMA)
