"""Ctrl-C and SIGTERM as one KeyboardInterrupt that reaches the verb, whatever the signal interrupted.

In: `install()` at the start of `main`, `acknowledge()` where the interrupt is caught. Out: the first
SIGINT or SIGTERM raises KeyboardInterrupt in the main thread, so worktrees are removed and partial
results written by the verbs' own finally blocks; later ones are ignored while that interrupt
unwinds (a double Ctrl-C must not cut the cleanup short; kill -9 still works, and workers die with
us through PR_SET_PDEATHSIG) and once `main` has caught it.

Why more than a handler that raises: Python runs the handler in whatever bytecode the main thread
runs next, and some of that code loses what it raises: an at-fork hook (logging's own runs after
every fork of a Popen with a preexec_fn), a `__del__`, a weakref callback print "Exception ignored"
and go on. A first interrupt lost there used to leave compare measuring with every later signal
ignored (tests/test_hostile_compare.py's double Ctrl-C hung now and then). So until the interrupt is
caught, the signal is sent again every RESEND_S, and a repeat raises again unless the first one is
still unwinding (it is the exception being handled: a finally or except block is running).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

RESEND_S = 0.5
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state: dict[str, object] = {"signum": None, "caught": False}


def install() -> None:
    """SIGTERM always (a cancelled CI job); SIGINT unless the caller installed its own handler."""
    _state.update(signum=None, caught=False)
    signal.signal(signal.SIGTERM, _first)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _first)


def acknowledge() -> None:
    """The interrupt reached an `except KeyboardInterrupt` of ours: nothing more to raise or resend."""
    _state["caught"] = True


def _first(signum: int, _frame: object) -> None:
    _state["signum"] = signum
    for sig in _SIGNALS:
        if signal.getsignal(sig) is _first:
            signal.signal(sig, _again)
    threading.Thread(target=_resend, name="profopt-interrupt", daemon=True).start()
    raise KeyboardInterrupt(f"signal {signum}")


def _again(signum: int, _frame: object) -> None:
    if _state["caught"] or isinstance(sys.exc_info()[1], KeyboardInterrupt):
        return  # the first interrupt is being handled: let its cleanup run
    raise KeyboardInterrupt(f"signal {signum}")  # the first was lost where it was raised


def _resend() -> None:
    while True:
        time.sleep(RESEND_S)
        if _state["caught"]:
            return
        os.kill(os.getpid(), int(_state["signum"]))  # type: ignore[arg-type]
