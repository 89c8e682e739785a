"""How many rounds a 2-thread torch A/A needs, at glibc's defaults and with the allocator fixed.

Two fresh repositories of bench/alone.py's `torch-2t-aa` step (torch.set_num_threads(2)): one
spec as it is, one whose `env` sets MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ (glibc then
keeps what a step frees instead of faulting it in again). `profopt compare --base HEAD --head HEAD`
at the defaults by the real CLI, the two alternated, `--repeat` times each. Prints per compare:
the rounds it took to decide, the wall time, base's median minor faults a step, the decision; then
the medians per variant.

    PYTHONPATH=src python bench/allocator_aa.py [--repeat 6]
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
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
from alone import MALLOC_FIXED, SPEC, TORCH_2T  # noqa: E402
from conftest import make_repo  # noqa: E402

VARIANTS = {"defaults": {}, "fixed": MALLOC_FIXED}


def repo(root: Path, env: dict[str, str]) -> Path:
    extra = ", env: {" + ", ".join(f"{k}: '{v}'" for k, v in env.items()) + "}" if env else ""
    make_repo(root, [{"case.py": TORCH_2T.format(wasted=False), "profopt.yml": SPEC.format(extra=extra)}])
    return root


def one(path: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", "HEAD", "--head", "HEAD",
                           "--fail-on", "none"], cwd=path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
    wall = time.perf_counter() - start
    doc = json.loads((path / ".profopt" / "comparison.json").read_text())
    entry = doc["benchmarks"][0]
    faults = [s["faults_per_step"] for s in entry["samples"]["base"] if s.get("faults_per_step") is not None]
    return {"rounds": entry["rounds"], "wall": wall, "faults": statistics.median(faults) if faults else None,
            "decision": doc["decision"], "exit": proc.returncode}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=6)
    args = p.parse_args()
    got: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="profopt-alloc-") as tmp:
        repos = {name: repo(Path(tmp) / name, env) for name, env in VARIANTS.items()}
        for i in range(args.repeat):
            for name, path in repos.items():
                r = one(path)
                got[name].append(r)
                print(f"{i + 1:>2} {name:<9} {r['rounds']:>3} rounds {r['wall']:>6.1f} s  faults/step "
                      f"{r['faults'] if r['faults'] is None else round(r['faults'])}  {r['decision']}", flush=True)
    print()
    for name, runs in got.items():
        print(f"{name:<9} rounds {' '.join(str(r['rounds']) for r in runs)} (median "
              f"{statistics.median(r['rounds'] for r in runs):g}); wall median "
              f"{statistics.median(r['wall'] for r in runs):.1f} s; decisions {sorted({r['decision'] for r in runs})}")


if __name__ == "__main__":
    main()
