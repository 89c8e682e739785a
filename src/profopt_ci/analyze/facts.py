"""What the bottleneck rules read: one side's profile summary, the comparison's metrics and the base's
profile, with the figures the rules share derived once (shares, rates against the measured machine,
op density).

In: plain dicts (docs/data-model.md's profile summary and metric entries). Out: `Facts`, read by
analyze/rules.py; `Evidence`, a rule's messages.
"""
from __future__ import annotations

from dataclasses import dataclass, field

_NOT_NATIVE = ("python", "data", "builtin")  # category shares that are not time in native ops

Evidence = list[dict]


@dataclass
class Facts:
    """What the rules read, with the derived figures they share."""

    profile: dict
    metrics: dict = field(default_factory=dict)
    base_profile: dict | None = None

    @property
    def kind(self) -> str:
        return self.profile.get("kind") or "none"

    @property
    def step_ms(self) -> float:
        return float(self.profile.get("step_time_ms") or 0.0)

    @property
    def counters(self) -> dict:
        return self.profile.get("counters") or {}

    @property
    def gpu(self) -> dict | None:
        return self.profile.get("gpu")

    @property
    def memory(self) -> dict:
        return self.profile.get("memory") or {}

    @property
    def machine(self) -> dict:
        return self.profile.get("machine") or {}

    @property
    def platform(self) -> str:
        """What the step ran on, for the next action: "cuda" (torch on a GPU), "torch" (torch on the
        CPU), "python" (cProfile: no torch loaded, or none profiled), "unknown" (no profile). Read from
        the step's own profile and metrics, not the machine's balance, which one benchmark's pass
        measures for every other on CPUs like its own."""
        cuda_metrics = any(self.metric(k) for k in ("cuda_max_allocated_mb", "cuda_max_reserved_mb"))
        if self.gpu or self.profile.get("cuda") or cuda_metrics:
            return "cuda"
        return {"torch": "torch", "cprofile": "python"}.get(self.kind, "unknown")

    @property
    def memory_limit_mb(self) -> float | None:
        """What the host lets the step hold: the RAM, or the cgroup's limit where that is lower."""
        limits = [v for v in (self.machine.get("ram_mb"), self.machine.get("mem_limit_mb")) if v]
        return min(limits) if limits else None

    def hot_function(self) -> str | None:
        """The Python function with the most self time (cProfile's `file.py(func)`), or None."""
        hot = self.ops_in("python", top=1)
        return hot[0]["name"] if hot else None

    def share(self, phase: str) -> float:
        return float((self.profile.get("phase_shares") or {}).get(phase) or 0.0)

    def native_shares(self) -> dict[str, float]:
        """Category shares of time spent in native ops (labels' Python self time left out)."""
        cats = {k: v for k, v in (self.profile.get("category_shares") or {}).items() if k not in _NOT_NATIVE}
        whole = sum(cats.values())
        return {k: v / whole for k, v in cats.items()} if whole > 0 else {}

    def intensity(self) -> float | None:
        flops, nbytes = self.counters.get("flops_per_step"), self.counters.get("bytes_per_step")
        return flops / nbytes if flops is not None and nbytes else None

    def ridge(self) -> float | None:
        balance = self.machine.get("device") if self.gpu else self.machine
        return (balance or {}).get("ridge_flops_per_byte")

    def metric(self, name: str) -> dict:
        return (self.metrics or {}).get(name) or {}

    def ops_in(self, category: str, top: int = 3) -> list[dict]:
        return [o for o in self.profile.get("ops") or [] if o.get("category") == category][:top]

    @property
    def balance(self) -> dict:
        """The measured rates the step is weighed against: the device's on a GPU profile."""
        return (self.machine.get("device") if self.gpu else self.machine) or {}

    def ops_per_ms(self) -> float | None:
        ops = self.counters.get("ops_per_step")
        return ops / self.step_ms if ops is not None and self.step_ms > 0 else None

    def flop_rate(self) -> tuple[float, float] | None:
        """(GFLOP/s the step reaches, its share of the measured matmul rate), or None."""
        flops, peak = self.counters.get("flops_per_step"), self.balance.get("matmul_gflops")
        if not flops or not peak or self.step_ms <= 0:
            return None
        gflops = flops / (self.step_ms / 1000) / 1e9
        return gflops, gflops / peak

    def byte_rate(self) -> tuple[float, float] | None:
        """(GB/s the step moves, its share of the measured copy bandwidth), or None."""
        nbytes, peak = self.counters.get("bytes_per_step"), self.balance.get("copy_gbps")
        if not nbytes or not peak or self.step_ms <= 0:
            return None
        gbps = nbytes / (self.step_ms / 1000) / 1e9
        return gbps, gbps / peak


def op_pairs(ops: list[dict], key: str = "self_ms") -> list[list]:
    """`[name, figure]` pairs, what the catalogs' `ops_*` specs print."""
    return [[o["name"], o[key]] for o in ops]
