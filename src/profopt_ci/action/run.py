"""The GitHub Action's engine: measure inside the runner image, publish from outside it.

`entrypoint.py` (what `action.yml` runs on the job's runner) calls `main()`. The flow:

1. settings from flags, else the `INPUT_*` variables the composite action sets through `env:`;
2. refuse a workspace whose git config holds a persisted token (the workspace is mounted);
3. (runner: docker) connect to the engine, build the image from `Dockerfile` unless an image
   tagged with the hash of the Dockerfile, the base image, pyproject.toml and src/ exists;
4. two containers over the mounted workspace: `profopt compare --phase setup` with the default
   network (setup installs what each side needs), then `--phase measure` with no network; each with
   an allowlisted environment (never the token), optional GPUs, cpuset, memory and time limits;
   (runner: local) the same `profopt compare` as a subprocess without the token;
5. on the host: `profopt publish` (sticky comment, job summary, step outputs) — or, without a PR or
   with `comment: false`, the summary and outputs only.

A container that cannot start, runs out of memory or out of time is exit 3 with a message naming
the cause; what it measured stays in the work directory and is published with that cause on top.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profopt_ci.action.inputs import (  # noqa: F401 — re-exported: the action's one settings type
    DEFAULT_BASE_IMAGE,
    DEFAULT_IMAGE_REPO,
    FAIL_ON,
    LANGS,
    MODES,
    RUNNERS,
    WORKDIR_NAME,
    ActionSettings,
    build_parser,
    check_cpuset,
    check_gpus,
    check_store,
    settings_from_args,
)
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, EXIT_USAGE, InfraError, ProfoptError, UsageError

CONTAINER_WORKSPACE = "/work"
CONTAINER_STORE = "/store"
IMAGE_UID = 10001  # the image's `profopt` user (Dockerfile)
HASH_LABEL = "org.profopt.source-hash"
RUN_LABEL = "org.profopt.run"
PHASE_LABEL = "org.profopt.phase"
STOP_GRACE_S = 30.0  # SIGINT first, so compare writes what it measured, then SIGKILL


# The only host variables a container may see. Nothing here is a credential; names that look like
# one are refused even if someone adds them (see `container_env`).
ENV_ALLOWLIST = (
    "CI", "GITHUB_ACTIONS", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_REF", "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "GITHUB_WORKFLOW",
    "RUNNER_OS", "RUNNER_ARCH", "RUNNER_NAME", "TZ",
)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|_KEY$|^KEY$|AUTH", re.I)
# Variables the local runner strips from the benchmark's environment (it otherwise inherits the job's).
LOCAL_STRIP = ("GITHUB_TOKEN", "GH_TOKEN", "INPUT_GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_RUNTIME_URL",
               "ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL")



def _say(line: str) -> None:
    print(line, flush=True)


# ---- the workspace --------------------------------------------------------------------------------


def check_no_persisted_token(workspace: Path) -> None:
    """The workspace is mounted into the container: a token actions/checkout left in .git/config
    (its default `persist-credentials: true`) would be handed to the code under test."""
    config = workspace / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if re.search(r"extraheader\s*=\s*AUTHORIZATION", text, re.I) or re.search(r"https://[^/\s]*:[^@\s]+@", text):
        raise UsageError(
            f"{config} holds a credential (actions/checkout persisted the token). The workspace is "
            "mounted into the benchmark container, so profopt refuses to run: set "
            "`persist-credentials: false` on actions/checkout."
        )


def compare_argv(s: ActionSettings, phase: str, root: str) -> list[str]:
    """`profopt compare` as run inside the container (root=/work) or locally (root=the workspace)."""
    work = f"{root}/{WORKDIR_NAME}"
    argv = ["compare", "--spec", s.spec, "--workdir", work, "--phase", phase,
            "--out", f"{work}/comparison.json", "--report", f"{work}/report.md", "--html", f"{work}/report.html",
            "--lang", s.lang, "--fail-on", s.fail_on]
    for flag, value in (("--base", s.base), ("--head", s.head), ("--threshold", s.threshold),
                        ("--max-rounds", s.max_rounds), ("--instrument", s.instrument)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def baseline_argv(s: ActionSettings, store: str) -> list[str]:
    argv = ["baseline", "refresh", "--spec", s.spec, "--store", store]
    if store.startswith("git:"):
        # The container has no credentials: it commits to the local data branch, and the host pushes.
        argv.append("--no-push")
    if s.instrument:
        argv += ["--instrument", s.instrument]
    return argv


def resolve_refs(s: ActionSettings, environ: Mapping[str, str]) -> None:
    """Fix base and head to commits on the host, so both containers measure the same two commits.

    pr mode without `base`: the merge-base of the PR's base branch and HEAD (the event's base sha
    is the branch tip at event time, not the fork point)."""
    from profopt_ci.gitutil import GitError, git

    if s.mode == "baseline":
        return
    if s.mode == "compare" and not s.base:
        raise UsageError("mode compare needs `base` (a ref or commit to compare head with)")
    try:
        s.head = git(["rev-parse", "--verify", f"{s.head or 'HEAD'}^{{commit}}"], s.workspace)
        if s.base:
            s.base = git(["rev-parse", "--verify", f"{s.base}^{{commit}}"], s.workspace)
            return
        event = _event(environ)
        base_ref = ((event.get("pull_request") or {}).get("base") or {}).get("ref") or environ.get("GITHUB_BASE_REF")
        if base_ref:
            for candidate in (f"origin/{base_ref}", base_ref):
                if git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], s.workspace, check=False):
                    s.base = git(["merge-base", candidate, s.head], s.workspace)
                    return
            sha = ((event.get("pull_request") or {}).get("base") or {}).get("sha")
            if sha and git(["rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"], s.workspace, check=False):
                s.base = sha
                return
            raise UsageError(f"the PR's base branch {base_ref!r} is not in the checkout — use "
                             "actions/checkout with `fetch-depth: 0`")
    except GitError as exc:
        raise UsageError(f"cannot resolve base/head in {s.workspace}: {exc.stderr or exc}") from None
    # No PR context: compare's own default (merge-base with the default branch) decides.


def _event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def prepare_workdir(s: ActionSettings) -> None:
    """A fresh .profopt: outputs of an earlier run must never be published as this run's."""
    s.workdir.mkdir(exist_ok=True)
    for name in ("comparison.json", "report.md", "report.html"):
        (s.workdir / name).unlink(missing_ok=True)
    (s.workdir / "logs").mkdir(exist_ok=True)


@dataclass
class Ownership:
    """Who the benchmark runs as, and what we chowned to make that work (undone afterwards)."""

    user: str
    granted: list[Path] = field(default_factory=list)
    restore_to: tuple[int, int] | None = None


def benchmark_user(s: ActionSettings) -> Ownership:
    """The workspace owner's uid:gid when not root, so files in the workspace stay the runner's.

    A root-owned workspace (a runner running as root) gets the image's non-root user instead, and
    only the paths compare writes (.profopt and .git/worktrees) are handed to it for the run."""
    st = s.workspace.stat()
    if st.st_uid != 0:
        return Ownership(user=f"{st.st_uid}:{st.st_gid}")
    if os.geteuid() != 0:
        raise InfraError(f"{s.workspace} is owned by root but this runner is not: the benchmark "
                         "container could not write its results there")
    own = Ownership(user=f"{IMAGE_UID}:{IMAGE_UID}", restore_to=(st.st_uid, st.st_gid))
    worktrees = s.workspace / ".git" / "worktrees"
    targets = [s.workdir]
    if (s.workspace / ".git").is_dir():
        worktrees.mkdir(exist_ok=True)
        targets.append(worktrees)
    for top in targets:
        _chown_tree(top, IMAGE_UID, IMAGE_UID, only_uid=st.st_uid)
        own.granted.append(top)
    return own


def restore_ownership(own: Ownership) -> None:
    if own.restore_to is None:
        return
    uid, gid = own.restore_to
    for top in own.granted:
        if top.exists():
            _chown_tree(top, uid, gid, only_uid=IMAGE_UID)


def _chown_tree(top: Path, uid: int, gid: int, *, only_uid: int) -> None:
    paths = [top]
    for root, dirs, files in os.walk(top):
        paths += [Path(root, n) for n in dirs + files]
    for p in paths:
        try:
            if p.lstat().st_uid == only_uid:
                os.lchown(p, uid, gid)
        except FileNotFoundError:
            continue


# ---- the image ------------------------------------------------------------------------------------


def _source_files(context: Path, dockerfile: str) -> list[Path]:
    files = [context / dockerfile, context / "pyproject.toml", context / ".dockerignore"]
    src = context / "src"
    if src.is_dir():
        files += sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                        and not p.name.endswith(".pyc") and ".egg-info" not in str(p.relative_to(context)))
    return [p for p in files if p.is_file()]


def image_tag(context: Path, dockerfile: str = "Dockerfile", base_image: str = DEFAULT_BASE_IMAGE,
              repo: str = DEFAULT_IMAGE_REPO) -> tuple[str, str]:
    """(tag, full hash): what the image is built from — the Dockerfile, the base image and the
    package sources — so an unchanged image is found by its tag and reused."""
    h = hashlib.sha256(b"profopt-image-v1\0" + base_image.encode() + b"\0")
    for path in _source_files(context, dockerfile):
        h.update(str(path.relative_to(context)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    digest = h.hexdigest()
    return f"{repo}:{digest[:16]}", digest


def connect(environ: Mapping[str, str] = os.environ):
    """A docker client that answered a ping, or InfraError naming where it looked."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise InfraError("the `docker` Python package is missing on the runner (pip install docker)") from None
    where = environ.get("DOCKER_HOST") or "the default socket (unix:///var/run/docker.sock)"
    try:
        client = docker.DockerClient.from_env(environment=dict(environ), timeout=120)
        client.ping()
    except (DockerException, OSError) as exc:
        raise InfraError(f"no Docker engine answers at {where}: {_short(exc)} — start Docker on the "
                         "runner, or use `runner: local`") from None
    return client


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ensure_image(client, s: ActionSettings, log: Callable[[str], None] = _say) -> tuple[str, bool]:
    """(image id, built?): reuse the image tagged with the sources' hash, else build it."""
    from docker.errors import APIError, ImageNotFound

    if s.image:
        try:
            return client.images.get(s.image).id, False
        except ImageNotFound:
            raise InfraError(f"image {s.image!r} (input `image`) is not on this runner") from None
    if not (s.action_path / s.dockerfile).is_file():
        raise InfraError(f"the image cannot be built: no {s.dockerfile} in {s.action_path}")
    tag, digest = image_tag(s.action_path, s.dockerfile, s.base_image, s.image_repo)
    try:
        image = client.images.get(tag)
        log(f"profopt: reusing image {tag} ({image.id[:19]}): Dockerfile and sources unchanged")
        return image.id, False
    except ImageNotFound:
        pass
    log(f"profopt: building image {tag} from {s.action_path / s.dockerfile} (BASE_IMAGE={s.base_image})")
    started = time.monotonic()
    build_log = s.workdir / "logs" / "image-build.log"
    tail: list[str] = []
    try:
        with build_log.open("w", encoding="utf-8") as fh:
            stream = client.api.build(path=str(s.action_path), dockerfile=s.dockerfile, tag=tag,
                                      buildargs={"BASE_IMAGE": s.base_image},
                                      labels={HASH_LABEL: digest}, rm=True, forcerm=True, decode=True)
            for chunk in stream:
                if "error" in chunk:
                    detail = (chunk.get("errorDetail") or {}).get("message") or chunk["error"]
                    fh.write(detail + "\n")
                    raise InfraError(_build_failure(tag, detail, tail, build_log))
                text = chunk.get("stream") or chunk.get("status") or ""
                if text:
                    fh.write(text if text.endswith("\n") else text + "\n")
                    for line in text.splitlines():
                        if line.strip():
                            tail = (tail + [line])[-15:]
                            log(f"  [build] {line}")
    except APIError as exc:
        raise InfraError(_build_failure(tag, _short(exc, 1000), tail, build_log)) from None
    try:
        image = client.images.get(tag)
    except ImageNotFound:
        raise InfraError(_build_failure(tag, "the engine reported no image after the build", tail, build_log)) from None
    log(f"profopt: built image {tag} ({image.id[:19]}) in {time.monotonic() - started:.1f} s")
    return image.id, True


def _build_failure(tag: str, detail: str, tail: list[str], log_path: Path) -> str:
    lines = "\n".join(f"    {t}" for t in tail[-8:])
    return (f"the image build failed ({tag}): {detail.strip()}\n  last build lines:\n{lines}\n"
            f"  full build log: {log_path}")


# ---- the containers -------------------------------------------------------------------------------


def container_env(environ: Mapping[str, str], s: ActionSettings) -> dict[str, str]:
    """Built from an allowlist, never from the host environment wholesale: no token gets in."""
    env = {k: environ[k] for k in ENV_ALLOWLIST if k in environ and not _SECRET_NAME.search(k)}
    secrets = {environ[k] for k in environ if _SECRET_NAME.search(k) and environ[k]}
    env = {k: v for k, v in env.items() if v not in secrets}
    env.update({"HOME": "/tmp", "PYTHONUNBUFFERED": "1", "PROFOPT_IN_CONTAINER": "1"})
    if s.hardware_label:
        env["PROFOPT_HARDWARE_LABEL"] = s.hardware_label
    return env


def device_requests(gpus: str) -> list:
    if gpus == "none":
        return []
    from docker.types import DeviceRequest

    if gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=gpus.split(","), capabilities=[["gpu"]])]


def store_mount(s: ActionSettings) -> tuple[str, dict[str, dict[str, str]]]:
    """The store as the container sees it; a dir: store outside the workspace gets its own mount."""
    kind, _, where = s.store.partition(":")
    if kind != "dir":
        return s.store, {}
    path = (s.workspace / where).resolve()
    try:
        rel = path.relative_to(s.workspace)
        return f"dir:{CONTAINER_WORKSPACE}/{rel.as_posix()}", {}
    except ValueError:
        path.mkdir(parents=True, exist_ok=True)
        return f"dir:{CONTAINER_STORE}", {str(path): {"bind": CONTAINER_STORE, "mode": "rw"}}


@dataclass
class PhaseResult:
    phase: str
    exit_code: int
    oom: bool = False
    timed_out: bool = False
    container_id: str | None = None
    log_tail: list[str] = field(default_factory=list)


def run_container(client, image_id: str, argv: list[str], *, phase: str, network: bool, s: ActionSettings,
                  env: dict[str, str], user: str, extra_volumes: dict | None = None,
                  log: Callable[[str], None] = _say) -> PhaseResult:
    """One `profopt` process in a fresh container; logs streamed; SIGINT then SIGKILL at the limit."""
    from docker.errors import APIError, DockerException

    volumes = {str(s.workspace): {"bind": CONTAINER_WORKSPACE, "mode": "rw"}, **(extra_volumes or {})}
    log(f"profopt: [{phase}] docker run {image_id[:19]} profopt {shlex.join(argv)} "
        f"(network {'default' if network else 'none'}, user {user}"
        + (f", cpuset {s.cpuset}" if s.cpuset else "") + (f", gpus {s.gpus}" if s.gpus != "none" else "")
        + (f", memory {s.memory}" if s.memory else "") + ")")
    kwargs: dict[str, Any] = dict(
        command=argv, detach=True, user=user, working_dir=CONTAINER_WORKSPACE, environment=env,
        volumes=volumes, hostname=f"profopt-{phase}", labels={RUN_LABEL: s.run_id, PHASE_LABEL: phase},
        init=True, cap_drop=["ALL"], security_opt=["no-new-privileges"], pids_limit=4096, shm_size="1g",
        network_mode=None if network else "none",
    )
    if s.cpuset:
        kwargs["cpuset_cpus"] = s.cpuset
    if s.memory:
        kwargs["mem_limit"] = s.memory
        kwargs["memswap_limit"] = s.memory  # no swap: a benchmark that swaps measures the disk
    if s.gpus != "none":
        kwargs["device_requests"] = device_requests(s.gpus)
    try:
        container = client.containers.run(image_id, **kwargs)
    except (APIError, DockerException) as exc:
        if not s.keep_containers:  # created but never started (a GPU request no runtime can meet…)
            for left in client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={s.run_id}",
                                                                  "status": "created"}):
                left.remove(force=True)
        hint = (" — GPUs need the NVIDIA Container Toolkit on the runner" if s.gpus != "none"
                and "gpu" in str(exc).lower() else "")
        raise InfraError(f"the {phase} container could not start: {_short(exc, 600)}{hint}") from None
    result = PhaseResult(phase=phase, exit_code=EXIT_INFRA, container_id=container.id)
    log_path = s.workdir / "logs" / f"container-{phase}.log"
    streamer = threading.Thread(target=_stream_logs, args=(container, log_path, result, log), daemon=True)
    streamer.start()
    try:
        result.exit_code, result.timed_out = _wait(container, s.timeout_s, log)
        streamer.join(timeout=30)
        container.reload()
        result.oom = bool(container.attrs["State"].get("OOMKilled"))
    finally:
        if not s.keep_containers:
            try:
                container.remove(force=True)
            except DockerException as exc:
                log(f"profopt: could not remove container {container.id[:12]}: {_short(exc)}")
    return result


def _stream_logs(container, log_path: Path, result: PhaseResult, log: Callable[[str], None]) -> None:
    buf = b""
    with log_path.open("wb") as fh:
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            fh.write(chunk)
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                result.log_tail = (result.log_tail + [line])[-40:]
                log(f"  [{result.phase}] {line}")
        if buf:
            line = buf.decode("utf-8", "replace")
            result.log_tail = (result.log_tail + [line])[-40:]
            log(f"  [{result.phase}] {line}")


def _wait(container, timeout_s: float, log: Callable[[str], None]) -> tuple[int, bool]:
    """(exit code, timed out?). At the limit: SIGINT, so compare writes its partial results, then
    SIGKILL after a grace period."""
    import requests

    try:
        return int(container.wait(timeout=timeout_s)["StatusCode"]), False
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
        pass
    log(f"profopt: the container ran past its {timeout_s:.0f} s limit — interrupting it")
    try:
        container.kill(signal="SIGINT")
        return int(container.wait(timeout=STOP_GRACE_S)["StatusCode"]), True
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
        container.kill()
        return int(container.wait(timeout=60)["StatusCode"]), True


# ---- the runs -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What measuring came to: the CLI's exit code, or 3 and the infrastructure's cause."""

    exit_code: int
    cause: str | None = None  # set when the infrastructure failed (not when compare said 1, 2 or 3)
    image_id: str | None = None
    image_built: bool = False
    phases: list[PhaseResult] = field(default_factory=list)


def _phase_cause(r: PhaseResult, s: ActionSettings) -> str | None:
    if r.oom:
        return (f"out of memory: the {r.phase} container hit its memory limit ({s.memory or 'the host'}) "
                "and the kernel killed a process in it")
    if r.timed_out:
        return f"timed out: the {r.phase} container ran past its limit of {s.timeout_s / 60:g} min and was stopped"
    if r.exit_code not in (0, 1, 2, 3):
        return f"the {r.phase} container exited with status {r.exit_code} (killed or crashed)"
    return None


def run_docker(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = _say) -> Outcome:
    client = connect(environ)
    image_id, built = ensure_image(client, s, log)
    out = Outcome(exit_code=EXIT_INFRA, image_id=image_id, image_built=built)
    env = container_env(environ, s)
    own = benchmark_user(s)
    try:
        if s.mode == "baseline":
            store, extra = store_mount(s)
            # refresh has no --phase split: it runs in one container that may reach the network.
            steps = [("baseline", baseline_argv(s, store), True, extra)]
        else:
            steps = [("setup", compare_argv(s, "setup", CONTAINER_WORKSPACE), True, {}),
                     ("measure", compare_argv(s, "measure", CONTAINER_WORKSPACE), False, {})]
        for phase, argv, network, extra in steps:
            r = run_container(client, image_id, argv, phase=phase, network=network, s=s, env=env,
                              user=own.user, extra_volumes=extra, log=log)
            out.phases.append(r)
            out.cause = _phase_cause(r, s)
            out.exit_code = EXIT_INFRA if out.cause else r.exit_code
            # exit 3 from setup means a side's setup failed and was recorded: measure still runs, so
            # the report names the failed side and keeps what the other side measured.
            if out.cause or (phase == "setup" and r.exit_code not in (0, EXIT_INFRA)):
                break
    finally:
        restore_ownership(own)
    return out


def local_env(environ: Mapping[str, str], s: ActionSettings) -> dict[str, str]:
    token = environ.get("GITHUB_TOKEN") or environ.get("INPUT_GITHUB_TOKEN")
    env = {k: v for k, v in environ.items() if k not in LOCAL_STRIP and not (token and v == token)}
    if s.gpus == "none":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif s.gpus != "all":
        env["CUDA_VISIBLE_DEVICES"] = s.gpus
    if s.hardware_label:
        env["PROFOPT_HARDWARE_LABEL"] = s.hardware_label
    return env


def _cpus(cpuset: str) -> set[int]:
    cpus: set[int] = set()
    for part in cpuset.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


@contextlib.contextmanager
def commands_stopped(environ: Mapping[str, str]) -> Iterator[None]:
    """Between these lines the Actions runner reads no workflow commands from the log: a PR's code
    printing `::set-output …` or `::add-mask …` into the output is only text. (Container output
    needs no guard: every line of it is printed behind a `  [phase] ` prefix.)"""
    if environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    guard = secrets.token_hex(16)
    print(f"::stop-commands::{guard}", flush=True)
    try:
        yield
    finally:
        print(f"::{guard}::", flush=True)


def _wait_local(proc: subprocess.Popen, timeout_s: float, log: Callable[[str], None]) -> tuple[int, bool]:
    """(exit code, timed out?). At the limit: SIGINT to the group (compare writes what it measured),
    then SIGKILL after a grace period."""
    try:
        return proc.wait(timeout=timeout_s), False
    except subprocess.TimeoutExpired:
        pass
    log(f"profopt: the run went past its {timeout_s:.0f} s limit — interrupting it")
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=STOP_GRACE_S), True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(), True


def run_local(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = _say) -> Outcome:
    """The same flow without Docker: `profopt compare` as a subprocess, without the token."""
    if s.mode == "baseline":
        argv = baseline_argv(s, s.store)
    else:
        argv = compare_argv(s, "all", str(s.workspace))
    cmd = [sys.executable, "-m", "profopt_ci.cli.main", *argv]
    log(f"profopt: [local] {shlex.join(cmd)}")
    cpus = _cpus(s.cpuset) if s.cpuset else None
    preexec = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None  # noqa: E731
    with commands_stopped(environ):
        proc = subprocess.Popen(cmd, cwd=s.workspace, env=local_env(environ, s), preexec_fn=preexec,
                                start_new_session=True)
        code, timed_out = _wait_local(proc, s.timeout_s, log)
    if timed_out:
        return Outcome(exit_code=EXIT_INFRA, cause=f"timed out: the run went past its limit of "
                                                   f"{s.timeout_s / 60:g} min and was stopped")
    if code < 0 or code > 3:
        return Outcome(exit_code=EXIT_INFRA, cause=f"profopt exited with status {code} (killed or crashed)")
    return Outcome(exit_code=code)


# ---- reporting, outside the container -------------------------------------------------------------

_FAILURE_TEXT = {
    "en": ("## profopt: the benchmark run failed", "**Cause:**", "What was measured before it stopped is below."),
    "zh": ("## profopt：基准测试运行失败", "**原因：**", "以下是中止前已测得的结果。"),
}


def failure_note(cause: str, lang: str, *, partial: bool) -> str:
    title, label, partial_text = _FAILURE_TEXT.get(lang, _FAILURE_TEXT["en"])
    lines = [title, "", f"{label} {cause}", ""]
    if partial:
        lines += [partial_text, "", "---", ""]
    return "\n".join(lines)


def finish_report(s: ActionSettings, outcome: Outcome) -> tuple[Path | None, Path | None]:
    """(report, comparison) to publish; an infrastructure cause goes on top of the report."""
    report, comparison = s.workdir / "report.md", s.workdir / "comparison.json"
    have_report = report.is_file()
    if not have_report and outcome.exit_code != EXIT_OK and not outcome.cause:
        # compare stopped before writing a report (a spec or usage error): say so rather than leave
        # an earlier run's comment standing.
        outcome.cause = f"profopt exited with status {outcome.exit_code} before writing a report; see the job log"
    if outcome.cause:
        body = report.read_text(encoding="utf-8") if have_report else ""
        report.write_text(failure_note(outcome.cause, s.lang, partial=have_report) + body, encoding="utf-8")
        have_report = True
    return (report if have_report else None), (comparison if comparison.is_file() else None)


def _pr_number(environ: Mapping[str, str]) -> int | None:
    event = _event(environ)
    pr = event.get("pull_request") or {}
    number = pr.get("number") if isinstance(pr, dict) else None
    return number if isinstance(number, int) else None


def publish(s: ActionSettings, environ: Mapping[str, str], report: Path | None, comparison: Path | None,
            outcome: Outcome, log: Callable[[str], None] = _say) -> int:
    """The host side: `profopt publish` with the token (never seen by the container); without a PR
    or with comment off, only the job summary and the step outputs. Returns publish's exit code."""
    code = EXIT_OK
    output = environ.get("GITHUB_OUTPUT")
    if report is not None and s.comment and _pr_number(environ) is not None:
        cmd = [sys.executable, "-m", "profopt_ci.cli.main", "publish", "--report", str(report)]
        if comparison is not None:
            cmd += ["--comparison", str(comparison)]
        if s.hardware_label:  # one comment per hardware label: a GPU and a CPU job keep their own
            cmd += ["--label", s.hardware_label]
        env = dict(environ)
        log(f"profopt: publishing from the runner: {shlex.join(cmd)}")
        code = subprocess.run(cmd, cwd=s.workspace, env=env, check=False).returncode
        if code != 0:
            log(f"::warning title=profopt::publishing the report failed (exit {code})")
    elif report is not None:
        from profopt_ci.publish.outputs import append_summary, write_outputs

        if environ.get("GITHUB_STEP_SUMMARY"):
            append_summary(report.read_text(encoding="utf-8"), environ["GITHUB_STEP_SUMMARY"])
        if output:
            data = json.loads(comparison.read_text(encoding="utf-8")) if comparison is not None else None
            write_outputs(data, str(report), output)
        why = "comment: false" if not s.comment else "no pull request to comment on"
        where = "the job summary" if environ.get("GITHUB_STEP_SUMMARY") else str(report)
        log(f"profopt: report in {where} ({why})")
    if output:
        from profopt_ci.publish.outputs import write_output_values

        values = {"results_path": str(comparison) if comparison is not None else ""}
        if comparison is None:
            values["decision"] = "failed" if outcome.exit_code == EXIT_INFRA else ""
        write_output_values(output, values)
    return code


def push_store(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = _say) -> None:
    """Baseline mode with a git store: push the data branch from the host, where the token is."""
    from profopt_ci.gitutil import git

    kind, _, branch = s.store.partition(":")
    token = environ.get("GITHUB_TOKEN")
    if kind != "git" or not token:
        return
    if not git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], s.workspace, check=False):
        log(f"profopt: no local branch {branch} after the refresh; nothing to push")
        return
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    server = environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    env = dict(environ, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"http.{server}/.extraheader",
               GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}", GIT_TERMINAL_PROMPT="0")
    # `baseline push` rebuilds on the new tip and retries when a concurrent nightly pushed first.
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.main", "baseline", "push", "--store", s.store],
                          cwd=s.workspace, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InfraError(f"pushing the baseline store branch {branch} failed: {proc.stderr.strip()[-500:]}")
    log(f"profopt: pushed {branch}")


def run_action(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = _say) -> int:
    """The whole action. Exit: compare's own code (0/1/2/3), or 3 when the infrastructure failed."""
    check_no_persisted_token(s.workspace)
    resolve_refs(s, environ)
    prepare_workdir(s)
    started = time.monotonic()
    try:
        outcome = (run_docker if s.runner == "docker" else run_local)(s, environ, log)
    except InfraError as exc:
        outcome = Outcome(exit_code=EXIT_INFRA, cause=str(exc))
    if outcome.cause:
        log(f"::error title=profopt::{outcome.cause.splitlines()[0]}")
        print(f"profopt: {outcome.cause}", file=sys.stderr, flush=True)
    log(f"profopt: measured in {time.monotonic() - started:.1f} s, exit {outcome.exit_code}")
    if s.mode == "baseline":
        if outcome.exit_code == EXIT_OK:
            push_store(s, environ, log)
        return outcome.exit_code
    report, comparison = finish_report(s, outcome)
    published = publish(s, environ, report, comparison, outcome, log)
    if outcome.exit_code == EXIT_OK and published != EXIT_OK:
        return published
    return outcome.exit_code


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    try:
        return run_action(settings_from_args(argv, environ), environ)
    except ProfoptError as exc:
        print(f"profopt: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("profopt: interrupted", file=sys.stderr)
        return 130


__all__ = ["ActionSettings", "settings_from_args", "image_tag", "connect", "ensure_image", "container_env",
           "run_container", "run_docker", "run_local", "run_action", "main", "EXIT_USAGE"]
