"""What measuring came to, and why it failed: the types the action's jobs hand each other.

In: a phase's exit status and flags (`PhaseResult`), or a failure's message key and fields
(`Cause`). Out: an `Outcome` (the CLI's exit code, or 3 and its cause) and the failure note put on
top of the report, in the report's language through `words/i18n.py` (keys `action.*`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from profopt_ci.errors import InfraError
from profopt_ci.words import i18n


def say(line: str) -> None:
    """The action's log: one line to stdout, flushed (the job log keeps its order with the engine's)."""
    print(line, flush=True)


@dataclass(frozen=True)
class Cause:
    """Why the infrastructure failed: an i18n key (`action.cause.*`) and its fields (data, untranslated)."""

    key: str
    fields: dict[str, Any] = field(default_factory=dict)

    def text(self, lang: str = "en") -> str:
        return i18n.say(lang, self.key, **self.fields)


class CauseError(InfraError):
    """An InfraError (exit 3) whose message is a `Cause`, so the report can say it in zh too."""

    def __init__(self, key: str, **fields: Any) -> None:
        self.cause = Cause(key, fields)
        super().__init__(self.cause.text())


def cause_of(exc: InfraError) -> Cause | str:
    """The exception's `Cause`, or its plain English message (an InfraError from elsewhere)."""
    return exc.cause if isinstance(exc, CauseError) else str(exc)


@dataclass
class PhaseResult:
    """One container's run: its exit status, whether it ran out of memory or time, its last lines."""

    phase: str
    exit_code: int
    oom: bool = False
    timed_out: bool = False
    container_id: str | None = None
    log_tail: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What measuring came to: the CLI's exit code, or 3 and the infrastructure's cause."""

    exit_code: int
    cause: Cause | str | None = None  # set when the infrastructure failed (not when compare said 1, 2 or 3)
    image_id: str | None = None
    image_built: bool = False
    phases: list[PhaseResult] = field(default_factory=list)

    def cause_text(self, lang: str = "en") -> str | None:
        if self.cause is None:
            return None
        return self.cause.text(lang) if isinstance(self.cause, Cause) else self.cause


def failure_note(cause: Cause | str, lang: str, *, partial: bool) -> str:
    """The Markdown put on top of the report: a title, the cause, and whether partial results follow."""
    text = cause.text(lang) if isinstance(cause, Cause) else cause
    lines = [i18n.say(lang, "action.failed.title"), "", f"{i18n.say(lang, 'action.failed.cause')} {text}", ""]
    if partial:
        lines += [i18n.say(lang, "action.failed.partial"), "", "---", ""]
    return "\n".join(lines)
