"""`profopt compare` / `profopt diff` on throwaway git repositories of real commits.

Policy and summary logic run on literal step times here too (milliseconds); the look-by-look loop
is tests/test_sequential.py. Each real compare below is the end-to-end of a behaviour.
"""
from __future__ import annotations

import copy
import json
import subprocess

import pytest
from conftest import CPU_STEP, git, make_repo, run_cli

from profopt_ci.analyze.decide import multiplicity_corrected, policy_failures, summary_sentence
from profopt_ci.analyze.judge import build_entry, finish
from profopt_ci.analyze.look_schedule import plan_looks
from profopt_ci.documents.types_comparison import Metric
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.plan import make_plan, overrides
from profopt_ci.words.i18n import say

BUSY = CPU_STEP

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {{warmup: 1, min_time_ms: 20, values: 3, value_ms: 1, round_ms: 100, rounds: {rounds}, max_rounds: {max_rounds}, seed: 7, profile: "off"}}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {{us: 2000}}
    items_per_iteration: 10
    constraints:
      - {{metric: loss, rel_tol: 0.01}}
      - {{metric: output_digest, equal: true}}
"""


def repo_with(tmp_path, head_work: str | None = None, head_spec: str | None = None, rounds: int = 12,
              max_rounds: int | None = None):
    spec = SPEC.format(rounds=rounds, max_rounds=max_rounds or rounds)
    base = {"bench/__init__.py": "", "bench/work.py": BUSY, "profopt.yml": spec}
    head = {}
    if head_work is not None:
        head["bench/work.py"] = head_work
    if head_spec is not None:
        head["profopt.yml"] = head_spec
    commits = [base, head] if head else [base, {"README": "docs only\n"}]
    root = tmp_path / "repo"
    shas = make_repo(root, commits)
    return root, shas


def worktrees(root) -> list[str]:
    return [ln for ln in git(root, "worktree", "list", "--porcelain").splitlines() if ln.startswith("worktree ")]


def load(root, name=".profopt/comparison.json"):
    return json.loads((root / name).read_text())


def test_head_doing_30_percent_more_work_is_regressed_and_rejected(tmp_path):
    # max_rounds above rounds: on a noisy machine compare extends an inconclusive result look by look
    root, shas = repo_with(tmp_path, head_work=BUSY.replace("int(us * 20)", "int(us * 26)"), max_rounds=36)
    proc = run_cli(["compare", "--base", "HEAD~1", "--report", "report.md"], root)
    assert proc.returncode == 1, proc.stderr
    c = load(root)
    assert c["schema"] == "profopt/comparison@1" and c["mode"] == "paired"
    assert c["base"]["commit"] == shas[0] and c["head"]["commit"] == shas[1]
    b = c["benchmarks"][0]
    st = b["metrics"]["step_time_ms"]
    assert st["verdict"] == "regressed" and 10 < st["delta_pct"] < 70  # 30% more work; loose for noisy VMs
    assert st["ci_low_pct"] > 0 and st["p_value"] < 0.01
    assert b["metrics"]["throughput"]["verdict"] == "regressed"
    assert b["decision"] == "reject" and c["decision"] == "reject"
    assert c["policy"]["failing"] == ["busy"]
    n = len(b["samples"]["base"])
    assert n in plan_looks(12, 36) and len(b["samples"]["head"]) == n == b["rounds"]
    # RMIT: both orders occur, and each round holds one base and one head sample
    orders = {(s["round"], s["order"]) for s in b["samples"]["head"]}
    assert {o for _, o in orders} == {0, 1}
    assert isinstance(c["seed"], int)
    assert worktrees(root) == [f"worktree {root}"]
    assert (root / "report.md").read_text().strip()


def _literal_entries(tmp_path, head_ms: list[float], base_ms: list[float] | None = None) -> list[dict]:
    """Entries of the SPEC's benchmark from literal step times (quality values equal on both sides)."""
    plan = make_plan(parse_spec(SPEC.format(rounds=12, max_rounds=12), str(tmp_path / "profopt.yml"),
                                path=tmp_path / "profopt.yml"), overrides(environ={}))
    base_ms = base_ms or [10.0 + r / 100 for r in range(len(head_ms))]

    def side(ms: list[float]) -> dict:
        return {"status": "ok", "error": None, "samples": [
            {"round": r, "step_time_ms": v, "quality": {"loss": 1.0, "output_digest": "same"}} for r, v in enumerate(ms)]}

    bench = plan.judged("busy")
    return finish([build_entry(bench, side(base_ms), side(head_ms), paired=True)], {"busy": bench})


def test_fail_on_decides_which_verdicts_fail_the_build(tmp_path):
    # 12 paired rounds, head 30% slower in each (no ties): regressed, constraints kept
    entries = _literal_entries(tmp_path, [(10.0 + r / 100) * (1.3 + r / 1000) for r in range(12)])
    assert entries[0]["metrics"]["step_time_ms"]["verdict"] == "regressed" and entries[0]["decision"] == "reject"
    assert all(c["ok"] for c in entries[0]["constraints"])
    assert policy_failures(entries, "regression") == ["busy"]
    assert policy_failures(entries, "constraint") == [] and policy_failures(entries, "none") == []


def test_two_rounds_do_not_crash_the_summary(tmp_path):
    entries = _literal_entries(tmp_path, [10.5, 10.2], base_ms=[10.0, 10.1])
    assert entries[0]["decision"] == "inconclusive"
    assert "busy" in summary_sentence(entries)


def test_identical_code_is_never_regressed(tmp_path):
    root, shas = repo_with(tmp_path, rounds=10)
    proc = run_cli(["compare", "--base", "HEAD~1", "--measure", "all"], root)
    assert proc.returncode == 0, proc.stderr
    b = load(root)["benchmarks"][0]
    assert b["metrics"]["step_time_ms"]["verdict"] != "regressed"
    assert b["decision"] in ("no-change", "inconclusive")
    assert all(c["ok"] for c in b["constraints"])


def test_broken_constraints_reject_whatever_the_speed_and_fail_on_constraint(tmp_path):
    # faster, but the loss moved 5% (tolerance 1%) and the output digest changed
    faster_but_wrong = (BUSY.replace("int(us * 20)", "int(us * 14)").replace("loss=loss", "loss=loss * 1.05")
                        .replace('output_digest="same"', 'output_digest="other"'))
    root, _ = repo_with(tmp_path, head_work=faster_but_wrong, rounds=6)
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "constraint"], root)
    assert proc.returncode == 1
    b = load(root)["benchmarks"][0]
    loss = next(c for c in b["constraints"] if c["metric"] == "loss")
    assert loss["ok"] is False and loss["base"] == 1.0 and loss["head"] == pytest.approx(1.05)
    digest = next(c for c in b["constraints"] if c["metric"] == "output_digest")
    assert digest["ok"] is False and "differs" in digest["detail"]
    assert b["decision"] == "reject" and "constraint broken" in b["reason"]


def test_head_whose_factory_raises_fails_exit_3_and_keeps_base(tmp_path):
    broken = BUSY.replace("    n = int(us * 20)", "    raise ValueError('head is broken')")
    root, _ = repo_with(tmp_path, head_work=broken, rounds=6)
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 3, proc.stderr
    c = load(root)
    b = c["benchmarks"][0]
    assert c["decision"] == "failed" and b["decision"] == "failed"
    assert b["error"]["side"] == "head" and "head is broken" in b["error"]["message"]
    assert b["status"] == {"base": "ok", "head": "failed"}
    assert len(b["samples"]["base"]) >= 1  # what base measured is kept
    assert worktrees(root) == [f"worktree {root}"]


def test_setup_failure_on_one_side(tmp_path):
    spec = "setup: 'test -f ok-marker || { echo no marker >&2; exit 5; }'\n" + SPEC.format(rounds=6, max_rounds=6)
    root, _ = repo_with(tmp_path, head_spec=spec)
    # head's own spec has a setup that fails (no marker in the tree); base has none
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 3
    b = load(root)["benchmarks"][0]
    assert b["error"]["side"] == "head" and "setup failed on head" in b["error"]["message"]
    assert "no marker" in b["error"]["message"]
    assert len(b["samples"]["base"]) == 6


@pytest.mark.slow
def test_params_changed_in_head_spec_are_reported(tmp_path):
    root, _ = repo_with(tmp_path, head_spec=SPEC.format(rounds=12, max_rounds=36).replace("us: 2000", "us: 1000"),
                        max_rounds=36)
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 0, proc.stderr
    c = load(root)
    assert {"scope": "params", "benchmark": "busy", "key": "us", "base": 2000, "head": 1000} in c["differences"]
    assert any("not only the code differs" in say("en", n) for n in c["notes"])
    assert c["benchmarks"][0]["metrics"]["step_time_ms"]["verdict"] == "improved"


def test_default_base_is_the_merge_base_with_main(tmp_path):
    root, shas = repo_with(tmp_path, rounds=6)
    git(root, "checkout", "-q", "-b", "feature")
    (root / "bench/extra.py").write_text("X = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "feature work")
    git(root, "checkout", "-q", "main")
    (root / "bench/other.py").write_text("Y = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "main moves on")
    git(root, "checkout", "-q", "feature")
    proc = run_cli(["compare", "--rounds", "2"], root)
    assert proc.returncode == 0, proc.stderr
    c = load(root)
    assert c["base"]["commit"] == shas[1] and c["base"]["ref"] == "merge-base of main"


def test_shallow_clone_says_what_to_fetch(tmp_path):
    origin, _ = repo_with(tmp_path, rounds=6)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)], check=True)
    proc = run_cli(["compare", "--base", "HEAD~1"], clone)
    assert proc.returncode == 2
    assert "shallow" in proc.stderr and "fetch-depth: 0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_ref_is_a_usage_error(tmp_path):
    root, _ = repo_with(tmp_path, rounds=6)
    proc = run_cli(["compare", "--base", "no-such-branch"], root)
    assert proc.returncode == 2 and "cannot resolve `no-such-branch`" in proc.stderr


def test_not_a_git_repository(tmp_path):
    (tmp_path / "profopt.yml").write_text(SPEC.format(rounds=6, max_rounds=6))
    proc = run_cli(["compare"], tmp_path)
    assert proc.returncode == 2 and "not inside a git repository" in proc.stderr


@pytest.mark.slow
def test_setup_installs_each_side_into_its_own_venv(tmp_path):
    """base never imports head's code: the package is only importable through `setup`'s install.
    The venv has nothing of profopt's but its worker, so the build backend comes from the setup too
    (profopt's own setuptools, packed back into a wheel: offline)."""
    from importlib.metadata import version

    import wheels

    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    wheels.installed_wheel("setuptools", wheelhouse)
    pkg = {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                          '[project]\nname = "mypkg"\nversion = "0"\n[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "src/mypkg/__init__.py": "VALUE = 1\n",
        "bench/__init__.py": "",
        "bench/work.py": BUSY.replace("profopt_ci.record(loss=loss", "import mypkg; profopt_ci.record(value=mypkg.VALUE, loss=loss"),
        "profopt.yml": (f"setup:\n  - pip install -q --no-index --find-links {wheelhouse} setuptools=={version('setuptools')}\n"
                        "  - pip install -q --no-build-isolation --no-deps --no-index -e .\n")
                       + SPEC.format(rounds=3, max_rounds=3),
    }
    root = tmp_path / "repo"
    make_repo(root, [pkg, {"src/mypkg/__init__.py": "VALUE = 2\n"}])
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "none"], root)
    assert proc.returncode == 0, proc.stderr
    b = load(root)["benchmarks"][0]
    assert {s["quality"]["value"] for s in b["samples"]["base"]} == {1}
    assert {s["quality"]["value"] for s in b["samples"]["head"]} == {2}
    assert worktrees(root) == [f"worktree {root}"]


@pytest.mark.slow
def test_setup_then_measure_phases_share_a_workdir(tmp_path):
    root, _ = repo_with(tmp_path, head_work=BUSY.replace("int(us * 20)", "int(us * 40)"))
    work = tmp_path / "work"
    first = run_cli(["compare", "--base", "HEAD~1", "--phase", "setup", "--workdir", str(work)], root)
    assert first.returncode == 0, first.stderr
    assert not (root / ".profopt" / "comparison.json").exists()
    second = run_cli(["compare", "--phase", "measure", "--workdir", str(work)], root)
    assert second.returncode == 1, second.stderr
    assert load(root)["benchmarks"][0]["metrics"]["step_time_ms"]["verdict"] == "regressed"
    empty = run_cli(["compare", "--phase", "measure", "--workdir", str(tmp_path / "nothing")], root)
    assert empty.returncode == 2 and "--phase setup" in empty.stderr


@pytest.mark.slow
def test_diff_of_two_results_is_unpaired_and_says_so(tmp_path):
    # twice the work: unpaired runs far apart in time need a large effect to stand out of the drift
    root, _ = repo_with(tmp_path, head_work=BUSY.replace("int(us * 20)", "int(us * 40)"))
    assert run_cli(["run", "--rounds", "10", "--out", "../head.json"], root).returncode == 0
    git(root, "checkout", "-q", "HEAD~1")
    assert run_cli(["run", "--rounds", "10", "--out", "../base.json"], root).returncode == 0
    proc = run_cli(["diff", "../base.json", "../head.json", "--out", "../diff.json"], root)
    assert proc.returncode == 1, proc.stderr
    c = json.loads((tmp_path / "diff.json").read_text())
    assert c["mode"] == "unpaired"
    assert any("pairing was impossible" in say("en", n) for n in c["notes"])
    st = c["benchmarks"][0]["metrics"]["step_time_ms"]
    assert st["paired"] is False and st["verdict"] == "regressed"
    bad = run_cli(["diff", "../base.json", "../nope.json"], root)
    assert bad.returncode == 2 and "no such file" in bad.stderr
    (tmp_path / "junk.json").write_text('{"schema": "other@9"}')
    wrong = run_cli(["diff", "../base.json", "../junk.json"], root)
    assert wrong.returncode == 2 and "expected 'profopt/results@1'" in wrong.stderr


def test_benchmark_new_in_head_is_measured_on_head_only_with_a_note(tmp_path):
    spec = SPEC.format(rounds=3, max_rounds=3) + "  - name: brand-new\n    callable: bench.work:make_step\n"
    root, _ = repo_with(tmp_path, head_spec=spec)
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 0, proc.stderr
    c = load(root)
    assert [b["name"] for b in c["benchmarks"]] == ["busy"]
    assert any("new in this PR: measured on head only" in say("en", n) and "brand-new" in say("en", n) for n in c["notes"])
    assert [(e["name"], e["status"], e["rounds"]) for e in c["new_in_pr"]] == [("brand-new", "ok", 3)]


def test_setup_failure_in_setup_phase_is_reported_by_measure(tmp_path):
    spec = "setup: 'echo cannot install >&2; exit 9'\n" + SPEC.format(rounds=3, max_rounds=3)
    root, _ = repo_with(tmp_path, head_spec=spec)
    work = tmp_path / "work"
    first = run_cli(["compare", "--base", "HEAD~1", "--phase", "setup", "--workdir", str(work)], root)
    assert first.returncode == 3 and "setup failed on head" in first.stderr
    second = run_cli(["compare", "--phase", "measure", "--workdir", str(work)], root)
    assert second.returncode == 3
    b = load(root)["benchmarks"][0]
    assert b["decision"] == "failed" and b["error"]["side"] == "head" and "cannot install" in b["error"]["message"]
    assert len(b["samples"]["base"]) == 3


def test_multiplicity_gives_new_entries_and_leaves_the_given_ones():
    def entry(name: str, verdict: str, p: float) -> dict:  # metrics as analyze.stats makes them
        speed = Metric(verdict=verdict, p_value=p, confidence=0.99, reason="as measured")
        return {"name": name, "metrics": {"step_time_ms": speed, "throughput": Metric(verdict=verdict)}}

    given = [entry("a", "regressed", 0.009), entry("b", "unchanged", 0.5), {"name": "c", "metrics": {}}]
    before = copy.deepcopy(given)
    got = multiplicity_corrected(given)
    assert given == before  # nothing of the input was edited
    # BH over .009 and .5 (m = 2): .018 and .5 — a regression at p .009 does not survive at 1%
    a = got[0]
    assert a["step_time_ms"]["p_adjusted"] == pytest.approx(0.018) and a["step_time_ms"]["p_holm"] == pytest.approx(0.018)
    assert a["step_time_ms"]["verdict"] == "inconclusive" and a["throughput"]["verdict"] == "inconclusive"
    assert "does not survive Benjamini–Hochberg across 2 benchmarks" in a["step_time_ms"]["reason"]
    assert got[1]["step_time_ms"]["verdict"] == "unchanged" and got[1]["step_time_ms"]["p_adjusted"] == 0.5
    assert got[2] == {}  # no speed metric: nothing to correct
