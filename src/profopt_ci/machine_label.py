"""`hardware_label: auto`: a hardware label derived from the machine, so that the nightly history of
one label never mixes machine types.

In: the machine — the CPU model (/proc/cpuinfo; on macOS sysctl), the logical CPU count and the
NVIDIA GPUs (nvidia-smi, else the driver's /proc files). Out: a short slug of lowercase letters,
digits and dashes, `cpu-amd-epyc-7763-4c` or `cpu-intel-xeon-platinum-8480c-224c-gpu-8x-nvidia-h100-80gb-hbm3`;
`resolve` turns `auto` (the spec's key, PROFOPT_HARDWARE_LABEL, the action's `hardware-label`
input, a `--label` flag) into it and leaves any other label as it is.

The count is the machine's (os.cpu_count), not the process's affinity: a job pinned to two CPUs of
a 64-CPU machine still runs on a 64-CPU machine type, and a container's cpuset does not change it.
Standard library only: the fingerprint that runs in a side's own venv reads `cpu_model` too.
"""
from __future__ import annotations

import functools
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
from collections import Counter

AUTO = "auto"
MAX_LEN = 100  # a store's directory name and a comment's key: short enough for both
# words that name no machine type: trademarks, "CPU", the clock (a model runs at one), the core count
# (the count is said separately), integrated graphics
_NOISE = re.compile(r"\((?:r|tm|c)\)|@.*$|\b(?:cpu|processor|\d+-core)\b|\b(?:with|w/) [\w ]*graphics\b", re.I)


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo says it, else the platform's word (the fingerprint's
    `cpu_model`: stored results compare by it, so it stays as it was)."""
    text = _cpuinfo()
    for line in text.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def model_for_label() -> str:
    """The CPU model, told apart further where cpu_model names only the architecture: aarch64 Linux
    names no model (its implementer and part identify the core), macOS says it through sysctl."""
    model = cpu_model()
    if model and model not in (platform.machine(), platform.processor()):
        return model
    if sys.platform == "darwin":
        found = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if found and found.strip():
            return found.strip()
    fields = dict(re.findall(r"^(CPU implementer|CPU part)\s*:\s*(\S+)", _cpuinfo(), re.M))
    if "CPU implementer" in fields and "CPU part" in fields:
        return f"{model or 'arm'} {fields['CPU implementer']} {fields['CPU part']}"
    return model or "unknown"


def gpu_names() -> list[str]:
    """The NVIDIA GPUs' names, one per device; empty without one (or without a driver)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        out = _run([smi, "--query-gpu=name", "--format=csv,noheader"])
        if out is not None:
            return [line.strip() for line in out.splitlines() if line.strip()]
    names = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info, encoding="utf-8") as fh:
                found = re.search(r"^Model:\s*(.+)$", fh.read(), re.M)
        except OSError:
            continue
        if found:
            names.append(found.group(1).strip())
    return names


def _run(argv: list[str]) -> str | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None


def slug(text: str) -> str:
    """Lowercase letters, digits and single dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def label_of(model: str, cpus: int, gpus: list[str]) -> str:
    """The label of a machine with this CPU model, logical CPU count and GPUs."""
    cpu = slug(_NOISE.sub(" ", model)) or "unknown"
    parts = [f"cpu-{cpu}-{cpus}c"]
    for name, n in sorted(Counter(slug(_NOISE.sub(" ", g)) or "unknown" for g in gpus).items()):
        parts.append(f"gpu-{n}x-{name}" if n > 1 else f"gpu-{name}")
    return "-".join(parts)[:MAX_LEN].rstrip("-")


@functools.cache
def machine_label() -> str:
    """This machine's label (asked once a process: nvidia-smi takes a while)."""
    return label_of(model_for_label(), os.cpu_count() or 1, gpu_names())


def resolve(label: str | None) -> str | None:
    """`auto` as this machine's label; any other label (or None) as it is."""
    return machine_label() if label is not None and label.strip().lower() == AUTO else label
