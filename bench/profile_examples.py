"""Profile every example (base and tuned/) in-process and print the bottleneck note and its figures.

    PYTHONPATH=src python bench/profile_examples.py [--threads 1]

What the tests assert per example is what this prints on a 2-core runner; run it to see the
figures behind a class (they move with the machine, the class should not).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CALLABLES = {"torch_train": ("train.py", "torch"), "llm_infer": ("generate.py", "torch"),
             "python_func": ("neighbors.py", "cprofile")}


def load(example: str, filename: str, tuned: bool):
    path = EXAMPLES / example / ("tuned" if tuned else "") / filename
    spec = importlib.util.spec_from_file_location(f"{example}_{tuned}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def show(label: str, summary: dict, seconds: float) -> None:
    from profopt_ci.analyze import bottleneck as analyze

    b = analyze.bottleneck(summary)
    c = summary.get("counters") or {}
    shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in (summary.get("phase_shares") or {}).items())
    print(f"{label}: {summary['kind']}, step {summary.get('step_time_ms')} ms, capture {seconds:.1f} s")
    print(f"  phases: {shares or '-'}")
    print("  counters: " + ", ".join(f"{k}={v}" for k, v in c.items() if v is not None))
    print(f"  → {b['class']} ({b['rule']}): {'; '.join(b['evidence'])}")
    print(f"    next: {b['next_action']}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import torch

    from profopt_ci.profile import capture, machine
    from profopt_ci.profile.capture_command import capture_command

    torch.set_num_threads(args.threads)
    balance = machine.probe()
    print("machine:", balance)
    for example, (filename, mode) in CALLABLES.items():
        for tuned in (False, True):
            step = load(example, filename, tuned).make_step()
            start = time.perf_counter()
            summary = capture.capture(step, mode, steps=5, trace_dir=None, name=example, machine=balance)
            show(f"{example}{' (tuned)' if tuned else ''}", summary, time.perf_counter() - start)
    for tuned in (False, True):
        cwd = EXAMPLES / "cli" / ("tuned" if tuned else "")
        start = time.perf_counter()
        summary = capture_command("python3 wordfreq.py 200000", cwd=cwd, env={}, trace_dir=None,
                                          name="wordfreq", timeout_s=120, machine=balance)
        show(f"cli{' (tuned)' if tuned else ''}", summary, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
