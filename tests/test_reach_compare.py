"""`measure: changed` end to end (issue 37's checks): a library of three modules and a data file,
six callables and a pytest-benchmark suite of two (tests/reachkit.py), five real PRs, each a real
compare at the spec's defaults; what builds the environment; the spec's own definitions; kept
records; `--measure all`; a torch step."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import reachkit
from conftest import git, make_repo, run_cli

ALL = {"crunch", "scaled", "dyn-square", "dyn-cube", "words", "text", "test_crunch_bench", "test_tokens_bench"}


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reach") / "repo"
    reachkit.library(root)
    (root / ".gitignore").write_text("*.json\n*.md\n!README.md\n.profopt/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore outputs")
    for name in reachkit.PRS:
        reachkit.pull_request(root, name)
    git(root, "checkout", "-q", "main")
    return root


def compare(root: Path, head: str, *extra: str, cache: Path | None = None) -> tuple[int, dict, str]:
    env = {"PROFOPT_CACHE_DIR": str(cache or root.parent / "cache")}
    proc = run_cli(["compare", "--base", "main", "--head", head, "--fail-on", "regression", "--out", f"{head}.json",
                    "--report", f"{head}.md", *extra], root, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads((root / f"{head}.json").read_text()), proc.stderr


def by_name(c: dict) -> dict[str, dict]:
    return {b["name"]: b for b in c["benchmarks"]}


def measured(c: dict) -> set[str]:
    return {b["name"] for b in c["benchmarks"] if b["reach"]["measured"]}


@pytest.mark.slow
def test_docs_comments_docstrings_and_unit_tests_only_measure_nothing(library):
    rc, c, err = compare(library, "docs")
    assert rc == 0 and c["decision"] == "no-change"
    assert measured(c) == set() and {b["name"] for b in c["benchmarks"]} == ALL  # every benchmark is there
    assert c["summary"] == "this change reaches no benchmark's code (8 not measured)"
    assert c["counts"]["not_measured"] == 8 and c["reach"]["mode"] == "changed"
    assert all(b["rounds"] == 0 and b["decision"] == "no-change" for b in c["benchmarks"])
    words = by_name(c)["words"]["reach"]["why"]
    assert words["id"] == "reach.unchanged_read" and words["args"]["read"] == 1  # the data file it reads
    assert "profopt: reach: 0 of 8 benchmark(s) measured, 8 not" in err  # said at once
    report = (library / "docs.md").read_text()
    assert report.startswith("➖ no-change — this change reaches no benchmark's code (8 not measured)")
    assert "Not measured (8): the change reaches none of their code" in report and "| words |" in report
    zh = run_cli(["report", "docs.json", "--lang", "zh"], library)
    assert "未测量（8）" in zh.stdout and "本次改动没有触及任何基准的代码" in zh.stdout


@pytest.mark.slow
def test_a_helper_three_times_slower_measures_and_regresses_exactly_the_two_that_call_it(library):
    rc, c, _ = compare(library, "helper")
    assert rc == 1 and c["decision"] == "reject"
    assert measured(c) == {"crunch", "test_crunch_bench"}
    for name in ("crunch", "test_crunch_bench"):
        b = by_name(c)[name]
        assert b["metrics"]["step_time_ms"]["verdict"] == "regressed", b["metrics"]["step_time_ms"]
        assert b["reach"]["changed"] == ["lib/maths.py:slow_helper"]
    assert c["counts"]["not_measured"] == 6 and c["policy"]["failing"] == ["crunch", "test_crunch_bench"]
    report = (library / "helper.md").read_text()
    assert "Why measured: the change reaches 1 of its code units or files: lib/maths.py:slow\\_helper" in report


@pytest.mark.slow
def test_a_module_constant_measures_every_benchmark_that_imported_it_and_regresses_the_one_that_reads_it(library):
    rc, c, _ = compare(library, "constant")
    assert rc == 1
    b = by_name(c)
    assert b["scaled"]["metrics"]["step_time_ms"]["verdict"] == "regressed"
    assert b["scaled"]["reach"]["changed"] == ["lib/maths.py:<module>"]
    # a module-level statement reaches every process that imported the module (here all of them:
    # bench_lib and the suite both import lib.maths), and regresses only the one that reads it
    assert measured(c) == ALL and all(b[n]["reach"]["changed"] == ["lib/maths.py:<module>"] for n in ALL)
    assert all(b[n]["metrics"]["step_time_ms"]["verdict"] != "regressed" for n in measured(c) - {"scaled"})


@pytest.mark.slow
def test_a_function_reached_only_through_globals_is_measured_and_regressed_and_no_other(library):
    rc, c, _ = compare(library, "dispatch")
    assert rc == 1 and measured(c) == {"dyn-square"}
    b = by_name(c)["dyn-square"]
    assert b["metrics"]["step_time_ms"]["verdict"] == "regressed"
    assert b["reach"]["changed"] == ["lib/dispatch.py:_op_square"]


@pytest.mark.slow
def test_a_data_file_one_factory_reads_made_longer_measures_and_regresses_that_one_only(library):
    rc, c, _ = compare(library, "data")
    assert rc == 1 and measured(c) == {"words"}
    b = by_name(c)["words"]
    assert b["metrics"]["step_time_ms"]["verdict"] == "regressed" and b["reach"]["changed"] == ["lib/data/words.txt"]


@pytest.mark.slow
def test_kept_records_are_reused_and_a_base_that_changes_what_one_holds_records_it_again(library, tmp_path):
    cache = tmp_path / "cache"
    _, first, _ = compare(library, "docs", cache=cache)
    assert first["reach"]["recorded"] == 8 and first["reach"]["reused"] == 0
    _, again, err = compare(library, "docs", cache=cache)
    assert again["reach"]["recorded"] == 0 and again["reach"]["reused"] == 8
    assert "nothing checked out" in err and "suites [base]" not in err  # decided from the kept records alone
    assert [b["reach"] for b in again["benchmarks"]] == [b["reach"] for b in first["benchmarks"]]
    # a new base whose dispatch module changed: the records that hold it are made again, the rest kept
    clone = tmp_path / "clone"
    shutil.copytree(library, clone)
    git(clone, "checkout", "-q", "main")
    (clone / "lib" / "dispatch.py").write_text((clone / "lib" / "dispatch.py").read_text() + "\n\nEXTRA = 1\n")
    git(clone, "commit", "-q", "-am", "main moves on")
    git(clone, "checkout", "-q", "-B", "docs2", "main")
    (clone / "README.md").write_text("# lib\n\nagain\n")
    git(clone, "commit", "-q", "-am", "docs")
    _, moved, err = compare(clone, "docs2", cache=cache)
    assert "nothing checked out" not in err  # a record no longer holds: the base is checked out and recorded
    # bench_lib imports dispatch for every callable: those six are recorded again; the suite's two kept
    assert moved["reach"]["recorded"] == 6 and moved["reach"]["reused"] == 2 and measured(moved) == set()


def test_the_environment_the_spec_and_measure_all(tmp_path):
    """What builds the environment reaches every benchmark; a benchmark whose definition changed is
    measured; `measure: all` measures everything; none of it is a record's doing."""
    root = tmp_path / "repo"
    spec = ("version: 1\nhardware_label: t\nsetup: \"true\"\n"
            "defaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, quality_steps: 1, profile: \"off\"}\n"
            "benchmarks:\n  - {name: a, callable: \"w:make\", params: {n: 10}}\n"
            "  - {name: b, callable: \"w:make\", params: {n: 20}}\n")
    make_repo(root, [{"w.py": "def make(n):\n    return lambda: sum(range(n))\n", "native/fast.c": "int f(void);\n",
                      "requirements.txt": "# none\n", "profopt.yml": spec}])
    cache = {"PROFOPT_CACHE_DIR": str(tmp_path / "cache")}

    def pr(name: str, files: dict[str, str]) -> dict:
        git(root, "checkout", "-q", "-B", name, "main")
        for rel, text in files.items():
            (root / rel).write_text(text)
        git(root, "commit", "-q", "-am", name)
        proc = run_cli(["compare", "--base", "main", "--out", f"{name}.json"], root, env=cache)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return {b["name"]: b["reach"] for b in json.loads((root / f"{name}.json").read_text())["benchmarks"]}

    native = pr("native", {"native/fast.c": "int f(void) { return 1; }\n"})
    assert all(r["measured"] and r["why"]["id"] == "reach.env" for r in native.values())
    assert native["a"]["changed"] == ["native/fast.c"]
    reqs = pr("reqs", {"requirements.txt": "# still none\n"})
    assert all(r["why"]["id"] == "reach.env" and r["changed"] == ["requirements.txt"] for r in reqs.values())
    params = pr("params", {"profopt.yml": spec.replace("{n: 20}", "{n: 30}")})
    assert params["b"]["measured"] and params["b"]["why"] == {
        "id": "reach.spec", "args": {"spec": "profopt.yml", "keys": ["params"]},
        "text": "its definition in profopt.yml changed: params"}
    assert not params["a"]["measured"]
    every = pr("every", {"profopt.yml": spec.replace("profile: \"off\"}", "profile: \"off\", measure: all}")})
    assert all(r["measured"] and r["why"]["id"] == "reach.all" for r in every.values())


@pytest.mark.slow
def test_a_comment_in_a_torch_training_step_is_no_change_with_nothing_measured(tmp_path):
    pytest.importorskip("torch")
    examples = Path(__file__).resolve().parent.parent / "examples" / "torch_train"
    root = tmp_path / "repo"
    make_repo(root, [{"profopt.yml": (examples / "profopt.yml").read_text(), "train.py": (examples / "train.py").read_text()},
                     {"train.py": "# the model is a small MLP\n" + (examples / "train.py").read_text()}])
    proc = run_cli(["compare", "--base", "HEAD~1"], root, env={"PROFOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    (b,) = c["benchmarks"]
    assert c["decision"] == "no-change" and b["reach"]["measured"] is False and b["rounds"] == 0
    assert b["reach"]["why"]["id"] == "reach.unchanged" and b["reach"]["why"]["args"]["files"] == 1


@pytest.mark.slow
def test_profiles_are_taken_where_the_figures_changed_and_the_quality_pass_where_a_constraint_reads_it(tmp_path):
    root = tmp_path / "repo"
    step = ("import profopt_ci\n\n\ndef make(n):\n    def step():\n        profopt_ci.record(total=sum(range(n)))\n"
            "    return step\n")
    spec = ("version: 1\nhardware_label: t\ndefaults: {rounds: 10, max_rounds: 10, round_ms: 60, threshold: 10%, "
            "quality_steps: 3, profile: cprofile}\nbenchmarks:\n"
            "  - {name: slowed, callable: \"a:make\", params: {n: 4000}}\n"
            "  - {name: held, callable: \"b:make\", params: {n: 4000}, constraints: [{metric: total, equal: true}]}\n")
    make_repo(root, [{"a.py": step, "b.py": step, "profopt.yml": spec},
                     {"a.py": step.replace("sum(range(n))", "sum(range(3 * n)) // 3"),
                      "b.py": "# the same step\n" + step}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--measure", "all", "--fail-on", "none"], root,
                   env={"PROFOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    c = by_name(json.loads((root / ".profopt" / "comparison.json").read_text()))
    assert c["slowed"]["metrics"]["step_time_ms"]["verdict"] == "regressed"
    assert c["slowed"]["profile"]["head"]["kind"] == "cprofile" and c["slowed"]["bottleneck"]["rule"] != "skipped"
    held = c["held"]
    assert held["metrics"]["step_time_ms"]["verdict"] == "unchanged", held["metrics"]["step_time_ms"]
    assert held["profile"]["head"]["skipped"] == "unchanged" and held["bottleneck"]["rule"] == "skipped"
    assert held["constraints"][0]["ok"] and held["quality"]["head"]["steps"] == 3  # its constraint still read
    assert "held [head]: quality pass (3 steps)\n" in proc.stderr and "slowed [head]: profile" in proc.stderr
    assert "not profiled" in (root / ".profopt" / "report.md").read_text()


@pytest.mark.slow
def test_a_nightly_keeps_the_records_a_pr_based_on_it_is_decided_with(library, tmp_path):
    cache = {"PROFOPT_CACHE_DIR": str(tmp_path / "cache")}
    clone = tmp_path / "clone"
    shutil.copytree(library, clone)
    git(clone, "checkout", "-q", "main")
    proc = run_cli(["baseline", "refresh", "--store", f"dir:{tmp_path / 'store'}", "--rounds", "2"], clone, env=cache)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "profopt: reach: 8 benchmark record(s) made, 0 kept" in proc.stderr
    _, c, err = compare(clone, "docs", "--store", f"dir:{tmp_path / 'store'}", cache=tmp_path / "cache")
    assert "nothing checked out" in err and measured(c) == set() and c["reach"]["reused"] == 8
    # each benchmark not measured, with its step time in the nightly beside it
    nightly = by_name(c)["crunch"]["reach"]
    assert nightly["nightly_ms"] > 0 and git(clone, "rev-parse", "main").startswith(nightly["nightly_commit"])
    report = (clone / "docs.md").read_text()
    assert "| benchmark | step time, newest nightly | why |" in report and f"({nightly['nightly_commit'][:7]})" in report
