"""Lockstep pairing: the scheduler on literal values, the plan's overrides, and real compares.

The real compares run the CLI on throwaway repositories with short rounds (round_ms 150), so each
takes a few seconds; the scheduler and the plan are checked without processes.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CPU_STEP, make_repo, run_cli

from profopt_ci.measure import cpus, lockstep
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.plan import make_plan, overrides
from profopt_ci.words.i18n import say

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {{warmup: 1, value_ms: 1, round_ms: 150, rounds: {rounds}, max_rounds: {rounds}, seed: 3, profile: "off"}}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {{us: 500}}
    constraints:
      - {{metric: loss, rel_tol: 0.01}}
"""


def repo(tmp_path: Path, head_work: str | None = None, rounds: int = 8, spec: str | None = None):
    base = {"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": spec or SPEC.format(rounds=rounds)}
    head = {"bench/work.py": head_work} if head_work else {"README": "docs only\n"}
    root = tmp_path / "repo"
    return root, make_repo(root, [base, head])


def load(root: Path) -> dict:
    return json.loads((root / ".profopt" / "comparison.json").read_text())


# ---- the scheduler, on a fake clock ---------------------------------------------------------------


def test_a_round_draws_the_order_afresh_for_each_pair_and_keeps_each_sides_values(tmp_path):
    """A real round of two live workers: as many values a side as pairs, each side first in some
    pairs and second in the others (the order of each pair drawn from the round's seeded rng)."""
    (tmp_path / "pstep.py").write_text("def make_step():\n    return lambda: sum(range(2000))\n")
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: p, callable: 'pstep:make_step', round_ms: 60}\n",
                      str(tmp_path / "profopt.yml"))
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    envs = {s.name: child_env(spec, b, s) for s in sides}
    placement = cpus.Placement(pool=[0])
    placement.cpus = [0]
    out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, envs, sides, tmp_path, round_index=1,
                                                 rng=random.Random(1), placement=placement))
    base, head = out["base"], out["head"]
    assert base["pairs"] == head["pairs"] >= lockstep.MIN_PAIRS
    assert len(base["values_ms"]) == len(head["values_ms"]) == base["pairs"]
    assert base["first_share"] + head["first_share"] == pytest.approx(1.0)
    assert 0 < base["first_share"] < 1  # neither side always first
    assert {base["order"], head["order"]} == {0, 1}  # who went first in the round's first pair


def test_pair_count_fills_the_round_within_bounds():
    assert lockstep.pair_count(1000, {"base": 2_000_000, "head": 2_000_000}) == 250
    assert lockstep.pair_count(1000, {"base": 400_000_000, "head": 400_000_000}) == lockstep.MIN_PAIRS
    assert lockstep.pair_count(1000, {"base": 10, "head": 10}) == lockstep.MAX_PAIRS


def test_cpu_sets():
    assert cpus.parse_cpuset("0,2-3") == [0, 2, 3] and cpus.format_cpuset([3, 0, 2]) == "0,2-3"
    assert cpus.choose(None, 1, [0, 1, 2, 3]) == [3]
    assert cpus.choose(None, 2, [0, 1, 2, 3]) == [2, 3]
    assert cpus.choose(None, 8, [0, 1]) == [0, 1]
    assert cpus.choose("1", 4, [0, 1]) == [1]
    with pytest.raises(ValueError, match="not available"):
        cpus.choose("7", 1, [0, 1])
    assert cpus.threads_of({"OMP_NUM_THREADS": "2"}) == 2 and cpus.threads_of({}) == 1


# ---- the plan: overrides reach every stage -----------------------------------------------------


def _spec(text: str, tmp_path: Path):
    return parse_spec(text, str(tmp_path / "profopt.yml"), path=tmp_path / "profopt.yml")


def test_plan_applies_overrides_and_lockstep_defaults(tmp_path):
    spec = _spec("version: 1\nhardware_label: spec-label\nbenchmarks:\n  - {name: a, callable: m:f}\n", tmp_path)
    s = spec.benchmarks[0].settings
    assert (s.pairing, s.rounds, s.max_rounds) == ("lockstep", 12, 48)
    plan = make_plan(spec, overrides(threshold="50%", rounds=6, pairing="rounds", environ={}))
    s = plan.judged("a").settings
    assert (s.threshold, s.rounds, s.max_rounds, s.pairing) == (50.0, 6, 6, "rounds")
    assert make_plan(spec, overrides(pairing="rounds", environ={})).spec.benchmarks[0].settings.rounds == 20
    labelled = make_plan(spec, overrides(environ={"PROFOPT_HARDWARE_LABEL": "gpu-a100"}))
    assert labelled.hardware_label == "gpu-a100" and labelled.side_spec("head").hardware_label == "gpu-a100"


def test_plan_records_a_sides_own_settings_and_a_missing_spec(tmp_path):
    spec = _spec("version: 1\ndefaults: {threshold: 3%}\nbenchmarks:\n  - {name: a, callable: m:f, params: {n: 1}}\n",
                 tmp_path)
    own = _spec("version: 1\ndefaults: {threshold: 9%}\nbenchmarks:\n  - {name: a, callable: m:f, params: {n: 2}}\n",
                tmp_path)
    plan = make_plan(spec, overrides(environ={}))
    plan = plan.attach("base", own)
    plan = plan.attach("head", None, "its profopt.yml is invalid: profopt.yml:1:1: bad")
    assert plan.bench("base", "a").params == {"n": 2}  # what the code is: the side's own
    assert plan.bench("base", "a").settings.threshold == 3.0  # how to judge: the plan's
    assert any(d["scope"] == "settings" and d["key"] == "threshold" for d in plan.differences)
    assert any("head: its own spec was not used (its profopt.yml is invalid" in say("en", n) for n in plan.notes)


def test_bad_cpuset_is_a_usage_error(tmp_path):
    root, _ = repo(tmp_path)
    proc = run_cli(["compare", "--base", "HEAD~1", "--cpuset", "two"], root)
    assert proc.returncode == 2 and "--cpuset: expected CPU numbers" in proc.stderr


# ---- real compares ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_same_commit_warns_at_once_and_ends_unchanged(tmp_path):
    root, _ = repo(tmp_path, rounds=12)
    # τ 10%: the test VMs run several jobs on two vCPUs (per-round CV up to 4% then); the default
    # τ is measured by bench/verdict_accuracy.py, not asserted here
    proc = run_cli(["compare", "--base", "HEAD", "--head", "HEAD", "--threshold", "10%", "--rounds", "10",
                    "--max-rounds", "30", "--report", "report.md"], root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    warn = next(i for i, ln in enumerate(lines) if "A/A: this measures noise only" in ln)
    first_round = next(i for i, ln in enumerate(lines) if "look 1/" in ln)
    assert warn < first_round  # said before anything is measured
    c = load(root)
    b = c["benchmarks"][0]
    assert c["pairing"]["kind"] == "lockstep" and b["pairing"] == "lockstep"
    assert b["cpuset"] == c["pairing"]["cpuset"] == cpus.format_cpuset(cpus.available()[-1:])
    assert b["metrics"]["step_time_ms"]["verdict"] == "unchanged", b["metrics"]["step_time_ms"]["reason"]
    assert b["decision"] == "no-change"
    s = b["samples"]["base"][0]
    assert s["pairing"] == "lockstep" and s["pairs"] == len(s["values_ms"]) >= lockstep.MIN_PAIRS
    report = (root / "report.md").read_text()
    assert "A/A: this measures noise only" in report and "pairing lockstep" in report


@pytest.mark.slow
def test_thirty_percent_more_work_regresses_unless_the_threshold_says_otherwise(tmp_path):
    # 12 rounds: at τ 50% the CI must also clear +50% on a vCPU whose speed swings within a round
    root, _ = repo(tmp_path, head_work=CPU_STEP.replace("int(us * 20)", "int(us * 26)"), rounds=12)
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 1, proc.stderr
    b = load(root)["benchmarks"][0]
    st = b["metrics"]["step_time_ms"]
    assert st["verdict"] == "regressed" and 10 < st["delta_pct"] < 70 and b["decision"] == "reject"
    # 24 rounds: the CI must lie wholly inside ±50%, and a +30% step sits well within it only once the
    # interval is narrow on a vCPU whose speed swings within a round
    proc = run_cli(["compare", "--base", "HEAD~1", "--threshold", "50%", "--rounds", "24"], root)
    assert proc.returncode == 0, proc.stderr
    c = load(root)
    st = c["benchmarks"][0]["metrics"]["step_time_ms"]
    assert c["threshold_pct"] == 50.0 and st["verdict"] == "unchanged" and c["decision"] == "no-change"
    assert "±50%" in st["reason"]


HUNGRY_AND_DYING = CPU_STEP.replace('''    n = int(us * 20)
''', '''    n = int(us * 20)
    import os, sys
    hoard = bytearray(160 * 1024 * 1024)  # touched: resident in this process only
    for i in range(0, len(hoard), 4096):
        hoard[i] = 1
    seen = os.path.join(os.path.dirname(__file__), "rounds-seen")
    count = int(open(seen).read()) + 1 if os.path.exists(seen) else 1
    open(seen, "w").write(str(count))
    calls = [0]
''').replace('''    def step():
''', '''    def step():
        calls[0] += 1
        if count == 3 and calls[0] == 50:  # early in round 3, whatever the calibration
            print("head worker giving up in round 3", file=sys.stderr, flush=True)
            os._exit(7)
''')


def test_worker_dying_mid_round_fails_the_round_and_keeps_what_was_measured(tmp_path):
    root, _ = repo(tmp_path, head_work=HUNGRY_AND_DYING)
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 3, proc.stderr
    b = load(root)["benchmarks"][0]
    assert b["decision"] == "failed" and b["status"] == {"base": "ok", "head": "failed"}
    msg = b["error"]["message"]
    assert b["error"]["side"] == "head" and "round 3 failed" in msg and "exited 7 mid-round" in msg
    assert "head worker giving up in round 3" in msg  # the stderr tail
    base, head = b["samples"]["base"], b["samples"]["head"]
    assert [s["round"] for s in base] == [s["round"] for s in head] == [0, 1]
    # both workers lived at once, yet each side's peak is its own process's
    for sb, sh in zip(base, head, strict=True):
        assert sh["peak_memory_mb"] - sb["peak_memory_mb"] > 140 and sb["peak_memory_mb"] < 100


COMMAND_SPEC = """\
version: 1
defaults: {{warmup: 1, rounds: 8, max_rounds: 8, seed: 5, profile: "off"}}
benchmarks:
  - name: cmd
    command: [{python}, -c, "import work; work.main()"]
"""
WORK = "def main():\n    x = 0\n    for i in range({n}):\n        x += i\n    print('PROFOPT_METRIC answer=42')\n"


def test_command_benchmark_alternates_whole_processes(tmp_path):
    spec = COMMAND_SPEC.format(python=json.dumps(sys.executable))
    root = tmp_path / "repo"
    make_repo(root, [{"profopt.yml": spec, "work.py": WORK.format(n=600_000)}, {"work.py": WORK.format(n=1_500_000)}])
    proc = run_cli(["compare", "--base", "HEAD~1"], root)
    assert proc.returncode == 1, proc.stderr
    b = load(root)["benchmarks"][0]
    assert b["pairing"] == "lockstep" and b["metrics"]["step_time_ms"]["verdict"] == "regressed"
    for side in ("base", "head"):
        assert len(b["samples"][side]) == 8
        s = b["samples"][side][0]
        assert s["pairs"] == lockstep.COMMAND_PAIRS == len(s["values_ms"]) and s["quality"] == {"answer": 42.0}


@pytest.mark.parametrize("forked", [False, True])
def test_workers_die_with_the_parent(tmp_path, forked):
    """A killed profopt leaves no worker behind (PR_SET_PDEATHSIG in the worker's preexec; a forked
    worker dies with its zygote, which dies with profopt)."""
    (tmp_path / "slow.py").write_text("import time\ndef make_step():\n    return lambda: time.sleep(0.5)\n")
    driver = f"""
import random, sys
from pathlib import Path
from profopt_ci.measure import lockstep
from profopt_ci.measure.cpus import Placement
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.zygote import ZygotePool, ZygoteRecipe
from profopt_ci.specfile.load import parse_spec
spec = parse_spec("version: 1\\nbenchmarks:\\n  - {{name: s, callable: 'slow:make_step'}}\\n", "x.yml")
b = spec.benchmarks[0]
where = Path({str(tmp_path)!r})
sides = [Side("base", where), Side("head", where)]
envs = {{s.name: child_env(spec, b, s) for s in sides}}
pool = ZygotePool()  # held: its next generation lives as long as the pool
zygotes = pool.for_round(ZygoteRecipe("s", sides, envs, ["json"], where, print)) if {forked!r} else None
lockstep.callable_round(lockstep.Round({{"base": b, "head": b}}, envs, sides, where, round_index=0,
                   rng=random.Random(0), placement=Placement(pool=[0]), zygotes=zygotes))
"""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src"))
    parent = subprocess.Popen([sys.executable, "-c", driver], env=env, cwd=tmp_path)
    # the zygote both sides share, its next generation (importing, held while values are timed) and
    # its two forked workers; or two workers
    expected = 4 if forked else 2
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < expected:
            time.sleep(0.2)
            workers = _children_serving(tmp_path)
        assert len(workers) == expected
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _children_serving(tmp_path):
        time.sleep(0.1)
    assert _children_serving(tmp_path) == []


def _children_serving(where: Path) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        ours = b"--serve" in cmd or b"profopt_ci.measure.zygote_process" in cmd
        if ours and any(str(where).encode() in c for c in cmd) and state != "Z":
            out.append(int(proc.name))
    return out


def _results(step_ms: list[float]) -> dict:
    samples = [{"round": i, "order": 0, "step_time_ms": v, "values_ms": [v], "loops": 1, "throughput": None,
                "peak_memory_mb": 50.0, "cpu_time_ms": None, "phases_ms": {}, "quality": {}}
               for i, v in enumerate(step_ms)]
    return {"schema": "profopt/results@1", "commit": "a" * 40, "hardware_label": "test-cpu", "spec_hash": "x",
            "fingerprint": {}, "env": {}, "rounds": len(step_ms),
            "benchmarks": {"busy": {"kind": "callable", "params": {}, "unit": "items", "items_per_iteration": None,
                                    "status": "ok", "error": None, "samples": samples, "summary": {}}}}


def test_diff_ten_times_slower_with_outliers_is_regressed_and_fails_the_policy(tmp_path):
    base = [1.00, 1.02, 0.99, 1.01, 1.00, 0.98, 1.03, 1.01, 3.0, 4.0]  # two spikes on the base side
    head = [10.1, 9.9, 10.0, 10.2, 9.8, 10.0, 10.1, 30.0, 10.0, 100.0]  # and two on the head side
    (tmp_path / "base.json").write_text(json.dumps(_results(base)))
    (tmp_path / "head.json").write_text(json.dumps(_results(head)))
    proc = run_cli(["diff", "base.json", "head.json", "--fail-on", "regression"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    c = load(tmp_path)
    st = c["benchmarks"][0]["metrics"]["step_time_ms"]
    assert st["p_value"] < 0.01 and st["outliers"] >= 3 and st["verdict"] == "regressed"
    assert c["policy"]["failing"] == ["busy"] and any("outliers" in say("en", n) for n in c["notes"])
