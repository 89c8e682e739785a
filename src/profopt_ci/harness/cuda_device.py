"""A step's CUDA device, seen from inside its worker: synchronization, peak memory, and which device
it is (for the parent's NVML handle, measure/gpu.py). Standard library only: torch is read from
`sys.modules`, never imported here."""
from __future__ import annotations

import sys


class CudaDevice:
    """Synchronization and peak-memory hooks for a step that runs on CUDA."""

    def __init__(self, torch_module) -> None:
        self._torch = torch_module

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def reset_peaks(self) -> None:
        self._torch.cuda.reset_peak_memory_stats()

    def peaks_mb(self) -> dict[str, float]:
        mib = 1024 * 1024
        return {
            "cuda_max_allocated_mb": self._torch.cuda.max_memory_allocated() / mib,
            "cuda_max_reserved_mb": self._torch.cuda.max_memory_reserved() / mib,
        }

    def identity(self) -> dict:
        """Which device the step uses, for the parent's NVML handle (measure/gpu.py): the index CUDA
        gives it (after CUDA_VISIBLE_DEVICES) and its UUID, which NVML finds whatever the numbering."""
        try:
            cuda = self._torch.cuda
            index = int(cuda.current_device())
            props = cuda.get_device_properties(index)
            uuid = str(getattr(props, "uuid", "") or "") or None
            return {"index": index, "uuid": uuid, "name": str(getattr(props, "name", "") or "") or None}
        except Exception:  # an identity is a help to the parent, never a failure of the step
            return {}


def detect_device() -> CudaDevice | None:
    """The CUDA device when the factory loaded torch and initialized CUDA; None for host-only steps."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return CudaDevice(torch)
    except RuntimeError:
        return None
    return None
