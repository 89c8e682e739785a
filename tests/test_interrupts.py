"""Ctrl-C and SIGTERM reach the verb once, also when the code they interrupt loses what they raise
(cli/interrupts.py). Each case runs in its own Python, with real signals sent to itself."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import cli_env

PRELUDE = """\
import os, signal, time
from profopt_ci.cli import interrupts
signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive shell starts it (not `cmd &`)
interrupts.install()
start = time.monotonic()

def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
"""


def run(body: str) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=60)


def test_an_interrupt_lost_in_a_del_is_raised_again_in_the_code_after_it():
    proc = run("""
        class Loses:  # what an at-fork hook, a __del__ or a weakref callback does to an exception
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                spin(0.05)  # the handler runs here, and its KeyboardInterrupt is printed and dropped
        try:
            Loses()
            spin(10)
            print("never raised")
        except KeyboardInterrupt:
            interrupts.acknowledge()
            print(f"raised after {time.monotonic() - start:.2f} s")
    """)
    assert "Exception ignored" in proc.stderr  # the first one was lost, as in logging's at-fork hook
    assert proc.stdout.startswith("raised after"), (proc.stdout, proc.stderr)
    assert float(proc.stdout.split()[2]) < 3 * 0.5 + 1


def test_a_second_signal_while_the_first_unwinds_leaves_the_cleanup_alone():
    proc = run("""
        try:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                spin(10)
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # a double Ctrl-C
                spin(1.5)  # also past a resend
                print("cleanup done")
        except KeyboardInterrupt:
            interrupts.acknowledge()
            print("interrupted once")
        spin(1.5)  # caught: neither the resender nor a late signal raises again
        os.kill(os.getpid(), signal.SIGTERM)
        spin(0.2)
        print("ended")
    """)
    assert proc.stdout.splitlines() == ["cleanup done", "interrupted once", "ended"], proc.stderr
    assert proc.returncode == 0


def test_sigterm_is_an_interrupt_too():
    proc = run("""
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            spin(10)
        except KeyboardInterrupt as exc:
            interrupts.acknowledge()
            print(exc)
    """)
    assert proc.stdout.strip() == f"signal {int(__import__('signal').SIGTERM)}"
