"""Accepting an intended regression (issue 38 §4), `hardware_label: auto` and the action's new inputs
(§5).

A real git repository whose head makes a benchmark's step 30% slower, compared by the real CLI at
the spec's defaults under `pull_request` events (GITHUB_EVENT_PATH): `synchronize` without the
accept label fails the policy; `labeled` with it passes, says so, and reuses the kept comparison
without a new round; `unlabeled` fails again, from the same figures. What the reuse keys on is
checked against the cache a real compare wrote; the action's side through its real entry point
(`runner: local`) on a real PR repository.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from actionkit import action_env, bench_files, make_pr_repo, pr_event, read_outputs, run_entrypoint
from conftest import ROOT, cli_env, git, make_repo, run_cli

from profopt_ci import machine_label
from profopt_ci.action import inputs as action_inputs
from profopt_ci.action import local, runs, workspace
from profopt_ci.errors import UsageError
from profopt_ci.pipeline import reuse
from profopt_ci.specfile.load import load_spec
from profopt_ci.specfile.plan import make_plan, overrides

# The step the user times: a pure-Python loop; the head makes it 30% longer (N 40 000 → 52 000).
STEP = '''\
import profopt_ci

N = {n}


def make_step():
    def step():
        x = 0
        for i in range(N):
            x += i
        profopt_ci.record(loss=1.0)
    return step
'''
SPEC = """\
version: 1
hardware_label: cpu-accept
benchmarks:
  - name: loop
    callable: "bench_step:make_step"
"""
LABEL = "profopt-accept"
ACCEPTED = f"regression accepted (label {LABEL})"


def _event(path: Path, action: str, labels: list[str]) -> Path:
    """A pull_request event as GitHub writes it: for labeled / unlabeled the list is the one after."""
    data = {"action": action, "number": 3, "pull_request": {"number": 3, "labels": [{"name": n} for n in labels]}}
    if action in reuse.LABEL_EVENTS:
        data["label"] = {"name": LABEL}
    path.write_text(json.dumps(data))
    return path


def _compare(root: Path, cache: Path, event: Path | None, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {"PROFOPT_CACHE_DIR": str(cache)}
    if event is not None:
        env["GITHUB_EVENT_PATH"] = str(event)
    started = time.monotonic()
    proc = run_cli(["compare", "--base", "HEAD~1", "--fail-on", "regression", *extra], root, env=env, timeout=600)
    return proc, time.monotonic() - started


def _read(root: Path) -> tuple[dict, str]:
    out = root / ".profopt"
    return json.loads((out / "comparison.json").read_text()), (out / "report.md").read_text()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A fresh repository with a real 30% regression, compared once under a `synchronize` event
    without the label: what every later event finds in the cache."""
    tmp = tmp_path_factory.mktemp("accept")
    root, cache = tmp / "repo", tmp / "cache"
    make_repo(root, [{"bench_step.py": STEP.format(n=40000), "profopt.yml": SPEC},
                     {"bench_step.py": STEP.format(n=52000)}])
    proc, wall = _compare(root, cache, _event(tmp / "sync.json", "synchronize", ["bug"]))
    doc, report = _read(root)
    return {"root": root, "cache": cache, "tmp": tmp, "proc": proc, "wall": wall, "doc": doc, "report": report}


@pytest.mark.slow
def test_a_synchronize_event_without_the_label_fails_on_the_real_regression(measured):
    proc, doc = measured["proc"], measured["doc"]
    assert proc.returncode == 1, proc.stderr[-3000:]
    [b] = doc["benchmarks"]
    assert b["decision"] == "reject" and b["metrics"]["step_time_ms"]["verdict"] == "regressed"
    assert 20 < b["metrics"]["step_time_ms"]["delta_pct"] < 40  # the 30% the head's loop adds
    assert doc["policy"] == {"fail_on": "regression", "failing": ["loop"]}  # the label is not on the PR
    assert "reused" not in doc and ACCEPTED not in measured["report"]
    assert len(list((measured["cache"] / "compare").glob("*.json"))) == 1  # kept for a later label event


@pytest.mark.slow
def test_labeled_passes_says_it_and_reuses_the_rounds_then_unlabeled_fails_again(measured):
    root, cache, tmp, first = measured["root"], measured["cache"], measured["tmp"], measured["doc"]
    proc, wall = _compare(root, cache, _event(tmp / "labeled.json", "labeled", ["bug", LABEL]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert wall <= 15, wall
    doc, report = _read(root)
    headline = report.splitlines()[0]
    assert headline.startswith("❌ reject — " + ACCEPTED), headline
    assert "slower" in headline  # the figures stay
    assert doc["policy"] == {"fail_on": "regression", "failing": ["loop"], "accepted": True, "label": LABEL}
    assert doc["reused"] == {"measured": first["created"], "action": "labeled"}
    assert [n["id"] for n in doc["notes"][:2]] == ["note.accepted", "note.reused"]
    assert doc["benchmarks"][0]["samples"] == first["benchmarks"][0]["samples"]  # no new round
    assert doc["benchmarks"][0]["metrics"] == first["benchmarks"][0]["metrics"]
    assert "is reused" in proc.stderr and "accepted: the pull request carries the label" in proc.stderr

    proc, wall = _compare(root, cache, _event(tmp / "unlabeled.json", "unlabeled", ["bug"]))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert wall <= 15, wall
    doc, report = _read(root)
    assert ACCEPTED not in report and "accepted" not in doc["policy"]
    assert doc["reused"]["action"] == "unlabeled" and [n["id"] for n in doc["notes"]].count("note.accepted") == 0
    assert doc["benchmarks"][0]["samples"] == first["benchmarks"][0]["samples"]


@pytest.mark.slow
def test_the_accepted_headline_in_chinese(measured):
    root, cache, tmp = measured["root"], measured["cache"], measured["tmp"]
    proc, _ = _compare(root, cache, _event(tmp / "labeled-zh.json", "labeled", [LABEL]), "--lang", "zh")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, report = _read(root)
    assert f"已接受回退（标签 {LABEL}）" in report.splitlines()[0]


def _plan(spec: Path, **kw):
    return make_plan(load_spec(spec), overrides(environ={}, **kw))


@pytest.mark.slow
def test_only_the_same_commits_spec_label_and_flags_on_a_label_event_reuse(measured, tmp_path):
    root, cache = measured["root"], measured["cache"]
    base, head = git(root, "rev-parse", "HEAD~1"), git(root, "rev-parse", "HEAD")
    spec = root / "profopt.yml"
    on = reuse.Labels(label=LABEL, on=True, action="labeled")
    os.environ["PROFOPT_CACHE_DIR"] = str(cache)
    try:
        def found(plan=None, refs=(base, head), labels=on, measure=None, budget=None):
            plan = plan or _plan(spec)
            return reuse.reused(plan, refs=refs, labels=labels, fail_on="regression",
                                measured=reuse.measured_of(plan, measure, budget, False), log=lambda _: None)

        kept = found()
        assert kept is not None and kept.policy.accepted is True and kept.reused.action == "labeled"
        assert found(refs=("HEAD~1", "HEAD")) is not None  # refs resolve to the same commits
        assert found(labels=reuse.Labels(label=LABEL, on=True, action="synchronize")) is None  # a push measures
        assert found(refs=(base, base)) is None  # another head
        assert found(plan=_plan(spec, threshold="5%")) is None  # a flag that changes the judging
        assert found(plan=_plan(spec, hardware_label="cpu-other")) is None  # another machine
        assert found(measure="all") is None and found(budget=60.0) is None
        edited = tmp_path / "profopt.yml"  # the same spec with one more line is another spec
        edited.write_text(SPEC + "# tuned\n")
        assert found(plan=_plan(edited)) is None
    finally:
        del os.environ["PROFOPT_CACHE_DIR"]


@pytest.mark.slow
def test_a_label_event_for_a_new_head_measures_it(measured, tmp_path):
    """A head the cache has not seen is measured, label event or not, and the label still passes it."""
    root = tmp_path / "repo"
    make_repo(root, [{"bench_step.py": STEP.format(n=40000), "profopt.yml": SPEC},
                     {"bench_step.py": STEP.format(n=52000)}])
    proc, _ = _compare(root, measured["cache"], _event(tmp_path / "labeled.json", "labeled", [LABEL]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc, report = _read(root)
    assert "reused" not in doc and "is reused" not in proc.stderr and doc["rounds"] > 0
    assert doc["policy"]["accepted"] is True and ACCEPTED in report.splitlines()[0]


# ---- the event, read as it is --------------------------------------------------------------------


def test_the_labels_are_read_from_the_event_file(tmp_path):
    event = _event(tmp_path / "e.json", "labeled", ["bug", LABEL])
    labels = reuse.labels_of({"GITHUB_EVENT_PATH": str(event)}, LABEL)
    assert (labels.on, labels.accept, labels.relabel) == (True, LABEL, True)
    other = reuse.labels_of({"GITHUB_EVENT_PATH": str(event)}, "perf-ok")
    assert (other.on, other.accept, other.relabel) == (False, None, True)
    assert reuse.labels_of({}, LABEL) == reuse.Labels(label=LABEL)  # a local run: no event, no label
    assert not reuse.labels_of({"GITHUB_EVENT_PATH": str(tmp_path / "gone.json")}).on


def test_an_unreadable_event_or_a_blank_label_is_a_usage_error(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench_step.py": STEP.format(n=100), "profopt.yml": SPEC}, {"bench_step.py": STEP.format(n=200)}])
    bad = tmp_path / "event.json"
    bad.write_text("{not json")
    proc = run_cli(["compare", "--base", "HEAD~1"], root, env={"GITHUB_EVENT_PATH": str(bad)})
    assert proc.returncode == 2 and "cannot read GITHUB_EVENT_PATH" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    proc = run_cli(["compare", "--base", "HEAD~1", "--accept-label", " "], root)
    assert proc.returncode == 2 and "--accept-label" in proc.stderr, proc.stderr[-2000:]


# ---- hardware_label: auto ------------------------------------------------------------------------


@pytest.mark.parametrize("model, cpus, gpus, label", [
    ("AMD EPYC 7763 64-Core Processor", 4, [], "cpu-amd-epyc-7763-4c"),
    ("Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz", 2, [], "cpu-intel-xeon-platinum-8370c-2c"),
    ("Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz", 12, [], "cpu-intel-core-i7-9750h-12c"),
    ("AMD Ryzen 7 7840U w/ Radeon 780M Graphics", 16, [], "cpu-amd-ryzen-7-7840u-16c"),
    ("AMD EPYC 7763 64-Core Processor", 32, ["NVIDIA H100 80GB HBM3"], "cpu-amd-epyc-7763-32c-gpu-nvidia-h100-80gb-hbm3"),
    ("Intel(R) Xeon(R) Processor", 8, ["NVIDIA A100-SXM4-40GB"] * 8, "cpu-intel-xeon-8c-gpu-8x-nvidia-a100-sxm4-40gb"),
    ("x", 4, ["Tesla T4", "NVIDIA L4"], "cpu-x-4c-gpu-nvidia-l4-gpu-tesla-t4"),
])
def test_a_label_names_the_cpu_model_its_count_and_the_gpus(model, cpus, gpus, label):
    assert machine_label.label_of(model, cpus, gpus) == label


def test_auto_is_this_machines_label_and_any_other_label_stays():
    here = machine_label.machine_label()
    assert here.startswith("cpu-") and f"-{os.cpu_count()}c" in here
    assert all(c.isalnum() or c == "-" for c in here) and here == here.lower()
    assert machine_label.resolve("auto") == machine_label.resolve(" AUTO ") == here
    assert machine_label.resolve("gpu-a100") == "gpu-a100" and machine_label.resolve(None) is None


def test_auto_tells_the_gpus_nvidia_smi_names(tmp_path):
    """nvidia-smi as a stand-in (no GPU here): the label counts the devices it lists."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\nprintf 'NVIDIA H100 80GB HBM3\\nNVIDIA H100 80GB HBM3\\n'\n")
    smi.chmod(0o755)
    env = {**cli_env(), "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([sys.executable, "-c", "from profopt_ci import machine_label as m; print(m.machine_label())"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out.endswith("-gpu-2x-nvidia-h100-80gb-hbm3") and out.startswith("cpu-")


def test_auto_in_the_spec_and_in_the_environment_is_resolved(tmp_path):
    spec = tmp_path / "profopt.yml"
    spec.write_text(SPEC.replace("cpu-accept", "auto"))
    assert make_plan(load_spec(spec)).hardware_label == machine_label.machine_label()
    plain = tmp_path / "plain.yml"
    plain.write_text(SPEC)
    ov = overrides(environ={"PROFOPT_HARDWARE_LABEL": "auto"})
    assert make_plan(load_spec(plain), ov).hardware_label == machine_label.machine_label()
    (tmp_path / "bench_step.py").write_text(STEP.format(n=10))
    proc = run_cli(["validate", "--no-setup", "--spec", str(spec)], tmp_path)
    assert f"label {machine_label.machine_label()}" in proc.stdout, proc.stdout + proc.stderr


# ---- the action's inputs -------------------------------------------------------------------------


def _settings(tmp_path: Path, env: dict[str, str]) -> action_inputs.ActionSettings:
    return action_inputs.settings_from_args(["--workspace", str(tmp_path)], env)


def test_the_new_inputs_reach_compare(tmp_path):
    s = _settings(tmp_path, {"INPUT_ACCEPT_LABEL": "perf-ok", "INPUT_MEASURE": "all", "INPUT_TIME_BUDGET": "10m",
                             "INPUT_HARDWARE_LABEL": "auto"})
    assert (s.accept_label, s.measure, s.time_budget) == ("perf-ok", "all", "10m")
    assert s.hardware_label == machine_label.machine_label()  # resolved on the runner
    argv = " ".join(workspace.compare_argv(s, "measure", "/work"))
    assert "--accept-label perf-ok" in argv and "--measure all" in argv and "--time-budget 10m" in argv
    default = _settings(tmp_path, {"INPUT_ACCEPT_LABEL": "", "INPUT_MEASURE": "", "INPUT_TIME_BUDGET": ""})
    assert (default.accept_label, default.measure, default.time_budget) == (LABEL, None, None)
    argv = workspace.compare_argv(default, "all", str(tmp_path))
    assert "--measure" not in argv and "--time-budget" not in argv and argv[argv.index("--accept-label") + 1] == LABEL


@pytest.mark.parametrize("env, fragment", [
    ({"INPUT_MEASURE": "some"}, "measure: expected one of changed, all"),
    ({"INPUT_TIME_BUDGET": "soon"}, "time-budget: 'soon' is not a duration"),
    ({"INPUT_TIME_BUDGET": "0s"}, "time-budget:"),
    ({"INPUT_ACCEPT_LABEL": "x" * 51}, "accept-label: a label name has at most 50 characters"),
])
def test_a_bad_new_input_is_a_usage_error_naming_it(tmp_path, env, fragment):
    with pytest.raises(UsageError) as info:
        _settings(tmp_path, env)
    assert fragment in str(info.value)


def test_the_container_gets_the_cache_dir_and_the_events_labels_alone(tmp_path):
    s = _settings(tmp_path, {})
    s.workdir.mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "labeled", "label": {"name": LABEL}, "sender": {"login": "octo"},
                                 "pull_request": {"number": 9, "title": "t", "body": "secret-ish text",
                                                  "labels": [{"name": LABEL, "color": "fff"}]}}))
    written = workspace.event_for_compare(s, {"GITHUB_EVENT_PATH": str(event)})
    assert json.loads(written.read_text()) == {"action": "labeled",
                                              "pull_request": {"number": 9, "labels": [{"name": LABEL}]}}
    env = runs.container_env({}, s, written)
    assert env["PROFOPT_CACHE_DIR"] == "/work/.profopt/cache"
    assert env["GITHUB_EVENT_PATH"] == "/work/.profopt/event.json"
    assert "GITHUB_EVENT_PATH" not in runs.container_env({}, s)
    assert workspace.event_for_compare(s, {}) is None  # no pull request: nothing written
    assert local.local_env({}, s)["PROFOPT_CACHE_DIR"] == str(tmp_path.resolve() / ".profopt" / "cache")
    assert local.local_env({"PROFOPT_CACHE_DIR": "/mine"}, s)["PROFOPT_CACHE_DIR"] == "/mine"


@pytest.mark.slow
def test_the_action_reuses_its_comparison_for_the_accept_label(tmp_path, monkeypatch):
    """The action's entry point (`runner: local`) on a real PR repository: a synchronize event
    measures a regression and fails; the labeled event finds the comparison in the workspace's
    .profopt/cache, passes, and the step outputs and summary say it."""
    monkeypatch.delenv("PROFOPT_CACHE_DIR")  # the action's own cache: a job that sets none
    ws = tmp_path / "ws"
    base, head = make_pr_repo(ws, bench_files(1, rounds=10), bench_files(3, rounds=10))  # head does 3× the work
    event = pr_event(tmp_path / "event.json", base, head)
    inputs = {"runner": "local", "hardware-label": "cpu-local", "fail-on": "regression", "comment": "false"}
    proc = run_entrypoint(action_env(tmp_path, ws, event=event, inputs=inputs), timeout=300)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    first = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert list((ws / ".profopt" / "cache" / "compare").glob("*.json"))

    data = json.loads(event.read_text())
    data.update(action="labeled", label={"name": LABEL})
    data["pull_request"]["labels"] = [{"name": LABEL}]
    event.write_text(json.dumps(data))
    started = time.monotonic()
    proc = run_entrypoint(action_env(tmp_path, ws, event=event, inputs=inputs), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert time.monotonic() - started <= 15
    doc = json.loads((ws / ".profopt" / "comparison.json").read_text())
    assert doc["reused"]["action"] == "labeled" and doc["policy"]["accepted"] is True
    assert doc["benchmarks"][0]["samples"] == first["benchmarks"][0]["samples"]
    out = read_outputs(tmp_path / "github_output")
    assert ACCEPTED in Path(out["report_path"]).read_text().splitlines()[0]
    assert ACCEPTED in (tmp_path / "step_summary.md").read_text()


def test_the_action_lists_the_new_inputs_and_keeps_the_cache():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["inputs"]["accept-label"]["default"] == LABEL
    assert {"measure", "time-budget"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    names = [s.get("uses", "").split("@")[0] for s in steps]
    restore, run, save = (names.index("actions/cache/restore"), [s.get("id") for s in steps].index("run"),
                          names.index("actions/cache/save"))
    assert restore < run < save
    assert steps[restore]["with"]["path"] == steps[save]["with"]["path"] == ".profopt/cache"
    assert workspace.CACHE_NAME == "cache" and workspace.WORKDIR_NAME == ".profopt"
    assert "cancelled()" in steps[save]["if"]  # saved also when the policy failed the step
    for name in ("pr.yml", "hosted.yml"):
        wf = yaml.load((ROOT / "examples" / "workflows" / name).read_text(), Loader=yaml.BaseLoader)
        assert {"labeled", "unlabeled"} <= set(wf["on"]["pull_request"]["types"])
    hosted = yaml.load((ROOT / "examples" / "workflows" / "hosted.yml").read_text(), Loader=yaml.BaseLoader)
    (job,) = hosted["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert next(s for s in job["steps"] if s.get("id") == "profopt")["with"]["hardware-label"] == "auto"



# ---- the headline --------------------------------------------------------------------------------


def test_the_headline_says_what_the_label_accepted_first_and_keeps_the_figures():
    import comparison_fixtures as fx

    from profopt_ci.report.headline import headline

    c = fx.reject_constraint()  # train-step broke its loss constraint
    plain = headline(c, "en")
    c["policy"] = {"fail_on": "regression", "failing": ["train-step"], "accepted": True, "label": LABEL}
    said = headline(c, "en")
    assert said == plain.replace("reject — ", f"reject — broken constraint accepted (label {LABEL}); ", 1)
    assert f"已接受被破坏的约束（标签 {LABEL}）" in headline(c, "zh")
    c["policy"]["accepted"] = False  # the label on a PR that fails nothing: nothing to say
    assert headline(c, "en") == plain
