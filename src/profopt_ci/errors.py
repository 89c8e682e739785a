"""Errors that reach the user. One boundary (cli.command_line.main) turns them into a message and an exit code.

Exit codes (docs/cli.md): 0 ok · 1 the policy failed · 2 usage or spec error · 3 a benchmark or the
infrastructure failed.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_POLICY = 1
EXIT_USAGE = 2
EXIT_INFRA = 3


class ProfoptError(Exception):
    """An error with a message meant for the user and the exit code it maps to."""

    exit_code = EXIT_INFRA

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ProfoptError):
    """Bad flags, a bad ref, a file that cannot be read: exit 2."""

    exit_code = EXIT_USAGE


class SpecError(UsageError):
    """A spec that does not validate. `problems` holds one formatted line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class InfraError(ProfoptError):
    """Setup, a crash, a timeout, Docker, the network: exit 3."""

    exit_code = EXIT_INFRA


def cause_lines(message: object, n: int) -> list[str]:
    """The last `n` non-blank lines of an error message: where a traceback or a stderr tail puts its cause."""
    return [ln for ln in str(message or "").rstrip().splitlines() if ln.strip()][-n:]
