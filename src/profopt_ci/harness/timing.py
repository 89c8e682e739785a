"""In-process timing: what runs inside a worker process around the user's step function.

In: the user's step function and the value settings. Out: per-value step times (ms), the loop
count, phase means and the recorded quality values, as a dict the worker writes.

Imports only the standard library (torch only when the step already loaded it), so a worker starts
fast and the code under test sees no extra modules.

Contract: `measure(step, warmup, values, min_time_ms)` calibrates an inner loop so one value takes at
least `min_time_ms`, runs `warmup` untimed values, then returns `values` per-step times in ms, the
loop count, mean ms per step of each `phase()` and the last `record()`ed quality values.
"""
from __future__ import annotations

import contextlib
import math
import random
import resource
import sys
import time
from collections.abc import Callable, Iterator

from profopt_ci.harness.compiles import Compiles, lead_in, timed_clean
from profopt_ci.harness.cuda_device import CudaDevice

_MAX_LOOPS = 1 << 24


class _State:
    # plain classes, not dataclasses: `dataclasses` (with `inspect`) is a third of a worker's
    # imports, paid by every fresh worker, every zygote and, many times slower, every valgrind run
    __slots__ = ("phases_ns", "quality", "recording", "sync")

    def __init__(self) -> None:
        self.phases_ns: dict[str, int] = {}
        self.quality: dict[str, object] = {}
        self.recording = False
        self.sync: Callable[[], None] | None = None


_state = _State()


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time a block inside the step (`with phase("forward"): ...`); shows in profiles too."""
    marker = _profiler_label(name)
    # The syncs sit inside the profiler label, so on a GPU the label spans the phase's device work.
    with marker if marker is not None else contextlib.nullcontext():
        if _state.sync is not None:
            _state.sync()
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            if _state.sync is not None:
                _state.sync()
            if _state.recording:
                _state.phases_ns[name] = _state.phases_ns.get(name, 0) + time.perf_counter_ns() - start


def record(**values: object) -> None:
    """Record quality values of the step (loss=…, accuracy=…, output_digest=…); the last one wins."""
    for key, value in values.items():
        _state.quality[key] = _plain(value)


def _plain(value: object) -> object:
    # A tensor or numpy scalar must become a JSON number before it leaves the worker.
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)  # nan, inf: JSON has no such number
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return _plain(item())
        except (TypeError, ValueError, RuntimeError):
            pass
    return str(value)


def seed_all(seed: int = 0) -> None:
    """The same start for both sides of a quality pass: `random`, and numpy and torch when loaded."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.manual_seed(seed)  # CUDA's generators too


def trace(step: Callable[[], object], steps: int) -> dict:
    """The quality pass: `steps` calls of a fresh step, and what each call `record()`ed.

    Out: {"steps": n, "values": {name: [value at step 1, …, step n]}}, None where a step recorded
    nothing under that name. Both sides run it from the same seeds for the same count, so a value is
    only ever compared with the other side's value at the same step.
    """
    values: dict[str, list] = {}
    for i in range(steps):
        _state.quality = {}
        step()
        for name, value in _state.quality.items():
            values.setdefault(name, [None] * i).append(value)
        for column in values.values():
            if len(column) <= i:
                column.append(None)
    _state.quality = {}
    return {"steps": steps, "values": values}


def _profiler_label(name: str):
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return torch.profiler.record_function(f"profopt.phase.{name}")


class Measurement:
    __slots__ = ("values_ms", "loops", "phases_ms", "quality", "device_peaks", "page_faults", "compile")

    def __init__(self, values_ms: list[float], loops: int, phases_ms: dict[str, float], quality: dict[str, object],
                 device_peaks: dict[str, float], page_faults: int | None = None, compile: dict | None = None) -> None:
        self.values_ms, self.loops, self.phases_ms = values_ms, loops, phases_ms
        self.quality, self.device_peaks = quality, device_peaks
        self.page_faults = page_faults  # minor page faults of this process over the timed steps
        self.compile = compile  # a torch.compile step's compile counts (Compiles.counts)


def minor_faults() -> int:
    """This process's minor page faults so far: a page the kernel had to give it (and zero) again,
    read before and after the timed steps, never inside them."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _time_counted(step: Callable[[], object], loops: int, sync: Callable[[], None] | None) -> tuple[int, int]:
    """`_time_loops`, and the minor page faults those steps took (read outside the timed window)."""
    before = minor_faults()
    ns = _time_loops(step, loops, sync)
    return ns, minor_faults() - before


def _time_loops(step: Callable[[], object], loops: int, sync: Callable[[], None] | None) -> int:
    untimed = getattr(step, "profopt_untimed", None)
    if untimed is not None:
        return _time_prepared(untimed, loops, sync)
    if sync is not None:
        sync()
    start = time.perf_counter_ns()
    for _ in range(loops):
        step()
    if sync is not None:
        sync()
    return time.perf_counter_ns() - start


def _time_prepared(untimed: Callable[[], tuple], loops: int, sync: Callable[[], None] | None) -> int:
    """A step whose every call needs fresh untimed setup (a suite's pedantic `setup`): `untimed()`
    gives (the call, its teardown or None); only the calls are timed, one by one."""
    total = 0
    for _ in range(loops):
        call, after = untimed()
        if sync is not None:
            sync()
        start = time.perf_counter_ns()
        call()
        if sync is not None:
            sync()
        total += time.perf_counter_ns() - start
        if after is not None:
            after()
    return total


def _spent_ns(step: Callable[[], object], loops: int, sync: Callable[[], None] | None) -> int:
    """How long `loops` steps take: the timed value, or for a prepared step the wall time with its
    untimed setup, so a costly setup bounds the loop count instead of multiplying it."""
    if getattr(step, "profopt_untimed", None) is None:
        return _time_loops(step, loops, sync)
    start = time.perf_counter_ns()
    _time_loops(step, loops, sync)
    return time.perf_counter_ns() - start


def calibrate(step: Callable[[], object], min_time_ms: float, sync: Callable[[], None] | None = None) -> int:
    """The smallest power-of-two loop count whose value takes at least min_time_ms.

    One untimed call first: a fresh step's first call (lazy initialization, allocator growth) can
    take many steps' time, and timed alone it would make one loop look long enough."""
    min_ns = min_time_ms * 1e6
    _time_loops(step, 1, sync)
    loops = 1
    while loops < _MAX_LOOPS:
        elapsed = _spent_ns(step, loops, sync)
        if elapsed >= min_ns:
            return loops
        # Jump to the estimate, so a 1 µs step does not take twenty doublings to calibrate.
        estimate = loops * min_ns / max(elapsed, 1)
        loops = min(_MAX_LOOPS, max(loops * 2, 1 << (int(estimate) - 1).bit_length()))
    return _MAX_LOOPS


def measure(
    step: Callable[[], object],
    *,
    warmup: int = 3,
    values: int = 5,
    min_time_ms: float = 100.0,
    device: CudaDevice | None = None,
    loops: int | None = None,
) -> Measurement:
    """Calibrate, warm up, then take `values` per-step times in ms."""
    sync = device.synchronize if device is not None else None
    _state.sync = sync
    _state.phases_ns = {}
    _state.recording = False
    compiles = Compiles()
    try:
        compiles.settle(step, sync)  # a torch.compile step: its compiles before anything is timed
        n = loops if loops is not None else calibrate(step, min_time_ms, sync)
        for _ in range(warmup):
            _time_loops(step, n, sync)
        compiles.settle(step, sync)
        if device is not None:
            device.reset_peaks()
        _state.recording = True
        out, faults = [], 0
        for _ in range(values):
            ns, taken = timed_clean(lambda: _time_counted(step, n, sync), compiles)
            out.append(ns / n / 1e6)
            faults += taken
        _state.recording = False
        steps = n * values
        phases = {name: ns / steps / 1e6 for name, ns in _state.phases_ns.items()}
        peaks = device.peaks_mb() if device is not None else {}
        return Measurement(out, n, phases, dict(_state.quality), peaks, faults, compiles.counts())
    finally:
        _state.recording = False
        _state.sync = None


class Stepper:
    """One value at a time, for a worker the parent drives in lockstep (`profopt_ci.measure.worker --serve`).

    `calibrate()` finds the inner loop of about `value_ms` (one step when a step is longer), `warm(n)`
    warms up at the loop count the parent chose for both sides, for `warmup` values and at least
    `warmup_ms`; then each `value_ns()` is one timed value of `loops` steps, closed by the device
    sync on a GPU; `finish()` gives phases, quality and device peaks.
    """

    def __init__(self, step: Callable[[], object], *, value_ms: float, warmup: int, warmup_ms: float = 100.0,
                 device: CudaDevice | None = None, lead: int = 0, short: tuple[float, float] | None = None) -> None:
        """`lead`: untimed steps before each value, so it starts as a step of the user's loop does —
        its working set in the caches and its thread pool awake — not where the other side's value
        left them. `short` = (step ms, warm-up ms): a step shorter than that warms up for the shorter
        time (its round is shorter too: lockstep.round_length)."""
        self.step, self.device, self.lead = step, device, lead
        self.value_ms, self.warmup, self.warmup_ms = value_ms, warmup, warmup_ms
        self.short = short
        self.sync = device.synchronize if device is not None else None
        self.loops = 1
        self.values = 0
        self.faults = 0  # minor page faults over the timed steps (not the lead steps)
        self.compiles = Compiles()

    def calibrate(self) -> int:
        """The loop count of a ~value_ms value on this side (the parent picks one for both); a
        torch.compile step first compiles until its recompiles stop (`Compiles.settle`)."""
        _state.sync, _state.phases_ns, _state.recording = self.sync, {}, False
        self.compiles.settle(self.step, self.sync)
        self.loops = calibrate(self.step, self.value_ms, self.sync)
        return self.loops

    def warm(self, loops: int) -> int:
        """Warm up at `loops` per value; returns the median warm-up value of its second half in ns
        (the round's pacing: the shortest one made a noisy round twice as long as asked). Without a
        `calibrate` first (a later round takes the first round's loop count) its warm-up values also
        take the step's first, slow calls."""
        _state.sync, _state.phases_ns, _state.recording = self.sync, {}, False
        self.compiles.settle(self.step, self.sync)  # compile time is never a warm-up value either
        self.loops = max(1, int(loops))
        spent, taken = 0, []
        while len(taken) < self.warmup or spent < self._warm_ns(taken):
            start = time.perf_counter_ns()
            ns = _time_loops(self.step, self.loops, self.sync)
            spent += max(ns, time.perf_counter_ns() - start)  # a prepared step's setup takes time too
            taken.append(ns)
        self.compiles.settle(self.step, self.sync)  # a recompile the warm-up's calls caused
        if self.device is not None:
            self.device.reset_peaks()
        _state.recording = True
        late = sorted(taken[len(taken) // 2:])
        return late[len(late) // 2]

    def _warm_ns(self, taken: list[int]) -> float:
        if self.short is not None and taken and sorted(taken)[len(taken) // 2] < self.short[0] * 1e6 * self.loops:
            return self.short[1] * 1e6
        return self.warmup_ms * 1e6

    def value_ns(self) -> int:
        self.values += 1
        if self.lead:
            recording, _state.recording = _state.recording, False  # its phases are not the value's
            try:
                lead_in(self.step, self.lead, self.sync)
            finally:
                _state.recording = recording
        ns, taken = timed_clean(lambda: _time_counted(self.step, self.loops, self.sync), self.compiles)
        self.faults += taken
        return ns

    def finish(self) -> dict:
        _state.recording, _state.sync = False, None
        steps = max(self.loops * self.values, 1)
        compiled = self.compiles.counts()
        return {
            "loops": self.loops,
            "phases_ms": {name: ns / steps / 1e6 for name, ns in _state.phases_ns.items()},
            "quality": dict(_state.quality),
            "page_faults": self.faults,
            **(self.device.peaks_mb() if self.device is not None else {}),
            **({"compile": compiled} if compiled is not None else {}),
        }
