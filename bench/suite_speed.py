"""How long a suite of short benchmarks takes to compare, and where the time goes (issue 28 §4).

A pytest-benchmark suite of `--benchmarks` tests whose steps take ~0.03–0.8 ms, in a real git
repository of two commits: the head's library does 25% more work in the two functions two of the
tests call and leaves the rest alone. Each
variant (spec `defaults` and environment, `--variants`) runs `profopt compare` through the real CLI,
the variants' runs interleaved in a shuffled order so a slower period of the machine lands on all
alike. Every stderr line is timestamped (PROFOPT_PROGRESS=rounds), which splits a run into
collection (setup included), the rounds and the after-pass (quality pass, profiles).

Prints per variant: the median wall of a compare and per benchmark (min–max), the median seconds of
each phase, the rounds, and the verdicts — the same verdict in every run of every variant is the
goal "with the same verdicts" (regressed for the slowed ones, unchanged for the others).

    python bench/suite_speed.py                                  # defaults vs the speed-ups, 3 runs each
    python bench/suite_speed.py --runs 1 --variants defaults 'r150:round_ms=150'
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = """\
import json


def loop(n):
    x = 0
    for i in range(n):
        x += i
    return x


def text(n):
    return ",".join(str(i) for i in range(n))


def roundtrip(n):
    return json.loads(json.dumps({"rows": list(range(n))}))


def sort_pairs(n):
    return sorted((i * 7919 % n, i) for i in range(n))


def loop2(n):  # the head does 25% more work in this one
    x = 0
    for i in range(n):
        x += i
    return x


def roundtrip2(n):  # and in this one
    return json.loads(json.dumps({"rows": list(range(n))}))
"""
SLOW_LIB = LIB.replace("""    for i in range(n):
        x += i
    return x


def roundtrip2(n):  # and in this one
    return json.loads(json.dumps({"rows": list(range(n))}))""", """    for i in range(n + n * PCT // 100):
        x += i
    return x


def roundtrip2(n):  # and in this one
    return json.loads(json.dumps({"rows": list(range(n + n * PCT // 100))}))""")
# name → (function, argument): ~0.03 to ~0.8 ms a step on a 2-vCPU VM
STEPS = [("loop_small", "loop", 500), ("loop_mid", "loop2", 5000), ("loop_big", "loop", 20000),
         ("text_small", "text", 200), ("text_big", "text", 3000), ("json_small", "roundtrip", 300),
         ("json_big", "roundtrip2", 4000), ("sort_mid", "sort_pairs", 2000), ("sort_big", "sort_pairs", 6000),
         ("loop_tiny", "loop", 100), ("text_mid", "text", 1000), ("json_mid", "roundtrip", 1500)]
SLOWED = {"loop_mid", "json_big"}  # they call loop2 / roundtrip2, which the head slows by 25%
SPEC = "version: 1\nhardware_label: suite-speed\n{defaults}suites:\n  - {{pytest: tests/bench/}}\n"


def suite(n: int) -> str:
    body = ["import mylib", ""]
    for name, fn, arg in STEPS[:n]:
        body += ["", f"def test_{name}(benchmark):", f"    benchmark(mylib.{fn}, {arg})", ""]
    return "\n".join(body)


def parse_variant(text: str) -> tuple[str, str, dict[str, str]]:
    """'fast:round_ms=150,rounds=10,PROFOPT_X=1' → (name, spec defaults text, environment)."""
    name, _, rest = text.partition(":")
    keys, env = [], {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key.isupper():
            env[key] = value
        else:
            keys.append(f"{key}: {value}")
    return name, (f"defaults: {{{', '.join(keys)}}}\n" if keys else ""), env


def make_tree(root: Path, n: int, defaults: str, slow_pct: int = 25) -> None:
    def commit(files: dict[str, str], message: str) -> None:
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(textwrap.dedent(content))
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", message],
                       cwd=root, check=True)

    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    commit({"mylib.py": LIB, "tests/bench/test_speed.py": suite(n), "profopt.yml": SPEC.format(defaults=defaults),
            ".gitignore": ".profopt/\n"}, "base")
    commit({"mylib.py": SLOW_LIB.replace("PCT", str(slow_pct))}, f"head: loop2 and roundtrip2 do {slow_pct}% more work")


def run_once(root: Path, env: dict[str, str]) -> dict:
    """One compare; its wall, phase seconds, rounds and verdicts."""
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PROFOPT_PROGRESS": "rounds", **env}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "HEAD~1",
                             "--fail-on", "none"], cwd=root, env=full, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    stamped = [(time.monotonic() - start, line) for line in proc.stderr]
    proc.wait()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"compare exited {proc.returncode}:\n{''.join(line for _, line in stamped[-20:])}")
    first_round = next((t for t, line in stamped if re.search(r": round \d+/\d+", line)), wall)
    first_after = next((t for t, line in stamped if re.search(r"\[(base|head)\]: (profile|quality)", line)), wall)
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    return {"wall": wall, "collect": first_round, "rounds_phase": first_after - first_round,
            "after": wall - first_after, "rounds": [b["rounds"] for b in c["benchmarks"]],
            "verdicts": {b["name"]: (b["metrics"].get("step_time_ms") or {}).get("verdict") for b in c["benchmarks"]},
            "delta": {b["name"]: (b["metrics"].get("step_time_ms") or {}).get("delta_pct") for b in c["benchmarks"]},
            "base_ms": {b["name"]: (b["metrics"].get("step_time_ms") or {}).get("base") for b in c["benchmarks"]},
            "n": len(c["benchmarks"])}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmarks", type=int, default=12, help=f"suite size, up to {len(STEPS)} (default 12)")
    p.add_argument("--runs", type=int, default=3, help="compares per variant (default 3)")
    p.add_argument("--variants", nargs="+", default=["defaults:"],
                   help="NAME:key=value,… — lower-case keys go to the spec's defaults, UPPER-case ones to the "
                        "environment; default: the tool's defaults only")
    p.add_argument("--seed", type=int, default=28)
    p.add_argument("--slow-pct", type=int, default=25,
                   help="how much more work the head's two slowed functions do (default 25; near the 3%% "
                        "threshold the verdicts of two variants are compared, not against an expectation)")
    args = p.parse_args()
    variants = [parse_variant(v) for v in args.variants]
    todo = [v for v in variants for _ in range(args.runs)]
    random.Random(args.seed).shuffle(todo)
    got: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory(prefix="profopt-suite-speed-") as tmp:
        for i, (name, defaults, env) in enumerate(todo, 1):
            root = Path(tmp) / f"{name}-{i}"
            make_tree(root, args.benchmarks, defaults, args.slow_pct)
            res = run_once(root, env)
            got[name].append(res)
            print(f"[{i}/{len(todo)}] {name}: {res['wall']:.1f} s, {res['wall'] / res['n']:.2f} s a benchmark, rounds "
                  f"{min(res['rounds'])}–{max(res['rounds'])}", file=sys.stderr, flush=True)
    expected = {f"test_{n}": ("regressed" if n in SLOWED else "unchanged") for n, _, _ in STEPS[:args.benchmarks]}
    print(f"{args.benchmarks} benchmarks (~0.03–0.8 ms steps), {args.runs} run(s) per variant, interleaved; "
          "seconds: median (min–max)")
    first = next(iter(got))
    for name, runs in got.items():
        per = [r["wall"] / r["n"] for r in runs]
        rounds = [x for r in runs for x in r["rounds"]]
        wrong = [f"{b}: {v}" for r in runs for b, v in r["verdicts"].items() if v != expected.get(b)]
        print(f"\n{name}: wall {spread([r['wall'] for r in runs])} s, per benchmark {spread(per)} s")
        print(f"  phases: collection + setup {spread([r['collect'] for r in runs])} s, rounds "
              f"{spread([r['rounds_phase'] for r in runs])} s, after-pass {spread([r['after'] for r in runs])} s")
        print(f"  rounds per benchmark: median {statistics.median(rounds):g} (min {min(rounds)}, max {max(rounds)}); "
              f"a round: {spread([r['rounds_phase'] / sum(r['rounds']) * 1000 for r in runs])} ms")
        if name != first:  # what the variant does to the times themselves, not only to the wall
            ratios = [r["base_ms"][b] / statistics.median(f["base_ms"][b] for f in got[first])
                      for r in runs for b in r["base_ms"] if r["base_ms"][b]]
            print(f"  base step time against {first}'s, per benchmark: median ×{statistics.median(ratios):.3f} "
                  f"({min(ratios):.3f}–{max(ratios):.3f})")
        slowed = [r["delta"][f"test_{n}"] for r in runs for n in sorted(SLOWED)]
        print(f"  the slowed ones: {', '.join(f'{d:+.1f}%' for d in slowed)}; their verdicts: "
              f"{', '.join(r['verdicts'][f'test_{n}'] for r in runs for n in sorted(SLOWED))}")
        print(f"  verdicts as expected: {sum(len(r['verdicts']) for r in runs) - len(wrong)} of "
              f"{sum(len(r['verdicts']) for r in runs)}" + (f"; not: {', '.join(wrong)}" if wrong else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
