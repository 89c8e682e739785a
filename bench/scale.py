"""Scale of the document paths (issue 14 item 7): validate, diff and report (md, html) of N benchmarks.

    python bench/scale.py            # N = 10^3, 10^4 (diff), 10^4, 10^5 (report, validate), 3.5·10^5 (validate)
    python bench/scale.py --big      # adds diff at 10^5 and report at 10^6 (minutes, GBs)

Each figure is one real `profopt` subprocess: wall seconds and its own peak RSS (ru_maxrss from
wait4). Inputs come from bench/scale_data.py (5 samples a side per benchmark). Goals: linear in N;
diff and report of 10^5 in ≤ 10 s and ≤ 1 GB; a spec of 350k benchmarks validated in seconds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale_data import write  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])}


def measure(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.main", *argv], cwd=cwd, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def spec(n: int, path: Path) -> None:
    with path.open("w") as fh:
        fh.write("version: 1\ndefaults: {rounds: 3}\nbenchmarks:\n")
        for i in range(n):
            fh.write(f"  - name: b{i}\n    callable: bench.m:f\n    params: {{n: {i}, dtype: float32}}\n")


def row(what: str, n: int, secs: float, mb: float, code: int) -> None:
    print(f"{what:<9} {n:>9,} {secs:>9.2f} {mb:>9.0f} {code:>5} {secs / n * 1e6:>9.1f}", flush=True)


def main() -> None:
    big = "--big" in sys.argv
    print(f"{'verb':<9} {'N':>9} {'wall s':>9} {'peak MB':>9} {'exit':>5} {'µs/bench':>9}")
    with tempfile.TemporaryDirectory(prefix="profopt-scale-") as tmp:
        work = Path(tmp)
        for n in (10_000, 100_000, 350_000):
            spec(n, work / "s.yml")
            row("validate", n, *measure(["validate", "--spec", str(work / "s.yml")], work))
        for n in (1_000, 10_000, *((100_000,) if big else ())):
            base, head = write(n, work / str(n))
            row("diff", n, *measure(["diff", str(base), str(head), "--out", f"c{n}.json", "--fail-on", "none"], work))
            row("report", n, *measure(["report", f"c{n}.json", "--out", f"r{n}.md"], work))
            row("html", n, *measure(["report", f"c{n}.json", "--format", "html", "--out", f"r{n}.html"], work))
        if not big:  # report of 10^5 without the 10^5 diff: the 10^4 comparison tiled ten times
            tile(work / "c10000.json", work / "c100000.json", 10)
            row("report", 100_000, *measure(["report", "c100000.json", "--out", "r100000.md"], work))
            row("html", 100_000, *measure(["report", "c100000.json", "--format", "html", "--out", "r100000.html"], work))


def tile(src: Path, dst: Path, times: int) -> None:
    doc = json.loads(src.read_text())
    entries = doc["benchmarks"]
    doc["benchmarks"] = [{**e, "name": f"{e['name']}-{k}"} for k in range(times) for e in entries]
    doc["counts"] = {key: v * times for key, v in doc["counts"].items()}
    dst.write_text(json.dumps(doc))


if __name__ == "__main__":
    main()
