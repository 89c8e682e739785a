"""The action's inputs: flags, else the `INPUT_*` variables `action.yml` passes through `env:`.

Parsed and checked here into one `ActionSettings`, so every input is validated in one place (a bad
`gpus`, `cpuset`, `memory` or `store` is a usage error naming the input) before anything runs.

In: argv and the environment (`INPUT_*`, `GITHUB_WORKSPACE`, `GITHUB_ACTION_PATH`, `RUNNER_TEMP`).
Out: `ActionSettings`, or a `UsageError` (exit 2) naming the input.
"""
from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.errors import UsageError
from profopt_ci.machine_label import resolve as resolve_label

DEFAULT_BASE_IMAGE = "python:3.11-slim-bookworm"
DEFAULT_IMAGE_REPO = "profopt-runner"
WORKDIR_NAME = ".profopt"
MODES = ("pr", "baseline", "compare", "site")
RUNNERS = ("docker", "local")
FAIL_ON = ("regression", "constraint", "none")
MEASURE = ("changed", "all")
DEFAULT_ACCEPT_LABEL = "profopt-accept"
LANGS = ("en", "zh")
_CPUSET = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
_GPU_IDS = re.compile(r"[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*")
_MEMORY = re.compile(r"[1-9][0-9]*[bkmg]?", re.I)
_STORE = re.compile(r"(dir|git):(.+)")
_URL = re.compile(r"https?://[^\s\"'<>]+")
_GIT_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")


# ---- settings -------------------------------------------------------------------------------------


@dataclass
class ActionSettings:
    workspace: Path
    action_path: Path  # the build context: Dockerfile, pyproject.toml, src/
    mode: str = "pr"
    runner: str = "docker"
    spec: str = "profopt.yml"
    base: str | None = None
    head: str | None = None
    hardware_label: str | None = None  # `auto` resolved here, on the runner (machine_label.py)
    gpus: str = "none"
    cpuset: str | None = None
    threshold: str | None = None
    max_rounds: int | None = None
    instrument: str | None = None  # walltime | instructions | walltime,instructions
    fail_on: str = "regression"
    accept_label: str = DEFAULT_ACCEPT_LABEL  # a PR carrying it passes a failing policy
    measure: str | None = None  # changed | all; None: the spec's
    time_budget: str | None = None  # e.g. 10m; None: the spec's
    lang: str = "en"
    comment: bool = True
    confirm: bool = False  # compare --confirm: flagged benchmarks measured again, independently
    bisect: bool = False  # mode baseline: refresh --bisect on the runner, then the issues from the host
    pages: bool = False  # mode baseline: build the site of the store after the refresh (mode site: only that)
    site_url: str | None = None  # where the site is published: the report's links, the site's base URL
    store: str = "git:profopt-data"
    base_image: str = DEFAULT_BASE_IMAGE
    image: str | None = None  # a prebuilt image, used as is (no build, no hash)
    image_repo: str = DEFAULT_IMAGE_REPO
    dockerfile: str = "Dockerfile"
    memory: str | None = None
    timeout_s: float = 3600.0
    keep_containers: bool = False  # leave the containers for inspection (tests, debugging)
    run_id: str = field(default_factory=lambda: f"{os.getpid()}-{int(time.time() * 1000)}")

    @property
    def workdir(self) -> Path:
        return self.workspace / WORKDIR_NAME


def _env_default(environ: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    value = environ.get(f"INPUT_{name}", "").strip()
    return value if value else default


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off", ""):
        return False
    raise UsageError(f"expected true or false, got {text!r}")


def _named_bool(name: str, text: str) -> bool:
    try:
        return _bool(text)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}") from None


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags win; each defaults to the matching `INPUT_<NAME>` variable the action sets via `env:`."""

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):  # route argparse's own exit 2 through our boundary
            raise UsageError(f"{self.prog}: {message}")

    def d(name: str, default: str | None = None) -> str | None:
        return _env_default(environ, name, default)

    here = Path(__file__).resolve().parents[3]
    p = Parser(prog="profopt-action", description="Run profopt the way the GitHub Action does.")
    p.add_argument("--workspace", default=environ.get("GITHUB_WORKSPACE") or os.getcwd())
    p.add_argument("--action-path", default=environ.get("GITHUB_ACTION_PATH") or str(here))
    p.add_argument("--mode", default=d("MODE", "pr"))
    p.add_argument("--runner", default=d("RUNNER", "docker"))
    p.add_argument("--spec", default=d("SPEC", "profopt.yml"))
    p.add_argument("--base", default=d("BASE"))
    p.add_argument("--head", default=d("HEAD"))
    p.add_argument("--hardware-label", default=d("HARDWARE_LABEL"))
    p.add_argument("--gpus", default=d("GPUS", "none"))
    p.add_argument("--cpuset", default=d("CPUSET"))
    p.add_argument("--threshold", default=d("THRESHOLD"))
    p.add_argument("--max-rounds", default=d("MAX_ROUNDS"))
    p.add_argument("--instrument", default=d("INSTRUMENT"))
    p.add_argument("--fail-on", default=d("FAIL_ON", "regression"))
    p.add_argument("--accept-label", default=d("ACCEPT_LABEL", DEFAULT_ACCEPT_LABEL))
    p.add_argument("--measure", default=d("MEASURE"))
    p.add_argument("--time-budget", default=d("TIME_BUDGET"))
    p.add_argument("--lang", default=d("LANG", "en"))
    p.add_argument("--comment", default=d("COMMENT", "true"))
    p.add_argument("--confirm", default=d("CONFIRM", "false"))
    p.add_argument("--bisect", default=d("BISECT", "false"))
    p.add_argument("--pages", default=d("PAGES", "false"))
    p.add_argument("--site-url", default=d("SITE_URL"))
    p.add_argument("--store", default=d("STORE", "git:profopt-data"))
    p.add_argument("--base-image", default=d("BASE_IMAGE", DEFAULT_BASE_IMAGE))
    p.add_argument("--image", default=d("IMAGE"))
    p.add_argument("--image-repo", default=environ.get("PROFOPT_IMAGE_REPO") or DEFAULT_IMAGE_REPO)
    p.add_argument("--dockerfile", default=environ.get("PROFOPT_DOCKERFILE") or "Dockerfile")
    p.add_argument("--memory", default=d("MEMORY"))
    p.add_argument("--timeout-minutes", default=d("TIMEOUT_MINUTES", "60"))
    p.add_argument("--run-id", default=environ.get("PROFOPT_RUN_ID") or None,
                   help="labels this run's containers (org.profopt.run)")
    p.add_argument("--keep-containers", action="store_true",
                   default=_bool(environ.get("PROFOPT_KEEP_CONTAINERS", "false")))
    return p


def _choice(name: str, value: str, choices: Iterable[str]) -> str:
    value = value.strip().lower()
    if value not in choices:
        raise UsageError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def check_gpus(value: str) -> str:
    value = (value or "none").strip()
    if value.lower() in ("none", "all"):
        return value.lower()
    if not _GPU_IDS.fullmatch(value):
        raise UsageError(f"gpus: expected none, all or comma-separated device ids/UUIDs, got {value!r}")
    return value


def check_cpuset(value: str | None) -> str | None:
    if not value or not value.strip():
        return None
    value = value.strip().replace(" ", "")
    if not _CPUSET.fullmatch(value):
        raise UsageError(f"cpuset: expected CPU numbers and ranges like 2-3 or 0,2,4, got {value!r}")
    return value


def check_instrument(value: str | None) -> str | None:
    """The `instrument` input: empty → the spec's; else walltime and/or instructions, comma-separated."""
    if not value or not value.strip():
        return None
    from profopt_ci.specfile.load import parse_instrument

    try:
        return ",".join(parse_instrument([p.strip() for p in value.split(",") if p.strip()]))
    except ValueError as exc:
        raise UsageError(f"instrument: {exc}") from None


def check_hardware_label(value: str | None) -> str | None:
    """The `hardware-label` input: empty → the spec's; `auto` → this runner's machine (resolved on
    the runner, where the GPUs are seen whatever the container is given)."""
    if not value or not value.strip():
        return None
    return resolve_label(value.strip())


def label_name(value: str, key: str) -> str:
    """A GitHub label's name as `key` (an input, a flag) gives it: stripped, 1 to 50 characters."""
    value = value.strip()
    if not value:
        raise UsageError(f"{key}: a label name cannot be blank")
    if len(value) > 50:
        raise UsageError(f"{key}: a label name has at most 50 characters, got {value!r}")
    return value


def check_accept_label(value: str | None) -> str:
    """The `accept-label` input: empty → profopt-accept."""
    return label_name((value or "").strip() or DEFAULT_ACCEPT_LABEL, "accept-label")


def check_time_budget(value: str | None) -> str | None:
    """The `time-budget` input: empty → the spec's; else a duration like 10m, passed on as it is."""
    if not value or not value.strip():
        return None
    from profopt_ci.specfile.model import parse_duration

    try:
        parse_duration(value.strip())
    except ValueError as exc:
        raise UsageError(f"time-budget: {exc}") from None
    return value.strip()


def check_site_url(value: str | None) -> str | None:
    if not value or not value.strip():
        return None
    if not _URL.fullmatch(value.strip()):
        raise UsageError(f"site-url: expected an http(s) URL, got {value!r}")
    return value.strip().rstrip("/")


def check_store(value: str) -> str:
    m = _STORE.fullmatch(value.strip())
    if not m:
        raise UsageError(f"store: expected dir:PATH or git:BRANCH, got {value!r}")
    if m.group(1) == "git" and (not _GIT_BRANCH.fullmatch(m.group(2)) or ".." in m.group(2)):
        raise UsageError(f"store: {m.group(2)!r} is not a usable branch name")
    return value.strip()


def settings_from_args(argv: list[str] | None, environ: Mapping[str, str]) -> ActionSettings:
    a = build_parser(environ).parse_args(argv)
    try:
        timeout_min = float(a.timeout_minutes)
    except ValueError:
        raise UsageError(f"timeout-minutes: expected a number, got {a.timeout_minutes!r}") from None
    if timeout_min <= 0:
        raise UsageError("timeout-minutes: must be above 0")
    max_rounds = None
    if a.max_rounds:
        if not str(a.max_rounds).isdigit() or int(a.max_rounds) < 1:
            raise UsageError(f"max-rounds: expected a whole number ≥ 1, got {a.max_rounds!r}")
        max_rounds = int(a.max_rounds)
    if a.memory and not _MEMORY.fullmatch(a.memory.strip()):
        raise UsageError(f"memory: expected a size like 512m or 8g, got {a.memory!r}")
    workspace = Path(a.workspace).resolve()
    if not workspace.is_dir():
        raise UsageError(f"workspace {workspace} is not a directory")
    return ActionSettings(
        workspace=workspace,
        action_path=Path(a.action_path).resolve(),
        mode=_choice("mode", a.mode, MODES),
        runner=_choice("runner", a.runner, RUNNERS),
        spec=a.spec,
        base=a.base or None,
        head=a.head or None,
        hardware_label=check_hardware_label(a.hardware_label),
        gpus=check_gpus(a.gpus),
        cpuset=check_cpuset(a.cpuset),
        threshold=a.threshold or None,
        max_rounds=max_rounds,
        instrument=check_instrument(a.instrument),
        fail_on=_choice("fail-on", a.fail_on, FAIL_ON),
        accept_label=check_accept_label(a.accept_label),
        measure=_choice("measure", a.measure, MEASURE) if a.measure else None,
        time_budget=check_time_budget(a.time_budget),
        lang=_choice("lang", a.lang, LANGS),
        comment=_bool(a.comment),
        confirm=_named_bool("confirm", a.confirm),
        bisect=_named_bool("bisect", a.bisect),
        pages=_named_bool("pages", a.pages),
        site_url=check_site_url(a.site_url),
        store=check_store(a.store),
        base_image=a.base_image,
        image=a.image or None,
        image_repo=a.image_repo,
        dockerfile=a.dockerfile,
        memory=a.memory.strip().lower() if a.memory else None,
        timeout_s=timeout_min * 60,
        keep_containers=a.keep_containers,
        **({"run_id": a.run_id} if a.run_id else {}),
    )
