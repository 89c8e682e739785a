"""Find and kill every process a child started, including those that left its process group.

In: an environment dict. Out: the same with a unique `PROFOPT_PROC_TAG`, and `kill_tagged(tags, roots)`,
which SIGKILLs every process of this user whose environment carries one of those tags.

Why a tag: killing the child's process group misses a grandchild that called `setsid` (or
double-forked into a new session), and without cgroups there is no kernel list of "everything this
child started". An environment variable is inherited through fork and exec, so a scan of
/proc/*/environ finds those descendants wherever they were reparented. A process that scrubs its
environment and re-execs escapes the tag; it is still found while it remains a descendant by
parent pid, which `kill_tagged` also walks. Linux only; elsewhere both are no-ops.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

TAG_VAR = "PROFOPT_PROC_TAG"
_PROC = Path("/proc")


def tag_env(env: dict[str, str]) -> tuple[dict[str, str], str]:
    """A copy of `env` with a fresh tag, and the tag."""
    tag = secrets.token_hex(8)
    return {**env, TAG_VAR: tag}, tag


def _read(path: str) -> bytes:
    """A /proc file's bytes (b"" when it is gone): plain os calls, as a round's kill reads ~100 of them."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _environ_has_any(pid: int, needles: list[bytes]) -> bool:
    environ = _read(f"{_PROC}/{pid}/environ")
    return any(needle in environ for needle in needles)


def _parents() -> dict[int, int]:
    out = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        stat = _read(f"{_PROC}/{name}/stat")
        # the command name may contain spaces and parentheses: fields start after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out[int(name)] = int(fields[1])
    return out


def tagged(tags: list[str], roots: list[int]) -> set[int]:
    """Pids that carry one of the tags, plus the descendants (by parent pid) of them and of the
    `roots`: one pass over /proc however many (a round's two workers)."""
    me = os.getpid()
    needles = [f"{TAG_VAR}={tag}\0".encode() for tag in tags]
    parents = _parents()
    found = {pid for pid in parents if pid != me and _environ_has_any(pid, needles)}
    found |= {root for root in roots if root in parents}
    grew = True
    while grew:  # descendants of what we found: a child that cleared its environment
        more = {pid for pid, ppid in parents.items() if ppid in found and pid not in found and pid != me}
        found |= more
        grew = bool(more)
    return found


def kill_tagged(tags: list[str], roots: list[int], rounds: int = 3) -> int:
    """SIGKILL every process `tagged` finds (a few passes: one may fork while we kill). Returns how
    many. The `roots` are killed already (their groups, by the caller): a pass that finds nothing
    else found nothing that could still fork, and needs no next pass."""
    killed: set[int] = set()
    for _ in range(rounds):
        pids = tagged(tags, roots) - killed
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed |= pids
        if not pids - set(roots):
            break
    return len(killed)


@contextlib.contextmanager
def interrupt_safe() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
