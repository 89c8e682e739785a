"""GPU telemetry through NVML (nvidia-ml-py, NVIDIA's own binding), read by the parent.

In: the identity of the device a lockstep round's step uses (the worker's `built` answer:
harness.cuda_device.CudaDevice.identity) and the workers' environment. Out: a `Device` whose `read()`
gives clocks, power, temperature, the clocks event (throttle) reasons and the energy counter;
`SideReads`, one side's reads of one round made into the sample's `gpu` block; `environment()`,
the GPU settings the fingerprint lists.

Only the parent reads NVML, between values and never inside one (a worker's timed value is
closed by its device sync before it answers), so no read costs a timed step anything. The binding
is imported only where a step used CUDA; where it or the driver is missing, telemetry is absent
and said once (`unavailable`), never an error.
"""
from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Mapping

# NVML's clocks event reasons that hold the clocks down under load (nvmlClocksEventReason*): a round
# where one was active is throttled. Idle, the applications-clocks setting and display clocks are not.
THROTTLE_REASONS = {
    0x4: "power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "power_brake",
}
APP_CLOCKS_REASON = 0x2  # nvmlClocksEventReasonApplicationsClocksSetting: clocks held by a setting
CLOCKS_MOVED_MHZ = 15  # SM clock spread within a benchmark's rounds beyond which they were not locked

_lock = threading.Lock()
_binding = {"state": None, "error": None}  # None: not tried; "ok"; "absent" (the error says why)


def binding():
    """The initialized pynvml module, or None (and `unavailable()` says why): imported and
    initialized once per profopt process."""
    with _lock:
        if _binding["state"] == "ok":
            import pynvml

            return pynvml
        if _binding["state"] == "absent":
            return None
        try:
            import pynvml
        except ImportError:
            _binding.update(state="absent", error="nvidia-ml-py is not installed (pip install 'profopt[gpu]')")
            return None
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound / DriverNotLoaded / anything the driver says
            _binding.update(state="absent", error=f"NVML did not start: {_nvml_error(exc)}")
            return None
        _binding["state"] = "ok"
        return pynvml


def unavailable() -> str | None:
    """Why NVML cannot be read in this process (after `binding()` failed), else None."""
    return _binding["error"] if _binding["state"] == "absent" else None


def _nvml_error(exc: Exception) -> str:
    try:
        return str(exc)[:200] or type(exc).__name__
    except Exception:  # NVMLError.__str__ calls into the library, which may be what is missing
        return type(exc).__name__


class Device:
    """One device's handle; a query the device does not support is asked once, then left out."""

    def __init__(self, nvml, handle, uuid: str | None) -> None:
        self.nvml, self.handle, self.uuid = nvml, handle, uuid
        self._unsupported: set[str] = set()

    def _ask(self, name: str, call: Callable[[], object]):
        if name in self._unsupported:
            return None
        try:
            return call()
        except Exception:  # NotSupported, NoPermission, an older driver without the call
            self._unsupported.add(name)
            return None

    def energy_mj(self) -> int | None:
        """The energy counter (mJ since the driver loaded; Volta and later)."""
        got = self._ask("energy", lambda: self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        return int(got) if got is not None else None

    def reasons(self) -> int | None:
        nv = self.nvml
        got = self._ask("reasons", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(self.handle))
        if got is None:  # drivers before the rename
            got = self._ask("reasons_old", lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(self.handle))
        return int(got) if got is not None else None

    def read(self) -> dict:
        """One read: {t_ns, sm_mhz, mem_mhz, power_mw, temperature_c, reasons, energy_mj}, None where
        the device does not say."""
        nv, h = self.nvml, self.handle
        return {
            "t_ns": time.perf_counter_ns(),
            "sm_mhz": self._ask("sm", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "mem_mhz": self._ask("mem", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "power_mw": self._ask("power", lambda: nv.nvmlDeviceGetPowerUsage(h)),
            "temperature_c": self._ask("temp", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            "reasons": self.reasons(),
            "energy_mj": self.energy_mj(),
        }


def _visible(env: Mapping[str, str]) -> list[str]:
    return [p.strip() for p in (env.get("CUDA_VISIBLE_DEVICES") or "").split(",") if p.strip()]


def open_device(identity: Mapping | None, env: Mapping[str, str]) -> Device | None:
    """The NVML handle of the device a step used: by its UUID (NVML's numbering may differ from
    CUDA's), else by its CUDA index through CUDA_VISIBLE_DEVICES, else None."""
    nv = binding()
    if nv is None:
        return None
    identity = identity or {}
    uuid = identity.get("uuid")
    if uuid:
        want = uuid if str(uuid).startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        with contextlib.suppress(Exception):
            return Device(nv, nv.nvmlDeviceGetHandleByUUID(want), want)
    index = identity.get("index", 0)
    visible = _visible(env)
    try:
        if visible:
            named = visible[int(index)] if isinstance(index, int) and 0 <= index < len(visible) else visible[0]
            handle = (nv.nvmlDeviceGetHandleByUUID(named) if not named.isdigit()
                      else nv.nvmlDeviceGetHandleByIndex(int(named)))
        else:
            handle = nv.nvmlDeviceGetHandleByIndex(int(index) if isinstance(index, int) else 0)
    except Exception:
        return None
    return Device(nv, handle, None)


READ_EVERY_NS = 20_000_000  # between values, one read at most every 20 ms: NVML calls take round time


class RoundReads:
    """The reads of one lockstep round, each kept for the side whose value it followed."""

    def __init__(self, device: Device, sides: list[str]) -> None:
        self.device = device
        self.reads: dict[str, list[dict]] = {s: [] for s in sides}
        self.last_ns = 0

    def after_value(self, side: str) -> None:
        """Called between values (the one just taken was `side`'s): a read when one is due."""
        now = time.perf_counter_ns()
        if now - self.last_ns >= READ_EVERY_NS:
            self.reads[side].append(self.device.read())
            self.last_ns = time.perf_counter_ns()

    def take(self, side: str) -> None:
        """A read now, whatever the time since the last (the round's first and last values)."""
        self.reads[side].append(self.device.read())
        self.last_ns = time.perf_counter_ns()

    def throttled(self) -> bool:
        return any(throttle_names(r["reasons"]) for rs in self.reads.values() for r in rs)

    def block(self, side: str, energy: dict | None, throttled: bool) -> dict:
        """The sample's `gpu` block of `side` (docs/data-model.md)."""
        rs = self.reads[side]
        out: dict = {"reads": len(rs)}
        for key, field in (("sm_mhz", "sm_mhz"), ("mem_mhz", "mem_mhz")):
            vals = [r[field] for r in rs if r[field] is not None]
            out[f"{key}_min"] = min(vals) if vals else None
            out[f"{key}_max"] = max(vals) if vals else None
        power = [r["power_mw"] for r in rs if r["power_mw"] is not None]
        out["power_w"] = round(statistics.fmean(power) / 1000.0, 3) if power else None
        temps = [r["temperature_c"] for r in rs if r["temperature_c"] is not None]
        out["temperature_c"] = max(temps) if temps else None
        seen = 0
        for r in rs:
            seen |= r["reasons"] or 0
        out["throttle"] = throttle_names(seen)
        out["clocks_held"] = bool(seen & APP_CLOCKS_REASON)
        out["throttled"] = throttled
        if energy is not None:
            out.update(energy)
        return out


def throttle_names(mask: int | None) -> list[str]:
    """The throttling reasons in an NVML clocks-event mask, by name."""
    if not mask:
        return []
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


ENERGY_BLOCK_MS = (100.0, 500.0)  # an energy block's length: at least, at most (lockstep.energy_blocks)
ENERGY_PERIODS = 5  # the counter's own updates a block spans, once it is past the shortest length
ENERGY_READ_NS = 5_000_000  # within a block, the counter is read between values at most every 5 ms


def _enabled(value) -> str | None:
    if value is None:
        return None
    return "on" if int(value) else "off"


def environment(env: Mapping[str, str]) -> dict:
    """What the fingerprint lists of the GPU the workers see (their CUDA_VISIBLE_DEVICES, else
    device 0), read in profopt's own process: the model, the driver and its CUDA version,
    persistence mode, ECC, MIG and the applications clocks (whether a setting holds them). {} where
    NVML cannot be read (no GPU, no driver, no nvidia-ml-py)."""
    dev = open_device(None, env)
    if dev is None:
        return {}
    nv, h = dev.nvml, dev.handle

    def ask(name, call):
        return dev._ask(name, call)

    def text(value):
        return value.decode() if isinstance(value, bytes) else value

    cuda = ask("cuda_driver", nv.nvmlSystemGetCudaDriverVersion)
    ecc = ask("ecc", lambda: nv.nvmlDeviceGetEccMode(h))
    mig = ask("mig", lambda: nv.nvmlDeviceGetMigMode(h))
    target = ask("app_target", lambda: nv.nvmlDeviceGetClock(h, nv.NVML_CLOCK_SM, nv.NVML_CLOCK_ID_APP_CLOCK_TARGET))
    default = ask("app_default", lambda: nv.nvmlDeviceGetClock(h, nv.NVML_CLOCK_SM, nv.NVML_CLOCK_ID_APP_CLOCK_DEFAULT))
    reasons = dev.reasons()
    held = None
    if target is not None and default is not None:
        held = f"applications clocks SM {target} MHz" if target != default else "default"
    if reasons is not None and reasons & APP_CLOCKS_REASON and held in (None, "default"):
        held = "held by a clocks setting"
    return {
        "gpu_name": text(ask("name", lambda: nv.nvmlDeviceGetName(h))),
        "gpu_driver": text(ask("driver", nv.nvmlSystemGetDriverVersion)),
        "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) and cuda > 0 else None,
        "gpu_persistence": _enabled(ask("persistence", lambda: nv.nvmlDeviceGetPersistenceMode(h))),
        "gpu_ecc": _enabled(ecc[0]) if ecc else None,
        "gpu_mig": _enabled(mig[0]) if mig else None,
        "gpu_clocks": held,
    }
