"""What a step hands back to GitHub Actions besides the PR comment: the job summary, step outputs and
annotations. Plain files and stdout lines; no network.

In: a report's Markdown and its comparison@1 (or None). Out: text appended to $GITHUB_STEP_SUMMARY
(shrunk to its size limit), `name=value` lines in $GITHUB_OUTPUT, `::warning`/`::error` lines.
"""
from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SUMMARY_LIMIT_BYTES = 1024 * 1024  # GitHub refuses a step summary over 1 MiB
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
COUNT_KEYS = ("benchmarks", "improved", "regressed", "constraint_failures", "failed", "inconclusive")


def truncate_markdown(md: str, limit: int, *, full_report_url: str | None = None) -> str:
    """Cut `md` at a line boundary to at most `limit` characters and say so, closing an open code
    fence so the rest of the page still renders."""
    if len(md) <= limit:
        return md
    where = f"[this workflow run]({full_report_url})" if full_report_url else "this workflow run"
    note = (f"\n\n> [!NOTE]\n> Report truncated to fit ({len(md):,} characters in full). "
            f"The full report is in the job summary and artifacts of {where}.\n")
    room = limit - len(note) - len("\n```")
    if room <= 0:
        return note.strip()[:limit]
    cut = md.rfind("\n", 0, room + 1)
    head = md[:cut] if cut > 0 else md[:room]
    fences = sum(1 for line in head.splitlines() if line.lstrip().startswith("```"))
    if fences % 2:
        head += "\n```"
    return head + note


def append_summary(report_md: str, summary_path: str | Path, *,
                   shrink: Callable[[str, int], str] | None = None,
                   limit_bytes: int = SUMMARY_LIMIT_BYTES) -> int:
    """Append the report to $GITHUB_STEP_SUMMARY within the 1 MiB a step may write, counting what
    the step wrote there before. Returns the bytes written (0 when there was no room)."""
    path = Path(summary_path)
    existing = path.stat().st_size if path.exists() else 0
    text = ("\n" if existing else "") + report_md + ("" if report_md.endswith("\n") else "\n")
    room = limit_bytes - existing
    if room < 512:
        return 0
    shrink = shrink or truncate_markdown
    full, chars = text, room
    while len(text.encode("utf-8")) > room:
        # Characters and bytes differ for non-ASCII text: shrink by characters until the bytes fit.
        text = shrink(full, chars) if chars > 1024 else truncate_markdown(full, chars // 4)
        chars = int(chars * 0.9)
    data = text.encode("utf-8")
    with path.open("ab") as fh:
        fh.write(data)
    return len(data)


def write_output_values(output_path: str | Path, values: Mapping[str, Any]) -> None:
    """Append step outputs to $GITHUB_OUTPUT, each as `name<<DELIM` with a random delimiter, the
    form that is safe for any value, multi-line or not (as actions/toolkit writes them)."""
    chunks = []
    for name, value in values.items():
        if not _NAME_RE.fullmatch(name):
            raise ValueError(f"bad output name {name!r}")
        text = value if isinstance(value, str) else json.dumps(value)
        delim = f"ghadelimiter_{uuid.uuid4()}"
        while delim in text:  # practically never; kept so a crafted value cannot end the block
            delim = f"ghadelimiter_{uuid.uuid4()}"
        chunks.append(f"{name}<<{delim}\n{text}\n{delim}\n")
    with Path(output_path).open("a", encoding="utf-8") as fh:
        fh.write("".join(chunks))


def comparison_outputs(comparison: Mapping[str, Any] | None, report_path: str | None) -> dict[str, str]:
    values: dict[str, str] = {}
    if comparison is not None:
        counts = comparison.get("counts") or {}
        values["decision"] = str(comparison.get("decision") or "")
        values["summary"] = str(comparison.get("summary") or "")
        for key in COUNT_KEYS:
            values[key] = str(int(counts.get(key) or 0))
        values["counts"] = json.dumps(counts, sort_keys=True)
    if report_path:
        values["report_path"] = str(report_path)
    return values


def write_outputs(comparison: Mapping[str, Any] | None, report_path: str | None,
                  output_path: str | Path) -> dict[str, str]:
    """Step outputs: decision, summary, one per count (benchmarks, improved, regressed,
    constraint_failures, failed, inconclusive), counts (JSON) and report_path."""
    values = comparison_outputs(comparison, report_path)
    write_output_values(output_path, values)
    return values


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, title: str, message: str) -> str:
    return f"::{kind} title={_escape_prop(title)}::{_escape_data(message)}"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def annotations(comparison: Mapping[str, Any]) -> list[str]:
    """Workflow commands: ::warning for each regressed metric, ::error for each broken constraint
    and each failed benchmark. Text is escaped so no value can start a command of its own."""
    lines: list[str] = []
    for bench in comparison.get("benchmarks") or []:
        name = str(bench.get("name") or "?")
        for metric, m in (bench.get("metrics") or {}).items():
            if isinstance(m, Mapping) and m.get("verdict") == "regressed":  # a dict, or a read Metric
                delta = m.get("delta_pct")
                change = f" {delta:+.1f}%" if isinstance(delta, (int, float)) else ""
                lines.append(_command("warning", f"profopt: {name} regressed",
                                      f"{name}: {metric} regressed{change} "
                                      f"(base {_fmt(m.get('base'))}, head {_fmt(m.get('head'))})"))
        for c in bench.get("constraints") or []:
            if isinstance(c, dict) and c.get("ok") is False:
                detail = f": {c['detail']}" if c.get("detail") else ""
                lines.append(_command("error", f"profopt: {name} constraint broken",
                                      f"{name}: constraint {c.get('metric')} ({c.get('rule')} "
                                      f"{_fmt(c.get('limit'))}) broken{detail}"))
        if bench.get("decision") == "failed":
            err = bench.get("error") or {}
            msg = str(err.get("message") or "").strip().splitlines()
            side = f" on {err['side']}" if err.get("side") else ""
            lines.append(_command("error", f"profopt: {name} failed",
                                  f"{name} failed{side}" + (f": {msg[-1][:300]}" if msg else "")))
    return lines
