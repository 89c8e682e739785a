"""Synthetic results@1 files of N benchmarks for bench/scale.py (and the scale tests' helpers).

    python bench/scale_data.py N OUT_DIR   → OUT_DIR/base.json, OUT_DIR/head.json
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

FP = {"cpu_model": "x", "cpu_count": 2, "memory_gb": 8.0, "os": "linux", "python": "3.11", "numpy": None,
      "torch": None, "cuda": None, "gpu_name": None, "gpu_driver": None}


def results(n: int, seed: int, scale: float, samples: int = 5) -> dict:
    rng = random.Random(seed)
    benches = {}
    for i in range(n):
        rows = []
        for r in range(samples):
            step = (1.0 + (i % 7) * 0.1) * scale * (1 + rng.gauss(0, 0.01))
            rows.append({"round": r, "order": 0, "step_time_ms": step, "values_ms": [step], "loops": 1,
                         "throughput": 1000.0 / step, "peak_memory_mb": 50.0, "cpu_time_ms": None,
                         "cuda_max_allocated_mb": None, "cuda_max_reserved_mb": None, "phases_ms": {},
                         "quality": {}})
        benches[f"b{i}"] = {"kind": "callable", "params": {"n": i}, "unit": "items", "items_per_iteration": 1,
                            "status": "ok", "error": None, "samples": rows,
                            "summary": {"step_time_ms": rows[0]["step_time_ms"]}, "profile": None}
    return {"schema": "profopt/results@1", "tool_version": "0", "created": "2026-01-01T00:00:00+00:00",
            "commit": None, "dirty": False, "spec_hash": "0" * 64, "hardware_label": "scale", "fingerprint": FP,
            "env": {}, "rounds": samples, "benchmarks": benches}


def write(n: int, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    base, head = out / "base.json", out / "head.json"
    base.write_text(json.dumps(results(n, 1, 1.0)))
    head.write_text(json.dumps(results(n, 2, 1.05)))
    return base, head


if __name__ == "__main__":
    write(int(sys.argv[1]), Path(sys.argv[2]))
