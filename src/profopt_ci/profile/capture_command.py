"""A command benchmark's profile: a Python process re-run once under `python -m cProfile -o …`, on
the benchmark's CPUs; any other process (a shell line, a binary) gets no profile, with the reason.
"""
from __future__ import annotations

import os
import pstats
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from profopt_ci.filenames import file_part
from profopt_ci.profile import machine as machine_mod
from profopt_ci.profile.capture import no_profile, summarize_pstats, trace_file

_PYTHON = re.compile(r"^python[0-9.]*$")

_ARG_FLAGS = {"-W", "-X", "-Q"}  # interpreter options that take a value


def _python_argv(argv: list[str]) -> tuple[list[str], list[str], list[str]] | None:
    """(interpreter + its options, target, rest) when argv starts a Python interpreter, else None."""
    if not argv or not (_PYTHON.match(Path(argv[0]).name) or argv[0] == sys.executable):
        return None
    i, head = 1, [argv[0]]
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
        head.append(argv[i])
        if argv[i] in _ARG_FLAGS and i + 1 < len(argv):
            head.append(argv[i + 1])
            i += 1
        i += 1
    if i >= len(argv) or argv[i] == "-":
        return None  # an interactive interpreter or a script on stdin: nothing to wrap
    if argv[i] in ("-m", "-c"):
        return head, argv[i:i + 2], argv[i + 2:]
    return head, argv[i:i + 1], argv[i + 1:]


_OPERATORS = set("();<>|&")


def _split(cmd: str | list[str]) -> list[str] | None:
    """argv for a simple command; None for a shell line (operators, expansions) we cannot wrap."""
    if isinstance(cmd, list):
        return list(cmd)
    if "$" in cmd or "`" in cmd:
        return None
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    if any(tok and set(tok) <= _OPERATORS for tok in tokens):
        return None
    return tokens


def capture_command(argv_or_cmd: str | list[str], *, cwd: Path | str | None = None,
                    env: dict[str, str] | None = None, trace_dir: Path | None = None, name: str,
                    timeout_s: float = 600.0, machine: dict | None = None, cpus: list[int] | None = None) -> dict:
    """Run a Python command once under cProfile (on `cpus` when given) and summarize it; other
    commands are not profiled."""
    argv = _split(argv_or_cmd)
    if argv is None:
        return no_profile("a shell command line (pipes, operators or expansions): no profile taken")
    assigned = {}
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):  # `VAR=1 python …`
        key, _, value = argv.pop(0).partition("=")
        assigned[key] = value
    parts = _python_argv(argv)
    if parts is None:
        return no_profile("not a Python process: no profile taken")
    head, target, rest = parts
    with trace_file(trace_dir, f"{file_part(name)}.pstats") as out, tempfile.TemporaryDirectory() as tmp:
        if target[0] == "-c":  # cProfile has no -c: run the code from a file instead
            script = Path(tmp) / "profopt_command.py"
            script.write_text(target[1] if len(target) > 1 else "", encoding="utf-8")
            target = [str(script)]
        full = [*head, "-m", "cProfile", "-o", str(out), *target, *rest]
        run_env = {**(os.environ if env is None else env), **assigned}  # the caller's env is an allowlist
        start = time.perf_counter()
        try:
            proc = subprocess.run(full, cwd=cwd, env=run_env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False,
                                  preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        except subprocess.TimeoutExpired:
            return no_profile(f"profiled run timed out after {timeout_s:g} s")
        except OSError as exc:  # a profile never fails a comparison: say why there is none
            return no_profile(f"cannot start the profiled command {full[0]!r}: {exc}")
        wall_ms = (time.perf_counter() - start) * 1000
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or "").strip().splitlines()[-3:]
            return no_profile(f"profiled run failed (exit {proc.returncode}): {' | '.join(tail)}")
        summary = {"kind": "cprofile", "reason": None,
                   "trace_path": str(out) if trace_dir is not None else None}
        summary.update(summarize_pstats(pstats.Stats(str(out)), steps=1, step_ms=wall_ms))
    summary["machine"] = machine if machine is not None else machine_mod.host_memory()
    return summary
