"""CPU sets and child hygiene: which CPUs a measured process runs on, and that it dies with us.

In: a CPU-list text (`"2-3"`, `"0,2"`), a thread count, this process's own affinity. Out: a sorted
list of CPU numbers, and a `preexec_fn` for `subprocess.Popen` that pins the child to them and asks
the kernel to SIGKILL it when its parent dies (PR_SET_PDEATHSIG), so a worker never outlives a
killed `profopt`. Linux only for both; elsewhere they are no-ops, said once by `pinning_supported`.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable, Iterator
from functools import lru_cache

from profopt_ci.cpulists import format_cpuset, parse_cpuset

PR_SET_PDEATHSIG = 1
# Environment variables a step's thread count is read from, most specific first.
THREAD_VARS = ("PROFOPT_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


_HOME: dict[str, list[int]] = {}  # while profopt's parent keeps to one CPU: the pool it may use


def available() -> list[int]:
    """The CPUs this process may run on (a container's --cpuset-cpus, taskset, cgroups): while the
    parent keeps to its home CPU (`parent_home`), the pool it had before."""
    if "pool" in _HOME:
        return list(_HOME["pool"])
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def parent_cpu() -> int | None:
    """The CPU profopt's parent keeps to (`parent_home`), or None when it is not pinned."""
    return _HOME["cpu"][0] if "cpu" in _HOME else None


@contextlib.contextmanager
def parent_home(pool: list[int] | None = None) -> Iterator[int | None]:
    """Keep profopt's own thread on one CPU of the pool — its first: the measured sets are taken from
    the end (topology.pick) — so its work between values (the pipe, the log, the statistics) lands
    outside a set wherever the pool has room; the CPUs its children start on stay the whole pool
    (child_preexec). Restored on exit. Nothing changes with one CPU, or where affinity is unknown."""
    pool = sorted(pool if pool is not None else available())
    if len(pool) < 2 or not hasattr(os, "sched_setaffinity") or "pool" in _HOME:
        yield None
        return
    before = os.sched_getaffinity(0)
    _HOME.update(pool=pool, cpu=[pool[0]])
    try:
        os.sched_setaffinity(0, [pool[0]])
        yield pool[0]
    finally:
        _HOME.clear()
        os.sched_setaffinity(0, before)


def threads_of(env: dict[str, str]) -> int:
    """How many threads the step is told to use (1 when nothing says)."""
    for key in THREAD_VARS:
        value = str(env.get(key, "")).strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def choose(requested: str | None, threads: int, pool: list[int] | None = None) -> list[int]:
    """The CPU set both sides share: the requested one (within what we may use), else `threads` CPUs.

    Without a request the last CPUs of the pool are taken: CPU 0 serves more interrupts on most
    machines. A request outside the pool is a ValueError, not a silent change of CPUs.
    """
    pool = pool if pool is not None else available()
    if requested:
        want = parse_cpuset(requested)
        outside = [c for c in want if c not in pool]
        if outside:
            raise ValueError(f"CPUs {format_cpuset(outside)} are not available to this process "
                             f"(it may use {format_cpuset(pool)})")
        return want
    n = max(1, min(threads, len(pool)))
    return pool[-n:]


class Placement:
    """Where one benchmark's two lockstep workers run, settled once from the step's own parallelism.

    The first round's workers start unpinned on the pool (the CPUs profopt may use), each probes its
    step (harness/threads.py), and `settle` sizes the set: the most CPUs either side needs — its busy
    threads, or what torch or the thread variables declare — at least `floor`, at most the pool. A
    `requested` set (spec `cpuset`, `--cpuset`, the action's input) wins; both say in `warning` when
    the set is narrower than the step.

    A plain class, like everything a worker or a zygote imports: no `dataclasses` (with `inspect`)
    in their start-up."""

    def __init__(self, pool: list[int], floor: int = 1, requested: list[int] | None = None,
                 topology=None) -> None:
        """`topology`: the machine's (topology.Topology, read from sysfs when first needed)."""
        self.pool, self.floor, self.requested = pool, floor, requested
        self.topology = topology
        self.why: dict | None = None  # topology.pick's reasons for the set
        self.cpus: list[int] | None = None
        self.need: int | None = None
        self.probes: dict[str, dict] = {}
        self.warning: str | None = None
        self.load = None  # other_load.Load: other work on the set while values were timed

    def loaded(self, window) -> None:
        """Add one round's other_load.Window."""
        if self.load is None:
            from profopt_ci.measure.other_load import Load

            self.load = Load()
        self.load.add(window)

    def settle(self, probes: dict[str, dict], name: str = "") -> list[int]:
        self.probes = dict(probes)
        self.need = max([self.floor, *(int(p.get("need") or 1) for p in probes.values())])
        if self.requested:
            self.cpus = list(self.requested)
            where = "the cpuset asked for"
        else:
            gpu = any(p.get("cuda") for p in probes.values())
            self.cpus, self.why = self.choose(self.need, gpu=gpu)
            where = "profopt may use"
        if self.need > len(self.cpus):
            sides = "; ".join(f"{side}: {describe(p)}" for side, p in sorted(self.probes.items()))
            self.warning = (f"{name + ': ' if name else ''}the step uses {self.need} CPUs ({sides}) but "
                            f"{where} {len(self.cpus)} ({format_cpuset(self.cpus)}): pinned there, so its step "
                            "time is longer than with its own threads and the change can differ from what "
                            "its users see")
        return self.cpus

    def choose(self, n: int, pool: list[int] | None = None, *, gpu: bool = False) -> tuple[list[int], dict]:
        """`n` CPUs of `pool` (default: this placement's) by the machine's topology (topology.pick)."""
        from profopt_ci.measure import topology

        topo = self.topology or machine_topology()
        node = topology.gpu_node() if gpu and self.topology is None else None
        return topology.pick(topo, list(pool if pool is not None else self.pool), n, avoid=parent_cpu(), gpu=node)

    def beside(self, n: int) -> list[int] | None:
        """`n` CPUs on `n` cores that the settled set does not touch (a second side's pass runs there
        at once: a sibling hyperthread of the set would slow both), or None when the pool lacks them."""
        from profopt_ci.measure import topology

        topo = self.topology or machine_topology()
        used = {topo.core_of(c) for c in self.cpus or ()}
        free = [c for c in self.pool if topo.core_of(c) not in used]
        if len({topo.core_of(c) for c in free}) < n:
            return None
        cpus, why = topology.pick(topo, free, n, avoid=parent_cpu())
        return None if why["smt_shared"] else cpus

    def spare(self) -> list[int]:
        """The pool's CPUs the rounds leave free, where a zygote may import (none before it settles)."""
        return [c for c in self.pool if c not in (self.cpus or self.pool)]

    def record(self) -> dict:
        """The comparison entry's `threads`: the set, what each side needs and why."""
        return {"cpuset": format_cpuset(self.cpus) if self.cpus else None, "need": self.need, "why": self.why,
                "available": len(self.pool), "requested": format_cpuset(self.requested) if self.requested else None,
                "narrow": bool(self.warning), "sides": self.probes,
                "other_load": self.load.record() if self.load is not None else None}


@lru_cache(maxsize=1)
def machine_topology():
    """This machine's topology.Topology, read once (the parent only)."""
    from profopt_ci.measure import topology

    return topology.Topology.read()


def describe(probe: dict) -> str:
    """'2 busy threads, torch 2' from one side's probe."""
    said = ", ".join(f"{k} {v}" for k, v in sorted((probe.get("declared") or {}).items()))
    busy = probe.get("busy")
    parts = [f"{busy} busy thread{'s' if busy != 1 else ''}" if busy else "", said]
    return ", ".join(p for p in parts if p) or "no probe"


@lru_cache(maxsize=1)
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up once in the parent: a preexec_fn must not load libraries after fork."""
    try:
        # the process's own symbols, libc's among them: no ctypes.util (subprocess, ldconfig) at start-up
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(parent_pid: int | None = None) -> None:
    """Ask for SIGKILL when the parent dies; exit at once if it already has (the race before prctl)."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def child_preexec(cpus: list[int] | None) -> Callable[[], None]:
    """A Popen `preexec_fn`: die with this process (SIGKILL, even when it is kill -9'd), and run on
    `cpus` when given, else on the whole pool (not on the parent's home CPU). The parent pid is taken
    before the fork, so a parent that died between fork and prctl is noticed and the child exits at once."""
    parent = os.getpid()
    _prctl()  # resolved before the fork
    where = cpus or _HOME.get("pool")

    def preexec() -> None:
        die_with_parent(parent)
        if where and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, where)

    return preexec


def placement_for(spec, bench) -> Placement:
    """Where both sides of `bench` will run under lockstep: the CPUs profopt may use, the thread
    variables' floor and the requested set (the spec's `cpuset`, checked against the pool: a
    UsageError naming it otherwise); the benchmark's first round settles it."""
    from profopt_ci.errors import UsageError

    env = {**os.environ, **spec.env, **bench.env}
    pool = available()
    requested = None
    if spec.cpuset:
        try:
            requested = choose(spec.cpuset, 1, pool)
        except ValueError as exc:
            raise UsageError(f"cpuset {spec.cpuset}: {exc}") from None
    return Placement(pool=pool, floor=threads_of(env), requested=requested)
