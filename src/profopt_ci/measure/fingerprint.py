"""The environment a result was measured in: hardware, OS, interpreter, library versions.

In: nothing but the interpreter it runs under. Out: one JSON object on stdout (cpu, os, python,
library versions…); `MATERIAL` names the keys whose difference makes two results incomparable.

Run as `python -m profopt_ci.measure.fingerprint` under the interpreter that runs the benchmarks (a side's
own virtual environment in compare), so the versions are the ones the workers import.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from profopt_ci.machine_label import cpu_model

# Fields whose difference makes two results incomparable (store refuses, compare warns).
MATERIAL = ("cpu_model", "cpu_count", "gpu_name", "gpu_driver", "torch", "cuda")
# The GPU's settings and libraries (measure/gpu.environment, `cudnn` here): as material, but only
# where both results recorded them (a result from before they were read, or a CPU-only one, lacks
# them; its gpu_name already tells a GPU from none). Persistence mode is listed and compared, not
# material: it changes a process's start and the idle clocks, not a warmed step.
MATERIAL_IF_KNOWN = ("cudnn", "cuda_driver", "gpu_ecc", "gpu_mig", "gpu_clocks")


def material_keys(a: dict, b: dict) -> list[str]:
    """The keys whose difference between two fingerprints makes their results incomparable."""
    keys = [k for k in MATERIAL if a.get(k) != b.get(k)]
    return keys + [k for k in MATERIAL_IF_KNOWN
                   if a.get(k) is not None and b.get(k) is not None and a.get(k) != b.get(k)]


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cudnn() -> str | None:
    """cuDNN's version as the side's pip wheels have it (torch's CUDA builds depend on one), without
    importing torch; None where none is installed that way."""
    for dist in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11"):
        found = _version(dist)
        if found:
            return found
    return None


def _gpu() -> tuple[str | None, str | None]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().splitlines()
    except (subprocess.SubprocessError, OSError):
        return None, None
    if not out:
        return None, None
    name, _, driver = out[0].partition(",")
    return name.strip() or None, driver.strip() or None


def _cuda_version() -> str | None:
    """torch's CUDA version, read from torch/version.py without importing torch (seconds a side)."""
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return None
    # the file beside the metadata first: torch's RECORD lists every file of torch, slow to parse
    path: Path | None = Path(str(dist.locate_file("torch/version.py")))
    try:
        if not path.is_file():
            found = next((f for f in dist.files or [] if str(f).replace("\\", "/") == "torch/version.py"), None)
            path = Path(str(found.locate())) if found is not None else None
        text = path.read_text(encoding="utf-8") if path is not None else ""
    except (OSError, UnicodeDecodeError):
        text = ""
    return cuda_from_version_file(text)


def cuda_from_version_file(text: str) -> str | None:
    """`cuda: Optional[str] = '12.4'` (or `cuda = None`) in torch/version.py → '12.4' / None."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.split(":", 1)[0].strip() == "cuda":
            value = value.split("#", 1)[0].strip().strip("'\"")
            return None if value in ("", "None") else value
    return None


def collect() -> dict:
    gpu_name, gpu_driver = _gpu()
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": _memory_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "cuda": _cuda_version(),
        "cudnn": _cudnn(),
        "gpu_name": gpu_name,
        "gpu_driver": gpu_driver,
    }


if __name__ == "__main__":
    json.dump(collect(), sys.stdout)
