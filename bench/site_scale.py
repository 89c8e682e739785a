"""How long `profopt site` takes on a big store, how fast Chromium draws its pages, and how big it is.

Makes (once, reused from --store-dir when it is there) a dir store of NIGHTLIES stored runs of one
label, each with BENCHMARKS benchmarks shaped as `baseline refresh` stores them (step time,
throughput and peak memory with 12 per-round values, their median and CI), one benchmark in four
with a +15% step somewhere, and an environment change (torch) half-way. Then, in subprocesses of the
real CLI (`profopt site --store dir:… --out …`), medians of --repeat runs:

  - a build from scratch (an empty output folder: every run read and checked, every window searched);
  - a rebuild after one more nightly (the same output folder; one run read);
  - with headless Chromium (Debian's `chromium`, driven by Playwright): the index drawn (the moment
    its script has run: `performance.mark("profopt-drawn")`) and a benchmark page with all its points
    drawn (the same mark after every chart), from file://;
  - the site's size on disk (the served files; the hidden cache folder separately).

Goals (issue 30): scratch ≤ 15 s, one more nightly ≤ 2 s, index ≤ 1 s, a 1,000-point page ≤ 0.5 s,
the site ≤ 50 MB.

Usage: flock /tmp/profopt-cpu.lock python bench/site_scale.py [--nightlies 1000] [--benchmarks 200]
       [--repeat 3] [--store-dir /tmp/profopt-site-store] [--chromium /usr/bin/chromium]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from profopt_ci.report.site_links import page_path  # noqa: E402

LABEL = "cpu-bench-8c"
ROUNDS = 12


def _metric(value: float, rng: random.Random) -> dict:
    values = sorted(value * (1 + rng.gauss(0, 0.01)) for _ in range(ROUNDS))
    med = (values[5] + values[6]) / 2
    return {"median": round(med, 6), "ci_low": round(values[2], 6), "ci_high": round(values[9], 6),
            "confidence": 0.95, "n": ROUNDS, "values": [round(v, 6) for v in values]}


def nightly(i: int, benchmarks: int, nightlies: int, seed: int = 7) -> dict:
    rng = random.Random(seed * 1_000_003 + i)
    commit = f"{i:08x}" + "c0ffee" * 5 + "ab"
    benches = {}
    for k in range(benchmarks):
        step = 1.15 if k % 4 == 0 and i >= (k * 37) % nightlies else 1.0
        ms = (1 + k % 17) * step
        benches[f"bench-{k:03d}"] = {
            "kind": "callable", "params": {"k": k}, "unit": "items", "items_per_iteration": 64, "rounds": ROUNDS,
            "round_cost_ms": 400.0, "quality": {},
            "metrics": {"step_time_ms": _metric(ms, rng), "throughput": _metric(64000 / ms, rng),
                        "peak_memory_mb": _metric(200 + k, rng)},
        }
    day = time.gmtime(1_780_000_000 + i * 86400)
    return {"schema": "profopt/baseline@1", "tool_version": "0.1.0",
            "created": time.strftime("%Y-%m-%dT03:00:00+00:00", day), "commit": commit, "ref": "main",
            "dirty": False, "spec_hash": "s" * 64, "hardware_label": LABEL,
            "fingerprint": {"cpu_model": "Bench CPU", "cpu_count": 8, "torch": "2.13.0" if i >= nightlies // 2 else "2.12.0",
                            "cuda": None, "gpu_name": None, "gpu_driver": None},
            "env": {}, "rounds": ROUNDS, "seed": 1, "runner": {"probe": "python-loop@1", "ms": 10.0, "python": "3.11.7"},
            "benchmarks": benches, "failed": {}}


def write_nightly(store: Path, doc: dict) -> None:
    ts = doc["created"][:10].replace("-", "") + "T030000Z"
    path = store / LABEL / ts[:4] / f"{ts}-{doc['commit'][:12]}-000000.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def make_store(path: Path, nightlies: int, benchmarks: int) -> None:
    marker = path / ".made"
    want = f"{nightlies}x{benchmarks}"
    if marker.is_file() and marker.read_text() == want:
        return
    shutil.rmtree(path, ignore_errors=True)
    started = time.perf_counter()
    for i in range(nightlies):
        write_nightly(path, nightly(i, benchmarks, nightlies))
    marker.write_text(want)
    print(f"made a store of {nightlies} nightlies x {benchmarks} benchmarks in {time.perf_counter() - started:.0f} s "
          f"({sum(f.stat().st_size for f in path.rglob('*.json')) / 1e6:.0f} MB)", flush=True)


def site(store: Path, out: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci", "site", "--store", f"dir:{store}", "--out", str(out)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"profopt site failed: {proc.stderr[-2000:]}")
    print(f"    {proc.stderr.strip().splitlines()[-1]}", flush=True)
    return seconds


def size(out: Path) -> tuple[int, int]:
    served = cache = 0
    for f in out.rglob("*"):
        if f.is_file():
            if ".profopt-site" in f.relative_to(out).parts:
                cache += f.stat().st_size
            else:
                served += f.stat().st_size
    return served, cache


def drawn_ms(chromium: str, urls: list[str], repeat: int) -> list[float]:
    """Per URL, the median over `repeat` fresh pages of the time from navigation to the page's drawn mark."""
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for url in urls:
            times = []
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(url, wait_until="load")   # the scripts are deferred: they ran before "load"
                times.append(page.evaluate("performance.getEntriesByName('profopt-drawn')[0].startTime"))
                page.close()
            out.append(statistics.median(times))
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nightlies", type=int, default=1000)
    ap.add_argument("--benchmarks", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store-dir", default=str(Path(tempfile.gettempdir()) / "profopt-site-store"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = ap.parse_args()
    base = Path(a.store_dir)
    make_store(base, a.nightlies, a.benchmarks)
    scratch, again = [], []
    with tempfile.TemporaryDirectory(prefix="profopt-site-") as tmp:
        for r in range(a.repeat):
            store = Path(tmp) / f"store{r}"
            shutil.copytree(base, store)
            out = Path(tmp) / f"site{r}"
            print(f"  run {r + 1}: from scratch", flush=True)
            scratch.append(site(store, out))
            write_nightly(store, nightly(a.nightlies, a.benchmarks, a.nightlies))
            print(f"  run {r + 1}: after one more nightly", flush=True)
            again.append(site(store, out))
        served, cache = size(out)
        index = out / "index.html"
        page = out / page_path(LABEL, "bench-000")
        points = len(json.loads((out / "data" / page_path(LABEL, "bench-000")[2:].replace(".html", ".js"))
                                .read_text().split("=", 1)[1].rstrip(";\n"))["commits"])
        index_ms, page_ms = drawn_ms(a.chromium, [index.as_uri(), page.as_uri()], max(a.repeat, 3))
    print(f"\nstore: {a.nightlies + 1} nightlies x {a.benchmarks} benchmarks, one label (medians of {a.repeat} runs)")
    print(f"build from scratch:        {statistics.median(scratch):6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in scratch)})  goal <= 15 s")
    print(f"after one more nightly:    {statistics.median(again):6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in again)})  goal <= 2 s")
    print(f"index drawn (Chromium):    {index_ms:6.0f} ms  goal <= 1000 ms")
    print(f"page of {points} points drawn: {page_ms:6.0f} ms  goal <= 500 ms")
    print(f"site size:                 {served / 1e6:6.1f} MB  goal <= 50 MB  (+ {cache / 1e6:.1f} MB cache in .profopt-site/, "
          "not served)")
    ok = (statistics.median(scratch) <= 15 and statistics.median(again) <= 2 and index_ms <= 1000 and page_ms <= 500
          and served <= 50e6)
    print("all goals met" if ok else "NOT all goals met")
    if not math.isfinite(index_ms):
        sys.exit(1)


if __name__ == "__main__":
    main()
