"""How long "the newest stored baseline for a label at or before commit C" takes with 10,000 runs.

Builds (with git fast-import, in a temporary folder) a repository of N commits, a dir store and a
git store (a bare `origin` with a `profopt-data` branch) each holding RUNS stored baselines spread
over those commits and two labels, then times, in this process:

  - the newest run at or before a commit in the middle of the history (scan + rev-list + one load);
  - the last 30 nightly runs there (what the report's history needs);
  - `profopt baseline list` of one label (the 20 newest, loaded).

Usage: python bench/store_query.py [--runs 10000] [--commits 5000] [--repeat 5]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from profopt_ci.store import stored_baselines
from profopt_ci.store import stores as store

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, input=input, capture_output=True, check=True).stdout.decode()


def make_history(repo: Path, n: int) -> list[str]:
    """n commits on main via fast-import (seconds, not minutes)."""
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    chunks = []
    for i in range(n):
        data = f"{i}\n".encode()
        msg = f"c{i}".encode()
        chunks.append(b"commit refs/heads/main\nmark :%d\ncommitter b <b@x> %d +0000\ndata %d\n%s\n"
                      % (i + 1, 1_700_000_000 + i * 60, len(msg), msg))
        if i:
            chunks.append(b"from :%d\n" % i)
        chunks.append(b"M 644 inline f\ndata %d\n%s\n" % (len(data), data))
    git(repo, "fast-import", "--quiet", input=b"".join(chunks))
    git(repo, "checkout", "-q", "main")
    return git(repo, "rev-list", "--reverse", "main").split()


def doc(commit: str, label: str, day: int, value: float) -> dict:
    results = {"commit": commit, "spec_hash": "s" * 64, "hardware_label": label, "rounds": 20,
               "fingerprint": {"cpu_model": "bench"},
               "benchmarks": {f"bench-{k}": {"status": "ok", "kind": "callable", "params": {"k": k}, "unit": "items",
                                             "samples": [{"round": r, "step_time_ms": value * (1 + 0.01 * (r % 5)),
                                                          "values_ms": [value], "loops": 1, "peak_memory_mb": 100.0,
                                                          "quality": {}} for r in range(20)]}
                              for k in range(3)}}
    d = stored_baselines.from_results(results)
    d["created"] = f"{2020 + day // 365}-{1 + (day % 365) // 31:02d}-{1 + day % 28:02d}T03:00:00+00:00"
    return d


def fill(root: Path, commits: list[str], runs: int) -> list[tuple[str, bytes]]:
    files = []
    templates = {(label, k): doc("0" * 40, label, 0, 10.0 + k * 0.1) for label in ("gpu-a100", "cpu-8c") for k in range(7)}
    for i in range(runs):
        label = "gpu-a100" if i % 4 else "cpu-8c"
        commit = commits[int(i * len(commits) / runs)]
        d = dict(templates[(label, i % 7)], commit=commit)
        day = i // 2
        d["created"] = f"{2020 + day // 365}-{1 + (day % 365) // 31:02d}-{1 + day % 28:02d}T03:00:00+00:00"
        when = store._dt.datetime.fromisoformat(d["created"]) + store._dt.timedelta(seconds=i)
        path = store.new_path(label, commit, when)
        files.append((path, (json.dumps(d, separators=(",", ":")) + "\n").encode()))
    for path, data in files:
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


def git_store(tmp: Path, files: list[tuple[str, bytes]], work: Path) -> None:
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(origin))
    chunks = [b"commit refs/heads/profopt-data\ncommitter b <b@x> 1700000000 +0000\ndata 4\ndata\n"]
    for path, data in files:
        chunks.append(b"M 644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    git(origin, "fast-import", "--quiet", input=b"".join(chunks))
    git(work, "remote", "add", "origin", str(origin))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-bench-") as t:
        tmp = Path(t)
        t0 = time.perf_counter()
        repo = tmp / "repo"
        commits = make_history(repo, args.commits)
        files = fill(tmp / "dirstore", commits, args.runs)
        git_store(tmp, files, repo)
        size = sum(len(d) for _, d in files)
        print(f"setup: {args.commits} commits, {args.runs} stored runs ({size / args.runs:.0f} bytes each, "
              f"{size / 2**20:.1f} MiB) in {time.perf_counter() - t0:.1f} s")
        target = commits[len(commits) // 2]
        silent = lambda _m: None  # noqa: E731
        for kind in ("dir", "git"):
            def query(kind=kind, limit=1):
                s = (store.DirStore(tmp / "dirstore") if kind == "dir" else store.GitStore(repo=repo, log=silent))
                return store.at_or_before(s, repo, "gpu-a100", target, limit=limit, warn=silent)

            sec, found = timed(query, args.repeat)
            e, d, dist = found[0]
            print(f"{kind} store: newest gpu-a100 run at or before commit {args.commits // 2} "
                  f"({len([f for f in files if f[0].startswith('gpu-a100/')])} runs of the label): "
                  f"{sec * 1000:.0f} ms (median of {args.repeat}) -> {d['commit'][:12]}, {dist} commit(s) before")
            sec, found = timed(lambda q=query: q(limit=30), args.repeat)
            print(f"{kind} store: last 30 runs for the history: {sec * 1000:.0f} ms ({len(found)} loaded)")

            def listing(kind=kind):
                s = (store.DirStore(tmp / "dirstore") if kind == "dir" else store.GitStore(repo=repo, log=silent))
                return stored_baselines.list_lines(s, label="gpu-a100", limit=20)

            sec, lines = timed(listing, args.repeat)
            print(f"{kind} store: baseline list --label gpu-a100 (20 newest): {sec * 1000:.0f} ms")
        cold = subprocess.run([sys.executable, "-m", "profopt_ci", "baseline", "show", "--store",
                               f"dir:{tmp / 'dirstore'}", "--label", "gpu-a100", "--at", target], cwd=repo,
                              env=dict(ENV, PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src")),
                              capture_output=True, text=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "profopt_ci", "baseline", "show", "--store",
                        f"dir:{tmp / 'dirstore'}", "--label", "gpu-a100", "--at", target], cwd=repo,
                       env=dict(ENV, PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src")),
                       capture_output=True, text=True, check=True)
        print(f"`profopt baseline show --at <commit>` as a process (interpreter start included): "
              f"{(time.perf_counter() - t0) * 1000:.0f} ms; exit {cold.returncode}")


if __name__ == "__main__":
    main()
