"""Every GPU check but the container's, in one run (bench/gpu_check.sh calls it, then adds Docker's).

    PYTHONPATH=src python bench/gpu_check.py --out docs/gpu-check.md [--budget-s 420]

1. the device and its settings as the fingerprint lists them (measure/gpu.environment);
2. the telemetry read back through NVML on this device, idle and under a matmul load: clocks,
   power, temperature, throttle reasons, and how often the energy counter moves (the period the
   energy blocks must span, lockstep.energy_blocks);
3. bench/alone.py's cuda-train (a wasted 1536² matmul in base) and its A/A: compare's step time and
   change against the one-process truth, and from the same comparisons the telemetry each sample
   carries, energy per step with its CI and verdict, and the device-memory peaks;
4. a torch.compile (inductor) CUDA training step whose head adds a graph break (`.item()` in the
   forward): the graph breaks and recompiles per side, values taken again, and that no timed value
   holds a compile.

Writes the figures as Markdown to --out and prints them. Exit 3 when torch sees no CUDA device.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests")]

COMPILED = '''\
import torch


class Net(torch.nn.Module):
    def __init__(self, width=1024):
        super().__init__()
        self.a = torch.nn.Linear(width, width)
        self.b = torch.nn.Linear(width, 10)

    def forward(self, x):
        y = torch.relu(self.a(x))
        {extra}
        return self.b(y)


def make_step(batch=256, width=1024):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    net = Net(width).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    fwd = torch.compile(net)
    x, y = torch.randn(batch, width, device=dev), torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(fwd(x), y).backward()
        opt.step()
    return step
'''
COMPILE_SPEC = ("version: 1\nhardware_label: gpu-check\n"
                "defaults: {rounds: 3, max_rounds: 3, round_ms: 400, profile: 'off'}\n"
                "benchmarks:\n  - {name: compiled-train, callable: 'cstep:make_step'}\n")


def device_section() -> tuple[list[str], dict]:
    import torch

    from profopt_ci.measure import gpu

    props = torch.cuda.get_device_properties(0)
    env = gpu.environment(os.environ)
    lines = [f"Device: {props.name}, {props.total_memory / 2**30:.0f} GiB, torch {torch.__version__} "
             f"(CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}).", ""]
    if not env:
        lines.append(f"NVML: not readable here ({gpu.unavailable() or 'no handle'}): no telemetry below.")
    else:
        lines.append("Environment as the fingerprint lists it: " +
                     " · ".join(f"{k} {v}" for k, v in env.items() if v is not None) + ".")
    return lines, {"uuid": str(getattr(props, "uuid", "") or "") or None, "index": 0}


def telemetry_section(identity: dict) -> list[str]:
    """NVML read back on this device: idle, then during 3 s of matmuls, the energy counter polled
    about every 1 ms to see how often it moves."""
    import torch

    from profopt_ci.measure import gpu

    dev = gpu.open_device(identity, os.environ)
    if dev is None:
        return ["Telemetry: no NVML handle for the device (" + (gpu.unavailable() or "?") + ")."]
    idle = dev.read()
    a = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    polled, reads, end = [], [], time.perf_counter() + 3.0
    cost = []
    while time.perf_counter() < end:
        for _ in range(4):
            a = (a @ a).clamp_(-1, 1)
        t0 = time.perf_counter_ns()
        reads.append(dev.read())
        cost.append(time.perf_counter_ns() - t0)
        for _ in range(20):
            polled.append((time.perf_counter_ns(), dev.energy_mj()))
            time.sleep(0.001)
    torch.cuda.synchronize()
    changes = [t for (t, e), (_, prev) in zip(polled[1:], polled, strict=False) if e != prev]
    period = statistics.median(b - a for a, b in zip(changes, changes[1:], strict=False)) / 1e6 if len(changes) > 2 else None
    sm = [r["sm_mhz"] for r in reads if r["sm_mhz"] is not None]
    power = [r["power_mw"] for r in reads if r["power_mw"] is not None]
    seen = 0
    for r in reads:
        seen |= r["reasons"] or 0
    return [
        "| read | SM MHz | memory MHz | power W | temperature °C | throttle reasons | energy counter mJ |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: |",
        f"| idle | {idle['sm_mhz']} | {idle['mem_mhz']} | {(idle['power_mw'] or 0) / 1000:.0f} | "
        f"{idle['temperature_c']} | {', '.join(gpu.throttle_names(idle['reasons'])) or '—'} | {idle['energy_mj']} |",
        f"| matmul load, {len(reads)} reads | {min(sm, default=0)}–{max(sm, default=0)} | "
        f"{reads[-1]['mem_mhz']} | {statistics.fmean(power) / 1000 if power else 0:.0f} | "
        f"{max((r['temperature_c'] or 0) for r in reads)} | {', '.join(gpu.throttle_names(seen)) or '—'} | "
        f"+{(reads[-1]['energy_mj'] or 0) - (idle['energy_mj'] or 0)} |",
        "",
        f"One full read (6 NVML queries) took {statistics.median(cost) / 1e3:.0f} µs (median). The energy counter "
        f"moved {len(changes)} times in {len(polled)} polls ~1 ms apart: "
        + (f"every {period:.1f} ms (median)." if period is not None else "too rarely to time."),
    ]


def compared_section(files: list[Path]) -> list[str]:
    """What each kept comparison says of the GPU: energy per step, telemetry, throttling, device memory."""
    out = ["| case | energy per step base → head J | energy change (99% CI) | SM MHz in the rounds | power W | "
           "°C max | throttled rounds | allocated MB base → head | reserved MB base → head | GPU notes |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for f in files:
        c = json.loads(f.read_text())
        e = c["benchmarks"][0]
        m = e["metrics"]
        blocks = [s.get("gpu") or {} for side in ("base", "head") for s in e["samples"][side]]
        sm = [x for b in blocks for x in (b.get("sm_mhz_min"), b.get("sm_mhz_max")) if x is not None]
        power = [b["power_w"] for b in blocks if b.get("power_w") is not None]
        en = m.get("energy_per_step_j") or {}
        pair = _pair(m)
        ci = (f"{en['delta_pct']:+.1f}% ({en['ci_low_pct']:+.1f}…{en['ci_high_pct']:+.1f}) {en['verdict']}"
              if en.get("ci_low_pct") is not None else (en.get("verdict") or "—"))
        notes = [n["id"].removeprefix("note.") for n in c["notes"] if isinstance(n, dict)
                 and n["id"].startswith(("note.gpu", "note.graph", "note.recompiles", "note.compile"))]
        out.append(f"| {f.stem} | {pair('energy_per_step_j')} | {ci} | "
                   f"{min(sm, default=0)}–{max(sm, default=0)} | {statistics.median(power) if power else 0:.0f} | "
                   f"{max((b.get('temperature_c') or 0) for b in blocks) if blocks else '—'} | "
                   f"{e.get('throttled_rounds', '—')} of {e['rounds']} | {pair('cuda_max_allocated_mb')} | "
                   f"{pair('cuda_max_reserved_mb')} | {', '.join(notes) or '—'} |")
    return out


def _pair(metrics: dict):
    def said(key: str) -> str:
        got = metrics.get(key) or {}
        return f"{got.get('base', 0) or 0:.4g} → {got.get('head', 0) or 0:.4g}" if got else "—"
    return said


def compile_section(timeout_s: float) -> list[str]:
    from conftest import make_repo

    with tempfile.TemporaryDirectory(prefix="profopt-gpu-compile-") as tmp:
        repo = Path(tmp) / "repo"
        make_repo(repo, [{"cstep.py": COMPILED.format(extra="pass"), "profopt.yml": COMPILE_SPEC},
                         {"cstep.py": COMPILED.format(extra="loss_seen = y.sum().item()")}])
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD~1", "--head", "HEAD",
                                   "--out", "c.json", "--report", "r.md"], cwd=repo, env=env, capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return [f"torch.compile: the compare passed its {timeout_s:.0f} s and was stopped: not checked."]
        wall = time.perf_counter() - start
        if not (repo / "c.json").exists():
            return [f"torch.compile: compare exited {proc.returncode} without a comparison: {proc.stderr[-600:]}"]
        c = json.loads((repo / "c.json").read_text())
    e = c["benchmarks"][0]
    rows = ["| side | graph breaks | recompiles | frames | values taken again | settle calls | "
            "largest value / median, worst round |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for side in ("base", "head"):
        counts = [s.get("compile") or {} for s in e["samples"][side]]
        ratio = max((max(s["values_ms"]) / statistics.median(s["values_ms"]) for s in e["samples"][side]), default=0)
        rows.append(f"| {side} | {max((k.get('graph_breaks', 0) for k in counts), default=0)} | "
                    f"{max((k.get('recompiles', 0) for k in counts), default=0)} | "
                    f"{max((k.get('frames', 0) for k in counts), default=0)} | "
                    f"{sum(k.get('retaken', 0) for k in counts)} | {max((k.get('settle_calls', 0) for k in counts), default=0)} | "
                    f"{ratio:.2f} |")
    st = e["metrics"].get("step_time_ms") or {}
    said = [n["text"] for n in c["notes"] if isinstance(n, dict) and n["id"] in ("note.graph_breaks", "note.recompiles",
                                                                             "note.compile_retaken")]
    return [*rows, "", f"Compare: {e['decision']}, step time {st.get('base', 0):.3f} → {st.get('head', 0):.3f} ms "
                       f"({st.get('delta_pct') or 0:+.1f}%), {wall:.0f} s wall. Said: " + (" · ".join(said) or "nothing")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--budget-s", type=float, default=420.0, help="the whole run's time, the container check aside")
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device found (torch.cuda.is_available() is False): nothing was checked",
              file=sys.stderr)
        return 3
    deadline = time.monotonic() + args.budget_s
    head, identity = device_section()
    parts = ["## Device", "", *head, "", "## Telemetry read back (NVML)", "", *telemetry_section(identity), ""]
    print("\n".join(parts), flush=True)
    with tempfile.TemporaryDirectory(prefix="profopt-gpu-check-") as tmp:
        table, kept = Path(tmp) / "alone.md", Path(tmp) / "kept"
        try:
            subprocess.run([sys.executable, str(HERE / "alone.py"), "--cases", "cuda-train", "cuda-train-aa",
                            "--markdown", str(table), "--json-out", str(kept)],
                           timeout=max(60.0, deadline - time.monotonic() - 150), check=False)
        except subprocess.TimeoutExpired:
            pass
        parts += ["## A CUDA training step: compare against the one-process truth (bench/alone.py)", "",
                  table.read_text() if table.exists() else "alone.py did not finish within the budget.", "",
                  "## The same comparisons: energy per step, telemetry, device memory", "",
                  *compared_section(sorted(kept.glob("*.json"))), ""]
    parts += ["## torch.compile (inductor) on the GPU: head adds a graph break", "",
              *compile_section(max(60.0, deadline - time.monotonic())), ""]
    text = "\n".join(parts)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
