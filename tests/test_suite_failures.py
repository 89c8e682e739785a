"""A suite that cannot be collected, and names no file system should see as they are (issue 28 §2).

Real repositories, real asv / pytest collection, the real CLI: a suite whose discovery raises is one
failed entry naming the file and line, comparison.json and the report are written, exit 3; a
benchmark name with `/`, `..`, spaces, non-ASCII text or 300 characters never becomes a file path
as it is (worker jobs, lockstep workers, zygotes, profiles, callgrind runs).
"""
from __future__ import annotations

import json
import os

import pytest
from conftest import make_repo, run_cli

from profopt_ci.filenames import MAX_PART, file_part

FAST = "defaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, profile: \"off\", quality_steps: 1}\n"


def _compare(root, *extra: str):
    proc = run_cli(["compare", "--base", "HEAD~1", "--report", "report.md", *extra], root, timeout=600)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def test_an_asv_suite_whose_discovery_raises_is_a_failed_entry_with_file_and_line(tmp_path):
    root = tmp_path / "repo"
    bench = ("import urllib.request\n\nDATA = urllib.request.urlopen('http://127.0.0.1:9/data.csv').read()\n\n\n"
             "def time_sum():\n    sum(range(100))\n")
    spec = ("version: 1\nhardware_label: t\n" + FAST
            + "suites:\n  - {asv: benchmarks/asv.conf.json, select: 'time_'}\n")
    make_repo(root, [{"benchmarks/__init__.py": "", "benchmarks/asv.conf.json": '{"version": 1, "benchmark_dir": "."}',
                      "benchmarks/bench_net.py": bench, "profopt.yml": spec}, {"x": "1"}])
    proc = _compare(root)
    assert proc.returncode == 3, proc.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    (entry,) = c["benchmarks"]
    assert entry["name"] == "asv:benchmarks/asv.conf.json" and entry["decision"] == "failed"
    assert entry["status"] == {"base": "failed", "head": "failed"}
    cause = entry["error"]["message"]
    assert cause.startswith("benchmarks/bench_net.py:3: URLError") and "Connection refused" in cause
    report = (root / "report.md").read_text()
    assert "failed" in report.splitlines()[0] and "bench\\_net.py:3" in report
    assert "suites [head]: asv:benchmarks/asv.conf.json: benchmarks/bench_net.py:3: URLError" in proc.stderr


def test_a_pytest_suite_with_a_syntax_error_is_a_failed_entry_with_file_and_line(tmp_path):
    root = tmp_path / "repo"
    good = "def test_fine(benchmark):\n    benchmark(sum, range(100))\n"
    broken = "def test_ok(benchmark):\n    benchmark(sum, range(10))\n\n\ndef test_b(benchmark:\n    pass\n"
    spec = "version: 1\nhardware_label: t\n" + FAST + "suites:\n  - {pytest: tests/bench/}\n"
    make_repo(root, [{"tests/bench/test_good.py": good, "profopt.yml": spec},
                     {"tests/bench/test_broken.py": broken}])
    proc = _compare(root, "--measure", "all")  # the head's suite on both sides: test_fine's code is the same
    assert proc.returncode == 3, proc.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    by = {b["name"]: b for b in c["benchmarks"]}
    failed = by["pytest:tests/bench/"]
    assert failed["decision"] == "failed"
    assert failed["error"]["message"].startswith("tests/bench/test_broken.py:5: ")
    assert "SyntaxError" in failed["error"]["message"]
    assert (root / "report.md").is_file() and "test\\_broken.py:5" in (root / "report.md").read_text()
    fine = by["test_fine"]  # the files pytest could collect are still measured
    assert fine["decision"] != "failed" and fine["samples"]["base"] and fine["samples"]["head"]
    # the same through `profopt run`: the results are written, the entry failed, exit 3
    run = run_cli(["run", "--out", "r.json"], root)
    assert run.returncode == 3 and "internal error" not in run.stderr, run.stderr[-3000:]
    results = json.loads((root / "r.json").read_text())["benchmarks"]
    entry = results["pytest:tests/bench/"]
    assert entry["status"] == "failed" and entry["error"].startswith("tests/bench/test_broken.py:5: ")
    assert results["test_fine"]["status"] == "ok" and results["test_fine"]["samples"]


HOSTILE_IDS = ["a/b", "..", "with space", "ünï 名前", "x" * 300, "../../escaped"]


@pytest.mark.slow
def test_hostile_names_never_reach_a_file_path_as_they_are(tmp_path):
    root = tmp_path / "repo"
    suite = (f"import pytest\n\n\n@pytest.mark.parametrize('n', range({len(HOSTILE_IDS)}), ids={HOSTILE_IDS!r})\n"
             "def test_n(benchmark, n):\n    benchmark(sum, range(100 * (n + 1)))\n")
    conf = "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
    spec = ("version: 1\nhardware_label: t\ndefaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, "
            "profile: cprofile, quality_steps: 1}\nsuites:\n  - {pytest: tests/bench/}\n"
            "  - {pytest: tests/bench/, select: xxxxxxxxxx, instrument: instructions}\n")
    make_repo(root, [{"tests/bench/test_names.py": suite, "pytest.ini": conf, "profopt.yml": spec}, {"x": "1"}])
    profiles = tmp_path / "profiles"
    proc = _compare(root, "--fail-on", "none", "--profile-dir", str(profiles), "--measure", "all")
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    names = {b["name"] for b in c["benchmarks"]}
    assert {f"test_n[{i.replace('/', '.')}]" for i in HOSTILE_IDS} <= names
    assert all(b["decision"] != "failed" for b in c["benchmarks"]), [b.get("error") for b in c["benchmarks"]]
    counted = [b for b in c["benchmarks"] if "instructions" in (b.get("metrics") or {})]
    assert counted and "x" * 300 in counted[0]["name"]  # the callgrind run of the 300-character name
    # every profile is a plain file right in the profile folder, one per benchmark and side
    made = sorted(os.listdir(profiles))
    assert len(made) == 2 * len(HOSTILE_IDS) and all((profiles / f).is_file() for f in made)
    assert all(len(f) < 120 and not f.startswith(".") and " " not in f for f in made)
    assert not (tmp_path / "escaped").exists() and not (root / "escaped").exists()


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b", "with space", "ünï 名前", "x" * 300,
                                  "\0nul", "-rf", ".hidden", "\udcff"])
def test_file_part_is_one_safe_component(name):
    part = file_part(name)
    assert part and len(part) <= MAX_PART and part[0] not in ".-"
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in part)
    assert part not in (".", "..") and os.sep not in part
    assert file_part(name) == part  # the same name, the same file


def test_safe_names_keep_their_file_name_and_look_alikes_stay_apart():
    assert file_part("train-step_2.bf16") == "train-step_2.bf16"
    assert len({file_part(n) for n in ["a/b", "a b", "a_b", "a?b", "a.b"]}) == 5
    assert file_part("y" * 300) != file_part("y" * 301)
