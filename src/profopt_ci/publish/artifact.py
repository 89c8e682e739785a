"""The fork-PR hand-off: a directory a read-only run leaves for an artifact, and its reader.

The reader treats the directory as hostile: a fork's workflow wrote it. Every field must match a
strict pattern, files are read with a size cap through O_NOFOLLOW (a symlink to a runner secret is
refused, not read), only regular files count, and nothing in it is ever executed or interpolated
into a command.

In (write): the report, the PR number, the trusted head commit, the label, the comparison. Out: the
directory. In (read): that directory. Out: a `CommentArtifact`, or a `UsageError` naming the field.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profopt_ci.documents.types import json_default
from profopt_ci.errors import UsageError

ARTIFACT_REPORT_CAP = 1024 * 1024
ARTIFACT_COMPARISON_CAP = 64 * 1024 * 1024
_LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PR_RE = re.compile(r"[1-9][0-9]{0,9}")
SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def parse_pr_number(value: object) -> int:
    text = str(value).strip() if value is not None else ""
    if isinstance(value, bool) or not _PR_RE.fullmatch(text):
        raise UsageError(f"PR number must be a positive integer, got {text[:40]!r}")
    return int(text)


def check_label(label: str) -> str:
    if not _LABEL_RE.fullmatch(label):
        raise UsageError(f"comment label must be 1-64 of A-Z a-z 0-9 . _ -, got {label[:80]!r}")
    return label


# ---- fork fallback: an artifact directory, posted later by a workflow_run job -------------------
def write_comment_artifact(directory: Path, report_md: str, pr_number: int, *,
                           head_sha: str | None = None, label: str | None = None,
                           comparison: Mapping[str, Any] | None = None) -> Path:
    """comparison.json, pr_number and head_sha: what `--from-artifact` reads back and re-renders.
    report.md and label are kept for people reading the artifact; the posting job trusts neither."""
    directory.mkdir(parents=True, exist_ok=True)
    if comparison is not None:
        (directory / "comparison.json").write_text(json.dumps(comparison, default=json_default), encoding="utf-8")
    (directory / "report.md").write_text(report_md, encoding="utf-8")
    (directory / "pr_number").write_text(f"{int(pr_number)}\n", encoding="utf-8")
    if head_sha:
        (directory / "head_sha").write_text(head_sha + "\n", encoding="utf-8")
    if label:
        (directory / "label").write_text(check_label(label) + "\n", encoding="utf-8")
    return directory.resolve()


def _read_untrusted(directory: Path, name: str, cap: int) -> tuple[bytes, bool] | None:
    """At most `cap` bytes of a regular file, never through a symlink; None when absent."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(directory / name, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"artifact file {name} is a symbolic link; not following it") from None
        raise UsageError(f"cannot read artifact file {name}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        # a hard link could point at a runner secret; a directory or FIFO is not a file we wrote
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else "a hard link (link count > 1)"
        raise UsageError(f"artifact file {name} is {what}; not reading it")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(cap + 1)
    return data[:cap], len(data) > cap


@dataclass
class CommentArtifact:
    pr_number: int
    report_md: str
    head_sha: str | None
    label: str | None
    report_capped: bool
    comparison: dict[str, Any] | None = None  # validated against comparison@1; what gets posted


def read_comment_artifact(directory: Path, *, report_cap: int = ARTIFACT_REPORT_CAP) -> CommentArtifact:
    """Read and validate an artifact directory written by a fork PR's run. Untrusted: every field
    is checked against a strict pattern, sizes are capped, symlinks refused, nothing executed."""
    try:
        st = os.lstat(directory)
    except OSError:
        raise UsageError(f"artifact directory {directory} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"artifact path {directory} is not a directory (symlinks are not followed)")

    def small(name: str) -> str | None:
        got = _read_untrusted(directory, name, 128)
        return got[0].decode("ascii", "replace").strip() if got else None

    pr_text = small("pr_number")
    if pr_text is None:
        raise UsageError("artifact has no pr_number file")
    pr = parse_pr_number(pr_text)
    sha = small("head_sha")
    if sha is not None and not SHA_RE.fullmatch(sha):
        raise UsageError(f"artifact head_sha is not a commit id: {sha[:40]!r}")
    label = small("label") or None
    if label is not None:
        check_label(label)
    comparison = _read_comparison(directory)
    got = _read_untrusted(directory, "report.md", report_cap)
    if got is None:
        if comparison is None:
            raise UsageError("artifact has no comparison.json")
        got = (b"", False)
    data, capped = got
    text = data.decode("utf-8", "replace").replace("\x00", "")
    if capped:
        cut = text.rfind("\n")
        text = (text[: cut + 1] if cut > len(text) // 2 else text + "\n") + "\n> [!NOTE]\n> The report was cut at the artifact size cap.\n"
    return CommentArtifact(pr, text, sha, label, capped, comparison)


def _read_comparison(directory: Path) -> dict[str, Any] | None:
    """The fork's comparison.json, capped, parsed strictly and validated against its schema."""
    from profopt_ci.documents.names import COMPARISON_SCHEMA
    from profopt_ci.documents.read import parse_document

    got = _read_untrusted(directory, "comparison.json", ARTIFACT_COMPARISON_CAP)
    if got is None:
        return None
    data, capped = got
    if capped:
        raise UsageError(f"artifact comparison.json is larger than {ARTIFACT_COMPARISON_CAP // 2**20} MiB")
    return parse_document(data, "artifact comparison.json", (COMPARISON_SCHEMA,))
