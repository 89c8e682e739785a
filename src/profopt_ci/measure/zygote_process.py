"""The zygote process (`python -m profopt_ci.measure.zygote_process JOB.json`): it imports the step's
heavy packages once, then forks each round's lockstep worker on request.

In: JOB.json with the socket's fd, the preload list and the CPUs to import on; then requests over
that SOCK_SEQPACKET socket (the protocol: measure/zygote.py, the parent's side). Out: `ready PID`
(or `error TRACEBACK`), a `pid N` per fork, a `status CODE` (or `running`) per wait/poll. A forked
child becomes the worker (worker.serve_job, or worker.run_job for the profiled run) in its side's
checkout and environment and never returns here.
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import sys
import traceback
from pathlib import Path

MAX_MSG = 1 << 20


def _child(sock: socket.socket, request: str, fds: list[int], zygote_pid: int) -> None:
    """In the forked worker: its own session, its pipes, its output files; then the serve loop."""
    from profopt_ci.measure import cpus, worker
    from profopt_ci.measure.proctree import TAG_VAR

    code = 1
    try:
        job = json.loads(request)
        sock.close()
        os.setsid()
        if job.get("cpus") and hasattr(os, "sched_setaffinity"):  # one thread now: what it starts inherits it
            os.sched_setaffinity(0, job["cpus"])  # before anything runs: a worker started ahead stays off the measured CPUs
        cpus.die_with_parent(zygote_pid)
        *pipes, out, err = fds
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        _become(job)
        worker.FORKED = True
        os.environ[TAG_VAR] = job["tag"]  # what the step starts carries the worker's own tag
        if job.get("out"):  # a JSON job (the profiled run): its answer goes to a file
            code = worker.run_job(job["job"], job["out"])
        else:
            code = worker.serve_job(job["job"], *pipes)
    except BaseException:  # noqa: B036 — whatever happened, say it on stderr and exit non-zero
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: S110 — nothing left to tell
                pass
        os._exit(code)


_KEEP: list = []


def _become(job: dict) -> None:
    """A zygote both sides share forks each side's worker into that side's checkout and environment.
    Every child takes the same steps whichever side it is, so neither side's heap starts differently
    (a head child that alone moved its sys.path ran an A/A 2.7% faster). `pad`: per-side zygotes
    give each child a heap layout of its own (the zygote's is the same for all its children)."""
    root = job.get("root") or os.getcwd()
    old = os.path.realpath(os.getcwd())
    os.chdir(root)
    sys.path[:] = [_moved(p, old, root) for p in sys.path]
    if job.get("env") is not None:
        os.environ.clear()
        os.environ.update(job["env"])
    if job.get("pad"):
        import mmap
        import random

        rng = random.Random()
        _KEEP.extend(bytearray(rng.randrange(1, 1 << 16)) for _ in range(rng.randrange(1, 64)))
        _KEEP.append(mmap.mmap(-1, rng.randrange(1, 256) * mmap.PAGESIZE))


def _moved(entry: str, old: str, root: str) -> str:
    """A sys.path entry in (or under) the zygote's checkout, moved into the child's own: a relative
    PYTHONPATH such as `src` was made absolute in the zygote's checkout, so without this the head's
    child of a shared zygote imported the base's `src/` package (an A/A where a real change ran)."""
    if not entry:
        return entry
    real = os.path.realpath(entry)
    if real == old:
        return root
    if real.startswith(old + os.sep):
        return os.path.join(root, os.path.relpath(real, old))
    return entry


def _place(pid: int, request: str) -> None:
    """A child asked for on `cpus` is there before its pid is answered (it pins itself too, but
    the parent may already be timing on the other CPUs)."""
    try:
        cpus = json.loads(request).get("cpus")
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(pid, cpus)
    except (ValueError, AttributeError, OSError):
        pass  # a malformed request fails in the child, where it is said


def serve(sock: socket.socket) -> int:
    """Answer fork / wait / poll until the parent closes the socket."""
    me = os.getpid()
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 8)
        except OSError:
            return 0
        if not msg:
            return 0
        op, _, arg = msg.decode("utf-8", "replace").partition(" ")
        if op == "fork" and len(fds) in (2, 4):
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            pid = os.fork()  # before anything of the request is parsed: every child starts from one state
            if pid == 0:
                _child(sock, arg, fds, me)
            for fd in fds:
                os.close(fd)
            _place(pid, arg)
            sock.send(f"pid {pid}".encode())
        elif op in ("wait", "poll") and arg.isdigit():
            for fd in fds:
                os.close(fd)
            try:
                done, status = os.waitpid(int(arg), 0 if op == "wait" else os.WNOHANG)
            except ChildProcessError:
                sock.send(b"status -9")
                continue
            sock.send(b"running" if done == 0 else f"status {os.waitstatus_to_exitcode(status)}".encode())
        else:
            for fd in fds:
                os.close(fd)
            sock.send(f"error unexpected request {msg[:80]!r}".encode())


def main(argv: list[str] | None = None) -> int:
    from profopt_ci.measure import cpus

    args = sys.argv[1:] if argv is None else argv
    job = json.loads(Path(args[0]).read_text())
    sock = socket.socket(fileno=int(job["sock"]))
    cpus.die_with_parent()
    sys.path.insert(0, os.getcwd())
    names = [str(n) for n in job.get("preload") or []]
    try:
        for name in [n for n in names if "." not in n]:
            importlib.import_module(name)
    except BaseException:  # noqa: B036 — an import that fails here is reported, never forked from
        sock.send(("error " + traceback.format_exc()[-3000:]).encode())
        return 1
    for name in [n for n in names if "." in n]:  # what the step imported lazily; one that needs its
        try:                                     # importer's context is left to the worker itself
            importlib.import_module(name)
        except Exception:  # noqa: S112
            continue
    if job.get("pool") and hasattr(os, "sched_setaffinity"):  # imported on the free CPUs; forks start unpinned
        os.sched_setaffinity(0, job["pool"])
    sock.send(f"ready {os.getpid()}".encode())
    return serve(sock)


if __name__ == "__main__":
    sys.exit(main())
