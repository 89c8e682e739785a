"""Suites written for another tool (pytest-benchmark / pytest-codspeed, asv, pyperf), run unchanged.

Each test writes its own suite into a real git repository of real commits and runs the real CLI:
collection by pytest / asv_runner / the script's own Runner calls, the lockstep pairs, the report.
A head that slows one function ~60% must regress exactly the benchmarks that call it.
"""
from __future__ import annotations

import json
import time

import pytest
from conftest import make_repo, run_cli

from profopt_ci.harness import timing as harness
from profopt_ci.report.render import render
from profopt_ci.words.i18n import say

LIB = """\
def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def total(values):
    return sum(v * v for v in values)


def join(n):
    return ",".join(str(i) for i in range(n))


def square_sum(n):
    return sum(i * i for i in range(n))
"""
# the PR under test: ~60% more work in `work`, the same result — far from the 10% threshold these
# tests use, so a CI runner's load cannot leave it inconclusive at their 10 rounds (+30% did once)
SLOW_LIB = LIB.replace("""        x += i
    return x""", """        x += i
    for i in range(n * 6 // 10):
        x += 0
    return x""")

PYTEST_SUITE = {
    "tests/bench/conftest.py": """\
        import pytest


        @pytest.fixture
        def size():
            return 3000
        """,
    "tests/bench/test_lib.py": """\
        import pytest

        import mylib


        def test_work(benchmark, size):
            result = benchmark(mylib.work, size)
            assert result == size * (size - 1) // 2


        def test_pedantic(benchmark):
            def setup():
                return (list(range(400)),), {}

            benchmark.pedantic(mylib.total, setup=setup, rounds=10)


        @pytest.mark.parametrize("n", [100, 400])
        def test_join(benchmark, n):
            benchmark.extra_info["n"] = n
            assert benchmark(mylib.join, n).startswith("0,1")


        @pytest.mark.benchmark
        def test_marker():
            mylib.square_sum(300)


        def test_not_a_benchmark():
            assert mylib.join(2) == "0,1"


        @pytest.mark.skip(reason="not today")
        def test_skipped(benchmark):
            benchmark(mylib.join, 3)
        """,
}
SETTINGS = "defaults: {rounds: 10, max_rounds: 10, round_ms: 100, threshold: 10, profile: \"off\", quality_steps: 5}\n"
SPEC = "version: 1\nhardware_label: test-cpu\n" + SETTINGS + "suites:\n  - {pytest: tests/bench/}\n"


def _compare(root, *extra: str) -> tuple[object, dict]:
    """`--measure all`: these tests read every benchmark's verdict, the ones the change does not reach
    too (tests/test_reach_*.py test what `measure: changed` leaves out)."""
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none", "--report", "report.md", "--measure", "all",
                    *extra], root, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads((root / ".profopt" / "comparison.json").read_text())


def _verdicts(comparison: dict) -> dict[str, str]:
    return {b["name"]: (b.get("metrics") or {}).get("step_time_ms", {}).get("verdict") for b in comparison["benchmarks"]}


@pytest.mark.slow
def test_pytest_suite_in_every_style_regresses_exactly_the_slowed_benchmark(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": SPEC, **PYTEST_SUITE}, {"mylib.py": SLOW_LIB}])
    _, c = _compare(root)
    verdicts = _verdicts(c)
    assert set(verdicts) == {"test_work", "test_pedantic", "test_join[100]", "test_join[400]", "test_marker"}
    assert verdicts["test_work"] == "regressed", c["benchmarks"]
    assert [n for n, v in verdicts.items() if v == "regressed"] == ["test_work"]
    join = next(b for b in c["benchmarks"] if b["name"] == "test_join[400]")
    assert join["samples"]["head"][0]["quality"].get("extra_info.n") == 400  # extra_info reaches the comparison
    assert any("benchmark(s) collected; the head's suite ran against each side's code" in say("en", n) for n in c["notes"])
    report = (root / "report.md").read_text()
    assert "test_work" in report and "reject" in report.splitlines()[0]


def test_validate_lists_each_benchmark_and_what_it_skipped_with_file_and_line(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": SPEC, **PYTEST_SUITE}])
    proc = run_cli(["validate"], root)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "pytest:tests/bench/: test_join[400] (fixture; n=400) at tests/bench/test_lib.py:18" in out
    assert "test_marker (marker) at tests/bench/test_lib.py:24" in out
    assert "skipped test_skipped at tests/bench/test_lib.py:33 — skipped: not today" in out
    assert "1 other test(s) use neither the benchmark fixture nor the marker" in out


def test_suite_errors_are_clear_and_never_a_traceback(tmp_path):
    root = tmp_path / "repo"
    twice = """\
        import mylib


        def test_twice(benchmark):
            benchmark(mylib.join, 10)
            benchmark(mylib.join, 20)
        """
    make_repo(root, [{"mylib.py": LIB, "tests/bench/test_twice.py": twice,
                      "tests/broken/test_broken.py": "import nosuchmodule_xyz\n"}])
    missing = run_cli(["validate", "--suite", "pytest:tests/nothing/"], root)
    assert missing.returncode == 2 and "tests/nothing/: no such file or directory" in missing.stderr
    assert "Traceback" not in missing.stderr
    broken = run_cli(["validate", "--suite", "pytest:tests/broken/"], root)
    assert broken.returncode == 2 and "nosuchmodule_xyz" in broken.stderr and "Traceback (most" not in broken.stderr
    bad_kind = run_cli(["validate", "--suite", "nose:tests/"], root)
    assert bad_kind.returncode == 2 and "expected KIND:PATH" in bad_kind.stderr
    run = run_cli(["run", "--suite", "pytest:tests/bench/", "--rounds", "1", "--out", "r.json"], root)
    assert run.returncode == 3, run.stderr
    entry = json.loads((root / "r.json").read_text())["benchmarks"]["test_twice"]
    assert entry["status"] == "failed" and "calls the benchmark fixture 2 times — expected once" in entry["error"]


@pytest.mark.slow
def test_a_suite_only_in_head_is_measured_on_both_sides(tmp_path):
    root = tmp_path / "repo"
    new_fn = """\
        import mylib


        def test_cube(benchmark):
            benchmark(mylib.cube_sum, 200)
        """
    # no verdict is asserted here, only that each side was measured: one round of 20 ms a side does that
    spec = SPEC.replace("rounds: 10, max_rounds: 10, round_ms: 100", "rounds: 1, max_rounds: 1, round_ms: 20")
    assert spec != SPEC
    head = {"profopt.yml": spec, **PYTEST_SUITE, "tests/bench/test_new.py": new_fn,
            "mylib.py": LIB + "\n\ndef cube_sum(n):\n    return sum(i ** 3 for i in range(n))\n"}
    make_repo(root, [{"mylib.py": LIB}, head])
    _, c = _compare(root)
    compared = {b["name"] for b in c["benchmarks"]}
    assert {"test_work", "test_pedantic", "test_join[100]", "test_join[400]", "test_marker"} <= compared
    assert all(b["samples"]["base"] and b["samples"]["head"] for b in c["benchmarks"])
    new = {n["name"]: n for n in c["new_in_pr"]}
    assert set(new) == {"test_cube"}  # the base's mylib has no cube_sum: new in this PR, with why
    assert "the base cannot run it" in new["test_cube"]["cause"] and "cube_sum" in new["test_cube"]["cause"]
    assert new["test_cube"]["head"]["step_time_ms"] > 0
    assert any(say("en", n).startswith("base has no profopt.yml (this pull request adds it): the head's suites ran")
               for n in c["notes"])
    report = (root / "report.md").read_text()
    assert "New in this PR (1)" in report and "| test\\_cube |" in report  # the name is Markdown-escaped
    html = render(c, "html")  # the HTML report has the same table
    assert "New in this PR (1)" in html and "<tr><td>test_cube</td>" in html
    assert "cube_sum" in html.split("<td>test_cube</td>", 1)[1].split("</tr>", 1)[0]  # with its cause


ASV_SUITE = {
    "benchmarks/__init__.py": "",
    "benchmarks/bench_lib.py": """\
        import mylib


        def time_work():
            mylib.work(3000)


        def peakmem_work():
            mylib.work(3000)


        def track_length():
            return len(mylib.join(50))


        track_length.unit = "chars"


        class Sizes:
            params = ([100, 400], ["join", "sum"])
            param_names = ["n", "how"]
            number = 7  # asv's own loop count: ignored, said so by validate

            def setup_cache(self):
                return {"offset": 1}

            def setup(self, cache, n, how):
                self.values = list(range(n + cache["offset"] - 1))

            def time_work(self, cache, n, how):
                mylib.work(len(self.values) * 5)

            def time_other(self, cache, n, how):
                mylib.join(len(self.values)) if how == "join" else mylib.square_sum(len(self.values))
        """,
}


@pytest.mark.slow
def test_asv_suite_one_benchmark_per_param_and_the_slowed_time_ones_regress(tmp_path):
    root = tmp_path / "repo"
    top = "version: 1\nhardware_label: test-cpu\n" + SETTINGS
    listing = top + "suites:\n  - {asv: benchmarks}\n"
    # the compare: the slice n=400 of the 2 × 2 cross product (both methods, both hows) and the plain
    # time_ at the rounds a verdict needs; peakmem_ / track_, whose verdicts are not asserted, at two
    spec = top + ("suites:\n"
                  "  - {asv: benchmarks, select: '^bench_lib[.](time_work$|Sizes[.]time_[a-z]+[(]400, )'}\n"
                  "  - {asv: benchmarks, select: '^bench_lib[.](peakmem|track)_', rounds: 2, max_rounds: 2}\n")
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": spec, "listing.yml": listing, **ASV_SUITE},
                     {"mylib.py": SLOW_LIB}])
    listed = run_cli(["validate", "--spec", "listing.yml"], root)
    assert listed.returncode == 0, listed.stderr
    assert "bench_lib.Sizes.time_work(100, 'join') (time; n=100, how='join')" in listed.stdout
    assert "ignored asv attributes: number" in listed.stdout
    names = {line.split(": ", 1)[1].split(" (", 1)[0] for line in listed.stdout.splitlines()
             if line.startswith("asv:benchmarks: ")}
    sizes = {f"bench_lib.Sizes.{m}({n}, '{how}')" for m in ("time_work", "time_other") for n in (100, 400)
             for how in ("join", "sum")}  # 2 methods × the 2 × 2 cross product
    assert names == {"bench_lib.time_work", "bench_lib.peakmem_work", "bench_lib.track_length", *sizes}
    _, c = _compare(root)
    by = {b["name"]: b for b in c["benchmarks"]}
    assert set(by) == {"bench_lib.time_work", "bench_lib.peakmem_work", "bench_lib.track_length",
                       *(n for n in sizes if "(400, " in n)}  # what the items' select keeps
    regressed = sorted(n for n, b in by.items() if (b["metrics"].get("step_time_ms") or {}).get("verdict") == "regressed")
    want = sorted(["bench_lib.time_work", *(n for n in by if n.startswith("bench_lib.Sizes.time_work("))])
    assert len(want) == 3 and regressed == want, {n: b["metrics"].get("step_time_ms", {}).get("verdict")
                                                  for n, b in by.items()}
    peak = by["bench_lib.peakmem_work"]
    assert set(peak["metrics"]) == {"peak_memory_mb"}  # judged on memory, not on its (slowed) time
    track = by["bench_lib.track_length"]
    assert track["unit"] == "chars" and track["metrics"] == {}
    (con,) = track["constraints"]
    assert con["metric"] == "track" and con["ok"] and track["decision"] == "no-change"
    assert track["quality"]["base"]["values"]["track"][0] == track["quality"]["head"]["values"]["track"][0] == 139


PYPERF_SCRIPT = """\
import pyperf

import mylib


def time_func(loops):
    t0 = pyperf.perf_counter()
    for _ in range(loops):
        mylib.square_sum(200)
    return pyperf.perf_counter() - t0


runner = pyperf.Runner()
runner.bench_func("work", mylib.work, 3000)
runner.bench_time_func("square_sum", time_func)
runner.timeit("join", stmt="mylib.join(n)", setup="import mylib; n = 100")
"""


@pytest.mark.slow
def test_pyperf_script_benchmarks_run_under_profopt_pairing(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"mylib.py": LIB, "bench_perf.py": PYPERF_SCRIPT}])
    listed = run_cli(["validate", "--suite", "pyperf:bench_perf.py"], root)
    assert listed.returncode == 0, listed.stderr
    assert "pyperf:bench_perf.py: join (timeit) at bench_perf.py:16" in listed.stdout
    proc = run_cli(["run", "--suite", "pyperf:bench_perf.py", "--rounds", "1", "--out", "r.json"], root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    benches = json.loads((root / "r.json").read_text())["benchmarks"]
    assert set(benches) == {"work", "square_sum", "join"}
    assert all(b["status"] == "ok" and b["samples"] for b in benches.values())
    # pyperf's own worker processes never ran: the script's Runner recorded, profopt measured
    assert benches["work"]["summary"]["step_time_ms"] > benches["join"]["summary"]["step_time_ms"]


def test_a_checkout_that_shadows_pytests_own_pluggy_is_told_so(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"pluggy/__init__.py": "VERSION = 'the checkout'\n", **PYTEST_SUITE, "mylib.py": LIB}])
    proc = run_cli(["validate", "--suite", "pytest:tests/bench/"], root)
    assert proc.returncode == 2
    assert "pytest cannot be imported here" in proc.stderr and "pluggy" in proc.stderr
    assert "shadows what pytest imports" in proc.stderr


def test_pedantic_setup_is_not_timed():
    calls = []

    class Prepared:  # the harness protocol harness/pytest_suite.py's pedantic(setup=…) step speaks
        def profopt_untimed(self):
            time.sleep(0.003)  # setup, 3 ms: must not be in the values
            return (lambda: calls.append(1)), None

        def __call__(self):
            raise AssertionError("the timed path must use profopt_untimed")

    m = harness.measure(Prepared(), warmup=1, values=3, min_time_ms=10)
    assert max(m.values_ms) < 1.0 and calls  # µs per call, not the 3 ms of setup
