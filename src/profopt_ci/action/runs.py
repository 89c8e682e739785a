"""The two runs in containers: setup with the network, measure without it.

In: a Docker client and image id (image.py), the settings, the job's environment and the user
from workspace.py. Out: an `Outcome`: compare's own exit code, or 3 and a `Cause` (out of memory,
out of time, a crash, a container that could not start); each container's output in the job log
behind a `  [phase] ` prefix and in `.profopt/logs/container-PHASE.log`.

Each container gets the workspace mounted at /work, an environment built from an allowlist (never
the token; profopt's cache dir in the workspace, the event's action and labels alone), no capabilities, no new privileges, and the optional cpuset, memory limit and GPUs.
"""
from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profopt_ci.action.image import connect, ensure_image, short
from profopt_ci.action.inputs import ActionSettings
from profopt_ci.action.outcome import Cause, CauseError, Outcome, PhaseResult, say
from profopt_ci.action.workspace import (
    baseline_argv,
    benchmark_user,
    cache_dir,
    compare_argv,
    event_for_compare,
    restore_ownership,
)
from profopt_ci.errors import EXIT_INFRA
from profopt_ci.measure.processes import SECRET_NAME

CONTAINER_WORKSPACE = "/work"
CONTAINER_STORE = "/store"
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


def container_env(environ: Mapping[str, str], s: ActionSettings, event: Path | None = None) -> dict[str, str]:
    """Built from an allowlist, never from the host environment wholesale: no token gets in. The
    cache dir is the workspace's .profopt/cache (what actions/cache keeps between jobs); `event`, the
    event's action and labels alone (workspace.event_for_compare), as GITHUB_EVENT_PATH."""
    env = {k: environ[k] for k in ENV_ALLOWLIST if k in environ and not SECRET_NAME.search(k)}
    secrets = {environ[k] for k in environ if SECRET_NAME.search(k) and environ[k]}
    env = {k: v for k, v in env.items() if v not in secrets}
    env.update({"HOME": "/tmp", "PYTHONUNBUFFERED": "1", "PROFOPT_IN_CONTAINER": "1",
                "PROFOPT_CACHE_DIR": _inside(cache_dir(s), s)})
    if event is not None:
        env["GITHUB_EVENT_PATH"] = _inside(event, s)
    if s.hardware_label:
        env["PROFOPT_HARDWARE_LABEL"] = s.hardware_label
    return env


def _inside(path: Path, s: ActionSettings) -> str:
    """A path in the workspace as the container sees it."""
    return f"{CONTAINER_WORKSPACE}/{path.relative_to(s.workspace).as_posix()}"


def device_requests(gpus: str) -> list:
    """The engine's GPU request for the `gpus` input: none, all, or the listed device ids."""
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


def _container_kwargs(argv: list[str], phase: str, network: bool, s: ActionSettings, env: dict[str, str],
                      user: str, extra_volumes: dict | None) -> dict[str, Any]:
    volumes = {str(s.workspace): {"bind": CONTAINER_WORKSPACE, "mode": "rw"}, **(extra_volumes or {})}
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
    return kwargs


def _start(client, image_id: str, kwargs: dict[str, Any], phase: str, s: ActionSettings):
    from docker.errors import APIError, DockerException

    try:
        return client.containers.run(image_id, **kwargs)
    except (APIError, DockerException) as exc:
        if not s.keep_containers:  # created but never started (a GPU request no runtime can meet…)
            for left in client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={s.run_id}",
                                                                  "status": "created"}):
                left.remove(force=True)
        gpu = s.gpus != "none" and "gpu" in str(exc).lower()
        raise CauseError("action.cause.no_start_gpu" if gpu else "action.cause.no_start",
                         phase=phase, detail=short(exc, 600)) from None


def run_container(client, image_id: str, argv: list[str], *, phase: str, network: bool, s: ActionSettings,
                  env: dict[str, str], user: str, extra_volumes: dict | None = None,
                  log: Callable[[str], None] = say) -> PhaseResult:
    """One `profopt` process in a fresh container; logs streamed; SIGINT then SIGKILL at the limit."""
    from docker.errors import DockerException

    log(f"profopt: [{phase}] docker run {image_id[:19]} profopt {shlex.join(argv)} "
        f"(network {'default' if network else 'none'}, user {user}"
        + (f", cpuset {s.cpuset}" if s.cpuset else "") + (f", gpus {s.gpus}" if s.gpus != "none" else "")
        + (f", memory {s.memory}" if s.memory else "") + ")")
    container = _start(client, image_id, _container_kwargs(argv, phase, network, s, env, user, extra_volumes),
                       phase, s)
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
                log(f"profopt: could not remove container {container.id[:12]}: {short(exc)}")
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


def phase_cause(r: PhaseResult, s: ActionSettings) -> Cause | None:
    """Why a container's run is an infrastructure failure (memory, time, a crash), or None."""
    if r.oom:
        if s.memory:
            return Cause("action.cause.oom", {"phase": r.phase, "memory": s.memory})
        return Cause("action.cause.oom_host", {"phase": r.phase})
    if r.timed_out:
        return Cause("action.cause.container_timeout", {"phase": r.phase, "minutes": f"{s.timeout_s / 60:g}"})
    if r.exit_code not in (0, 1, 2, 3):
        return Cause("action.cause.container_status", {"phase": r.phase, "code": r.exit_code})
    return None


def _steps(s: ActionSettings) -> list[tuple[str, list[str], bool, dict]]:
    """(phase, argv, network?, extra mounts) for each container of this mode."""
    if s.mode == "baseline":
        store, extra = store_mount(s)
        # refresh has no --phase split: it runs in one container that may reach the network.
        return [("baseline", baseline_argv(s, store), True, extra)]
    return [("setup", compare_argv(s, "setup", CONTAINER_WORKSPACE), True, {}),
            ("measure", compare_argv(s, "measure", CONTAINER_WORKSPACE), False, {})]


def run_docker(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> Outcome:
    """Every container of this mode in turn, stopping at an infrastructure failure."""
    client = connect(environ)
    image_id, built = ensure_image(client, s, log)
    out = Outcome(exit_code=EXIT_INFRA, image_id=image_id, image_built=built)
    env = container_env(environ, s, event_for_compare(s, environ) if s.mode != "baseline" else None)
    own = benchmark_user(s)
    try:
        for phase, argv, network, extra in _steps(s):
            r = run_container(client, image_id, argv, phase=phase, network=network, s=s, env=env,
                              user=own.user, extra_volumes=extra, log=log)
            out.phases.append(r)
            out.cause = phase_cause(r, s)
            out.exit_code = EXIT_INFRA if out.cause else r.exit_code
            # exit 3 from setup means a side's setup failed and was recorded: measure still runs, so
            # the report names the failed side and keeps what the other side measured.
            if out.cause or (phase == "setup" and r.exit_code not in (0, EXIT_INFRA)):
                break
    finally:
        restore_ownership(own)
    return out
