"""CPU lists as taskset, docker --cpuset-cpus and the spec's `cpuset` write them: `"0,2-3"` ⇄ [0, 2, 3];
and how busy such a list was, from the kernel's per-CPU counters.

Standard library only and nothing of profopt's: the spec's checks and every process that pins
(the parent, a worker, a zygote) read it.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # USER_HZ, the unit of the two below


def parse_cpuset(text: str) -> list[int]:
    """'0,2-3' → [0, 2, 3]; ValueError naming what was expected."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"expected CPU numbers and ranges like 2-3 or 0,2,4, got {text!r}")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise ValueError(f"range {part} runs backwards in {text!r}")
        out.update(range(a, b + 1))
    return sorted(out)


def format_cpuset(cpus: Iterable[int]) -> str:
    """[0, 2, 3] → '0,2-3' (the form taskset and docker --cpuset-cpus read)."""
    nums, parts = sorted(set(cpus)), []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)


def busy_ticks(cpus: Iterable[int], text: str | None = None) -> int | None:
    """Busy ticks (user, nice, system, irq, softirq, steal; USER_HZ) of `cpus` from /proc/stat, or None."""
    if text is None:
        try:
            with open("/proc/stat", encoding="ascii") as fh:
                text = fh.read()
        except OSError:
            return None
    want, total, seen = {f"cpu{c}" for c in cpus}, 0, 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name in want:
            f = [int(x) for x in rest.split()]
            # user nice system idle iowait irq softirq steal (guest is already inside user)
            total += f[0] + f[1] + f[2] + sum(f[5:8])
            seen += 1
    return total if seen == len(want) else None


def process_ticks(pid: int | str) -> int:
    """utime + stime of a whole process (every thread, ended ones too), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return 0
    fields = stat[stat.rfind(")") + 2:].split()  # the command name may hold spaces and ')'
    return int(fields[11]) + int(fields[12])
