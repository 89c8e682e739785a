"""The six cases of the issue "Measured as the user runs it", each in a fresh repo at the tool's defaults.

Each case is a new git repository (base and head commits, or one commit compared A/A) and one
`profopt compare` by the real CLI in a subprocess, with no flags beyond `--base`/`--head`: no
`--rounds`, no `profile: off`, the spec as short as a user writes it. Prints per case what was
expected, what came out (decision, the constraint's steps and largest |Δ|, the CPU set and the
threads per side), the wall time and whether the case holds; exit 1 when one does not.

    training-same-math   loss falls every step, head ~30% faster, same math   → keep, loss holds
    training-higher-lr   the same, head's learning rate 20% higher             → reject
    two-hash-threads     a step hashing in two threads                          → ≥ 2 CPUs each side
    torch-two-threads    a torch step with set_num_threads(2)                  → ≥ 2 CPUs each side
    torch-mlp-aa         a ~1 ms one-thread torch MLP A/A (loss constraint)    → no-change in ≤ 35 s
    pure-python-aa       a ~2 ms pure-Python A/A                               → no-change in ≤ 20 s

    PYTHONPATH=src python bench/done_when_18.py [--cases NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
from conftest import make_repo  # noqa: E402  (tests/ holds the repo helpers and these steps)
from test_quality import TRAIN  # noqa: E402
from test_threads import TORCH_TWO, TWO_THREADS  # noqa: E402
from verdict_time import CASES as TIMED  # noqa: E402  (the A/A steps, shared)

from profopt_ci.measure.cpus import parse_cpuset  # noqa: E402

TRAIN_SPEC = """\
version: 1
hardware_label: bench-cpu
benchmarks:
  - name: train
    callable: "train:make_step"
    params: {{lr: {lr}, redundant: {redundant}}}
    constraints: [{{metric: loss, rel_tol: 0.01}}]
"""

ONE = "version: 1\nhardware_label: bench-cpu\nbenchmarks:\n  - {{name: par, callable: \"{c}\"}}\n"


def _train(head_lr: float) -> tuple[list[dict], str]:
    base = {"train.py": TRAIN, "profopt.yml": TRAIN_SPEC.format(lr=0.05, redundant=2)}
    return [base, {"profopt.yml": TRAIN_SPEC.format(lr=head_lr, redundant=0)}], "HEAD~1"


def _aa(case: str) -> tuple[list[dict], str]:
    _, files, spec = TIMED[case]
    return [{**files, "profopt.yml": spec}], "HEAD"


CASES = {
    "training-same-math": (lambda: _train(0.05), {"decision": "keep", "constraint_ok": True}),
    "training-higher-lr": (lambda: _train(0.06), {"decision": "reject", "constraint_ok": False}),
    "two-hash-threads": (lambda: ([{"par.py": TWO_THREADS, "profopt.yml": ONE.format(c="par:make_step")}], "HEAD"),
                         {"cpus": 2}),
    "torch-two-threads": (lambda: ([{"tt.py": TORCH_TWO, "profopt.yml": ONE.format(c="tt:make_step")}], "HEAD"),
                          {"cpus": 2}),
    "torch-mlp-aa": (lambda: _aa("torch-mlp-1ms"), {"decision": "no-change", "seconds": 35}),
    "pure-python-aa": (lambda: _aa("pure-python-2ms"), {"decision": "no-change", "seconds": 20}),
}


def run_case(root: Path, base: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFOPT_")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "compare", "--base", base, "--head", "HEAD"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    try:
        b = json.loads((root / ".profopt" / "comparison.json").read_text())["benchmarks"][0]
    except (OSError, ValueError, IndexError) as exc:
        return {"wall": wall, "error": f"exit {proc.returncode}: {exc}; {proc.stderr.strip()[-300:]}"}
    con = (b.get("constraints") or [{}])[0]
    sides = (b.get("threads") or {}).get("sides", {})
    return {"wall": wall, "exit": proc.returncode, "decision": b["decision"], "rounds": b.get("rounds"),
            "constraint_ok": con.get("ok"), "steps": con.get("steps"), "max_delta": con.get("max_delta"),
            "first_broken_step": con.get("first_broken_step"), "cpuset": b.get("cpuset"),
            "cpus": len(parse_cpuset(b["cpuset"])) if b.get("cpuset") else 0,
            "need": {s: v.get("need") for s, v in sides.items()},
            "step_delta_pct": (b.get("metrics", {}).get("step_time_ms") or {}).get("delta_pct")}


def holds(res: dict, want: dict) -> bool:
    if "error" in res:
        return False
    ok = True
    if "decision" in want:
        ok &= res["decision"] == want["decision"]
    if "constraint_ok" in want:
        ok &= res["constraint_ok"] is want["constraint_ok"]
    if "cpus" in want:
        ok &= res["cpus"] >= min(want["cpus"], len(os.sched_getaffinity(0)))
    if "seconds" in want:
        ok &= res["wall"] <= want["seconds"]
    return bool(ok)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = p.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="profopt-dw18-") as tmp:
        for case in args.cases:
            build, want = CASES[case]
            commits, base = build()
            root = Path(tmp) / case
            make_repo(root, commits)
            res = run_case(root, base)
            ok = holds(res, want)
            failed += not ok
            shown = {k: v for k, v in res.items() if v is not None and k != "wall"}
            print(f"{case:<19} {'holds' if ok else 'FAILS':<6} {res['wall']:6.1f} s  want {want}  got {shown}",
                  flush=True)
    print(f"\n{len(args.cases) - failed}/{len(args.cases)} cases hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
