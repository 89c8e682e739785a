"""What `measure: changed` costs and saves (issue 37's goals), side by side with an older profopt.

Each case is a real git repository and a real PR, compared through the real CLI by each tree given
(`--old SRC`, e.g. a worktree of the commit before reach; `--new SRC`, default this checkout), the
trees' runs interleaved, `--runs` times:

- `python-docs`, `python-tests`: more-itertools (a clone given by `--more-itertools`) with a spec of
  three callables and no setup; a docstring edited inside more.py / a test file edited.
- `torch-comment`: examples/torch_train (its loss constraint), a comment added to train.py.
- `suite-docs`: pint (a clone given by `--pint`, at the parent of its PR #1866) with its
  pytest-benchmark suite (`--pint-select`) and `setup: pip install -e . "numpy>=1.21,<2.0.0" pytest`;
  a test file and a CI file edited.
- `suite-one`: a pytest-benchmark suite of 20 short benchmarks (tests/reachkit.py's library grown),
  one helper made three times slower; the new tree's `measure: changed` on the whole suite against
  `--measure all` of a spec holding only the benchmarks it reaches (the wall "of measuring those
  alone"), and the record's cost against `--measure all` of the whole suite.

A new tree runs each case twice: with an empty cache directory (`fresh`: the base is recorded in
the compare) and with the records the fresh run kept (`kept`: as after a nightly). Prints, per case
and variant, the median wall (min–max), what was measured and the decision.

    python bench/reach_goals.py --old /tmp/old-main/src --runs 3
    python bench/reach_goals.py --cases suite-one torch-comment --runs 1
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests")]

MI_SPEC = """\
version: 1
hardware_label: bench
benchmarks:
  - {name: windowed, callable: "bench_mi:make_windowed"}
  - {name: distinct-permutations, callable: "bench_mi:make_permutations"}
  - {name: chunked, callable: "bench_mi:make_chunked"}
"""
MI_BENCH = """\
import more_itertools as mi


def make_windowed():
    data = list(range(2000))
    return lambda: sum(1 for _ in mi.windowed(data, 5))


def make_permutations():
    return lambda: sum(1 for _ in mi.distinct_permutations([1, 1, 2, 2, 3, 3, 4]))


def make_chunked():
    data = list(range(5000))
    return lambda: len(list(mi.chunked(data, 7)))
"""
PINT_SELECT = "test_getattr or test_build_cache or test_parse_unit_name"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def clone(src: Path, dest: Path, at: str = "HEAD") -> Path:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(src), str(dest)], check=True)
    git(dest, "checkout", "-q", "-B", "main", at)
    git(dest, "config", "user.email", "bench@example.com")
    git(dest, "config", "user.name", "bench")
    return dest


def commit_files(root: Path, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text()
    assert old in text, (rel, old)
    (root / rel).write_text(text.replace(old, new, 1))


def branch(root: Path, name: str, change) -> None:
    git(root, "checkout", "-q", "-B", name, "main")
    change(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", name)
    git(root, "checkout", "-q", "main")


# ---- the cases: (repository, head branch, extra compare args) ---------------------------------------

def more_itertools(work: Path, src: Path, pr: str) -> Path:
    root = clone(src, work / f"mi-{pr}")
    commit_files(root, {"profopt.yml": MI_SPEC, "bench_mi.py": MI_BENCH}, "benchmarks")

    def docstring(r: Path) -> None:
        edit(r, "more_itertools/more.py", "Return a sliding window of width *n* over the given iterable.",
             "Return a sliding window of width *n* over *iterable*, one tuple at a time.")

    def tests(r: Path) -> None:
        path = next((r / "tests").glob("test_more.py"))
        path.write_text(path.read_text() + "\n\n# a note for readers of the tests\n")
    branch(root, "pr", docstring if pr == "docs" else tests)
    return root


def torch_comment(work: Path) -> Path:
    root = work / "torch"
    root.mkdir()
    example = ROOT / "examples" / "torch_train"
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    git(root, "config", "user.email", "bench@example.com")
    git(root, "config", "user.name", "bench")
    commit_files(root, {"profopt.yml": (example / "profopt.yml").read_text(), "train.py": (example / "train.py").read_text()},
                 "train")
    branch(root, "pr", lambda r: (r / "train.py").write_text("# a small MLP, trained with AdamW\n" + (r / "train.py").read_text()))
    return root


def pint(work: Path, src: Path, select: str) -> Path:
    root = clone(src, work / "pint", "5d533d6a^")
    spec = ("version: 1\nhardware_label: bench\n"
            "setup: pip install -q -e . \"numpy>=1.21,<2.0.0\" pytest\n"
            f"suites:\n  - {{pytest: pint/testsuite/benchmarks, select: \"{select}\"}}\n")
    commit_files(root, {"profopt.yml": spec}, "benchmarks")

    def tests_and_ci(r: Path) -> None:
        test = r / "pint" / "testsuite" / "test_unit.py"
        test.write_text(test.read_text() + "\n\n# a note for the tests' readers\n")
        ci = next((r / ".github" / "workflows").glob("*.yml"))
        ci.write_text(ci.read_text() + "\n# a CI note\n")
    branch(root, "pr", tests_and_ci)
    return root


SUITE_N = 20


def suite(work: Path) -> Path:
    """20 pytest-benchmark tests over a library of ten functions, two of them calling `helper`."""
    root = work / "suite"
    lib = ["def helper(n):\n    total = 0\n    for i in range(n):\n        total += i * i\n    return total\n"]
    lib += [f"def f{i}(n):\n    return sum(range(n + {i}))\n" for i in range(9)]
    lib.append("def uses_helper(n):\n    return helper(n) + 1\n")
    tests = ["from lib import f0, f1, f2, f3, f4, f5, f6, f7, f8, uses_helper\n"]
    for i in range(SUITE_N):
        call = "uses_helper" if i < 2 else f"f{i % 9}"
        tests.append(f"\n\ndef test_b{i:02d}(benchmark):\n    benchmark({call}, {1500 + 50 * i})\n")
    spec = ("version: 1\nhardware_label: bench\ndefaults: {profile: cprofile}\n"
            "suites:\n  - {pytest: benchmarks/}\n")
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    git(root, "config", "user.email", "bench@example.com")
    git(root, "config", "user.name", "bench")
    commit_files(root, {"lib.py": "\n\n".join(lib), "benchmarks/test_suite.py": "".join(tests), "profopt.yml": spec,
                        "alone.yml": spec.replace("benchmarks/}", "benchmarks/, select: \"test_b00 or test_b01\"}")},
                 "suite")
    branch(root, "pr", lambda r: edit(r, "lib.py", "for i in range(n):\n        total += i * i",
                                      "for i in range(3 * n):\n        total += i * i"))
    return root


# ---- running --------------------------------------------------------------------------------------

def compare(src: Path, root: Path, cache: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "PROFOPT_CACHE_DIR": str(cache)}
    out = root / "bench-out.json"
    out.unlink(missing_ok=True)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", "main", "--head",
                           "pr", "--fail-on", "none", "--out", str(out), "--report", str(root / "bench-out.md"), *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    if proc.returncode != 0 or not out.is_file():
        return {"wall": wall, "error": proc.stderr[-800:]}
    c = json.loads(out.read_text())
    measured = [b["name"] for b in c["benchmarks"] if (b.get("reach") or {}).get("measured", True)]
    return {"wall": wall, "decision": c["decision"], "n": len(c["benchmarks"]), "measured": len(measured),
            "record_s": (c.get("reach") or {}).get("seconds"), "recorded": (c.get("reach") or {}).get("recorded")}


def variants(case: str, old: Path | None, new: Path) -> list[tuple[str, Path, list[str], str]]:
    """(name, src, extra args, cache: fresh | kept | none) per variant of a case."""
    out = [("old", old, [], "none")] if old is not None else []
    out += [("new fresh", new, [], "fresh"), ("new kept", new, [], "kept")]
    if case == "suite-one":
        out += [("new, those alone (measure all)", new, ["--spec", "alone.yml", "--measure", "all"], "none"),
                ("new, whole suite, measure all", new, ["--measure", "all"], "none")]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, help="src/ of the profopt to compare with (e.g. a worktree of main)")
    ap.add_argument("--new", type=Path, default=ROOT / "src")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["python-docs", "python-tests", "torch-comment", "suite-docs",
                                                   "suite-one"])
    ap.add_argument("--more-itertools", type=Path, default=Path("/work/.mirror/more-itertools+more-itertools/repo"))
    ap.add_argument("--pint", type=Path, default=Path("/work/.mirror/hgrecco+pint/repo"))
    ap.add_argument("--pint-select", default=PINT_SELECT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-reach-goals-") as tmp:
        work = Path(tmp)
        for case in args.cases:
            root = {"python-docs": lambda: more_itertools(work, args.more_itertools, "docs"),
                    "python-tests": lambda: more_itertools(work, args.more_itertools, "tests"),
                    "torch-comment": lambda: torch_comment(work),
                    "suite-docs": lambda: pint(work, args.pint, args.pint_select),
                    "suite-one": lambda: suite(work)}[case]()
            runs: dict[str, list[dict]] = {}
            for r in range(args.runs):
                order = variants(case, args.old, args.new)
                if r % 2:
                    order.reverse()  # interleaved: neither variant always first
                for name, src, extra, cache in order:
                    kept_dir = work / f"cache-{case}"
                    if cache == "kept" and not kept_dir.exists():
                        compare(src, root, kept_dir, *extra)  # fills the kept records, not timed
                    cache_dir = kept_dir if cache == "kept" else work / f"cache-{case}-{name}-{r}"
                    if cache != "kept":
                        shutil.rmtree(cache_dir, ignore_errors=True)
                    got = compare(src, root, cache_dir, *extra)
                    runs.setdefault(name, []).append(got)
                    print(f"  {case} run {r + 1} {name}: {got}", flush=True)
            print(f"\n{case}:")
            for name, got in runs.items():
                walls = [g["wall"] for g in got]
                last = got[-1]
                record = [g["record_s"] for g in got if g.get("record_s") is not None]
                print(f"  {name:34s} median {statistics.median(walls):6.1f} s ({min(walls):.1f}–{max(walls):.1f}); "
                      f"measured {last.get('measured')} of {last.get('n')}; {last.get('decision') or last.get('error')}"
                      + (f"; record runs {statistics.median(record):.1f} s" if record else ""))
            print(flush=True)


if __name__ == "__main__":
    main()
