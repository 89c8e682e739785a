"""The machine's CPUs as cores, SMT siblings and NUMA nodes, and the set a step's threads get.

In: a sysfs root (the real one, or a fake tree in a test), the pool (the CPUs this process may use:
the cgroup's cpuset, taskset, a container's --cpuset-cpus), how many CPUs the step needs, the CPU
profopt's parent runs on, and whether the step uses a GPU. Out: `pick` → the CPUs, sorted, and
`why` — the figures the report words ("2 distinct cores, NUMA node 1 (the GPU's), away from CPU 0
where profopt runs, within 0-63").

Rules, in order: N threads get N distinct physical cores where the pool has them (two
hyperthreads of one core share its execution units, so a 2-thread step on siblings reads slower
than its users see on two cores); the cores come from one NUMA node when one node has enough (the
GPU's node first when the step uses one: its host-to-device copies cross no socket link); the core
of profopt's parent CPU is left out while other cores remain; the last cores of the pool go first
(CPU 0 serves more interrupts on most machines). SMT siblings are used only when the pool has
fewer free cores than threads, and `why` says so. Linux sysfs; where it says nothing every CPU is
its own core on node 0.
"""
from __future__ import annotations

from pathlib import Path

from profopt_ci.cpulists import parse_cpuset

SYSFS = Path("/sys")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpulist(text: str | None) -> list[int]:
    try:
        return parse_cpuset(text) if text else []
    except ValueError:
        return []


class Topology:
    """Each CPU's core (package, core id) and NUMA node."""

    def __init__(self, core: dict[int, tuple[int, int]], node: dict[int, int]) -> None:
        self.core, self.node = core, node

    @classmethod
    def read(cls, root: Path = SYSFS) -> Topology:
        base = root / "devices" / "system"
        core: dict[int, tuple[int, int]] = {}
        for d in (base / "cpu").glob("cpu[0-9]*"):
            cpu = int(d.name[3:])
            pkg, cid = _read(d / "topology" / "physical_package_id"), _read(d / "topology" / "core_id")
            core[cpu] = (int(pkg), int(cid)) if pkg and cid and pkg.lstrip("-").isdigit() and cid.isdigit() \
                else (-1, cpu)
        node: dict[int, int] = {}
        for d in (base / "node").glob("node[0-9]*"):
            for cpu in _cpulist(_read(d / "cpulist")):
                node[cpu] = int(d.name[4:])
        return cls(core, node)

    def core_of(self, cpu: int) -> tuple[int, int]:
        return self.core.get(cpu, (-1, cpu))

    def node_of(self, cpu: int) -> int:
        return self.node.get(cpu, 0)


def gpu_node(root: Path = SYSFS) -> int | None:
    """The NUMA node of the machine's first NVIDIA or AMD display/3D controller (PCI order), or None."""
    for dev in sorted((root / "bus" / "pci" / "devices").glob("*")):
        vendor, klass = _read(dev / "vendor"), _read(dev / "class") or ""
        if vendor in ("0x10de", "0x1002") and klass.startswith("0x03"):
            node = _read(dev / "numa_node")
            return int(node) if node and node.isdigit() else None
    return None


def pick(topo: Topology, pool: list[int], n: int, *, avoid: int | None = None,
         gpu: int | None = None) -> tuple[list[int], dict]:
    """`n` CPUs of `pool` for a step's threads, and why (module doc)."""
    n = max(1, min(n, len(pool)))
    cores: dict[tuple[int, int], list[int]] = {}
    for cpu in sorted(pool):
        cores.setdefault(topo.core_of(cpu), []).append(cpu)
    home = topo.core_of(avoid) if avoid is not None else None
    node, node_why = _node(topo, cores, n, home, gpu)
    here = [k for k in cores if node is None or topo.node_of(cores[k][0]) == node]
    # the last cores first; the parent's core only when no other is left
    order = sorted(here, key=lambda k: (k == home, -cores[k][0]))
    chosen = order[:n]
    cpus = [cores[k][0] if k != home else _away(cores[k], avoid) for k in chosen]
    shared = 0
    for k in chosen:  # fewer free cores than threads: the siblings of the chosen cores
        for cpu in cores[k]:
            if len(cpus) < n and cpu not in cpus and cpu != avoid:
                cpus.append(cpu)
                shared += 1
    for cpu in sorted(pool, reverse=True):  # still short: whatever the pool has left, the parent's CPU last
        if len(cpus) < n and cpu not in cpus and cpu != avoid:
            cpus.append(cpu)
    if len(cpus) < n and avoid is not None and avoid in pool and avoid not in cpus:
        cpus.append(avoid)
    cpus = sorted(cpus)
    why = {"cores": len({topo.core_of(c) for c in cpus}), "smt_shared": shared > 0, "node": node,
           "node_why": node_why, "parent_cpu": avoid, "with_parent": avoid in cpus,
           "pool": len(pool), "pool_cores": len(cores)}
    return cpus, why


def _away(siblings: list[int], avoid: int | None) -> int:
    """A CPU of the parent's core other than the parent's own, where it has one."""
    return next((c for c in siblings if c != avoid), siblings[0])


def _node(topo: Topology, cores: dict, n: int, home, gpu: int | None) -> tuple[int | None, str | None]:
    """The one NUMA node to take the cores from, and why: the GPU's when it has enough free cores,
    else the node with the most (the parent's core not counted); None when no node has enough
    or the machine has one node."""
    per: dict[int, int] = {}
    for k, cpus in cores.items():
        if k != home:
            per[topo.node_of(cpus[0])] = per.get(topo.node_of(cpus[0]), 0) + 1
    if len({topo.node_of(c[0]) for c in cores.values()}) < 2:
        return None, None
    if gpu is not None and per.get(gpu, 0) >= n:
        return gpu, "gpu"
    fits = [node for node, count in per.items() if count >= n]
    if not fits:
        return None, None
    return max(fits, key=lambda node: (per[node], node)), "fits"
