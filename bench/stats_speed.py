"""The statistics of `profopt diff` (unpaired) and `compare` (paired), old tree vs this one, in one run.

    python bench/stats_speed.py [--old /work/main/src] [--data /tmp/sc] [--sizes 1e4,1e5] [--repeat 3]

Each tree runs in its own interpreter (PYTHONPATH=<tree>/src), one after the other, on the same data:
results@1 files of N benchmarks, 5 samples a side (DATA/1e4/base.json … as bench/scale_data.py writes
them; made in a temporary folder when missing), plus N/10 benchmarks with 12 samples a side, where
every CI is computed and worded. In the child: json.load both files, the cyclic GC paused as the CLI
does, then `pipeline.diff.run_diff(None, base, head)` `--repeat` times (medians printed):

    run_diff   the whole call, in-process (time.perf_counter)
    entries    time inside judge.build_entry + judge.finish: per-benchmark metrics, multiplicity
               (p_adjusted / p_holm across all benchmarks), decisions; wall and (cpu) process time
    metrics    time inside the metric statistics alone: the tree's compare_unpaired (analyze.unpaired,
               or analyze.batch before it) and any per-benchmark decide.compare_metrics; wall and (cpu)
    multipl.   time inside decide.multiplicity_corrected (BH and Holm across all benchmarks), wall

On a VM shared with other jobs the wall figures move with their load; the cpu ones much less.

`same` says whether both trees wrote the same comparison (json.dumps, `created` left out). Last, the
paired path: decide.compare_metrics of 20 literal rounds a side, µs per call.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale_data import results  # noqa: E402

CHILD = r'''
import gc, hashlib, inspect, json, random, statistics, sys, time
from profopt_ci.analyze import decide
from profopt_ci.pipeline import diff_results, entries
from profopt_ci.specfile.load import Benchmark, resolve_settings

mode, repeat = sys.argv[1], int(sys.argv[2])
spent = {}

try:  # a tree whose comparison holds msgspec Structs writes them so (documents/types.py, records.py before)
    from profopt_ci.documents.types import json_default
except ImportError:
    try:
        from profopt_ci.documents.records import json_default
    except ImportError:
        json_default = str

def timed(owner, name, key):
    f = getattr(owner, name)
    def wrapper(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
            spent[key + " cpu"] = spent.get(key + " cpu", 0.0) + time.process_time() - c
    setattr(owner, name, wrapper)

def unpaired(folder):
    with open(folder + "/base.json") as fh:
        base = json.load(fh)
    with open(folder + "/head.json") as fh:
        head = json.load(fh)
    timed(diff, "build_entry", "entries")
    timed(diff, "finish", "entries")
    timed(entries, "compare_metrics", "metrics")
    for name in ("apply_multiplicity", "multiplicity_corrected"):  # by the tree's name for it
        if hasattr(entries, name):
            timed(entries, name, "multiplicity")
    for module in ("batch", "unpaired"):  # the vectorized statistics, by the tree's name for them
        if hasattr(entries, module):
            timed(getattr(entries, module), "compare_unpaired", "metrics")
    gc.disable()  # as `profopt diff` does (gc_pause.paused) around reading and comparing
    gc.freeze()
    rows, digest = [], None
    for _ in range(repeat):
        spent.clear()
        t = time.perf_counter()
        c = diff_results.run_diff(None, base, head)
        rows.append({"run_diff": time.perf_counter() - t, **spent})
        c.pop("created", None)
        digest = hashlib.sha256(json.dumps(c, default=json_default).encode()).hexdigest()
        del c
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]} | {"digest": digest, "n": len(head["benchmarks"])}

def paired(calls):
    bench = Benchmark(name="b", callable=None, command=None, params={}, items_per_iteration=1, unit="items",
                      goal=None, constraints=[], env={}, settings=resolve_settings({}, {}))
    rng = random.Random(7)
    def side(scale):
        return [{"round": r, "step_time_ms": scale * rng.lognormvariate(0, 0.02), "throughput": None,
                 "peak_memory_mb": 50.0 + rng.random(), "cuda_max_allocated_mb": None} for r in range(20)]
    data = [(side(1.0), side(1.03)) for _ in range(calls)]
    # a tree with both paths in compare_metrics asks which (paired=True); a paired-only one does not
    kw = {"paired": True} if "paired" in inspect.signature(decide.compare_metrics).parameters else {}
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        for b, h in data:
            decide.compare_metrics(bench, b, h, **kw)
        best.append((time.perf_counter() - t) / calls * 1e6)
    return {"us_per_call": min(best)}

print(json.dumps(unpaired(sys.argv[3]) if mode == "unpaired" else paired(int(sys.argv[3]))))
'''


def child(tree: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def dataset(data: Path, size: str, samples: int, tmp: Path) -> Path:
    folder = data / size if samples == 5 else tmp / f"{size}-{samples}"
    if not (folder / "base.json").exists():
        folder = tmp / f"{size}-{samples}"
        folder.mkdir(parents=True, exist_ok=True)
        n = int(float(size))
        for name, seed, scale in (("base", 1, 1.0), ("head", 2, 1.05)):
            (folder / f"{name}.json").write_text(json.dumps(results(n, seed, scale, samples)))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="/work/main/src", help="the tree to compare with (its src/)")
    ap.add_argument("--data", default="/tmp/sc")
    ap.add_argument("--sizes", default="1e4,1e5")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trees = {"old": Path(args.old), "new": HERE.parent / "src"}
    print(f"{'data':<12} {'tree':<4} {'run_diff':>9} {'entries':>9} {'(cpu)':>7} {'metrics':>9} {'(cpu)':>7}"
          f" {'multipl.':>9} {'µs/bench':>9}  same   (seconds, medians; µs/bench: metrics + multiplicity, cpu)")
    with tempfile.TemporaryDirectory(prefix="profopt-stats-") as tmp:
        for size in args.sizes.split(","):
            cases = [(size, 5)] + ([(f"{float(size) / 10:g}", 12)] if float(size) >= 1e4 else [])
            for label, samples in cases:
                folder = dataset(Path(args.data), label, samples, Path(tmp))
                got = {name: child(tree, "unpaired", str(args.repeat), str(folder)) for name, tree in trees.items()}
                same = "yes" if got["old"]["digest"] == got["new"]["digest"] else "NO"
                for name, r in got.items():
                    stats_cpu = r["metrics cpu"] + r["multiplicity cpu"]
                    print(f"{label + ' x' + str(samples):<12} {name:<4} {r['run_diff']:>9.2f} {r['entries']:>9.2f} "
                          f"{r['entries cpu']:>7.2f} {r['metrics']:>9.2f} {r['metrics cpu']:>7.2f} "
                          f"{r['multiplicity']:>9.2f} {stats_cpu / r['n'] * 1e6:>9.1f}  {same}", flush=True)
    for name, tree in trees.items():
        print(f"paired compare_metrics, 20 rounds a side, {name}: "
              f"{child(tree, 'paired', '5', '1000')['us_per_call']:.0f} µs/call (best of 5 × 1000 calls)")


if __name__ == "__main__":
    main()
