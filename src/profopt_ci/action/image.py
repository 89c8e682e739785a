"""The runner image: found by the hash of what it is built from, else built once.

In: the action's checkout (Dockerfile, pyproject.toml, src/), the base image, and a Docker client
(`connect`, from the job's environment: DOCKER_HOST or the default socket). Out: the image id and
whether it was built now; the build's log in `.profopt/logs/image-build.log`. An engine that does
not answer, a missing image or a failed build is a `CauseError` (exit 3) naming what failed.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from profopt_ci.action.host_venv import source_files
from profopt_ci.action.inputs import DEFAULT_BASE_IMAGE, DEFAULT_IMAGE_REPO, ActionSettings
from profopt_ci.action.outcome import CauseError, say

HASH_LABEL = "org.profopt.source-hash"


def short(exc: BaseException, limit: int = 300) -> str:
    """An engine's error on one line, cut to `limit` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def image_tag(context: Path, dockerfile: str = "Dockerfile", base_image: str = DEFAULT_BASE_IMAGE,
              repo: str = DEFAULT_IMAGE_REPO) -> tuple[str, str]:
    """(tag, full hash): what the image is built from — the Dockerfile, the base image and the
    package sources — so an unchanged image is found by its tag and reused."""
    h = hashlib.sha256(b"profopt-image-v1\0" + base_image.encode() + b"\0")
    for path in source_files(context, (dockerfile, ".dockerignore")):
        h.update(str(path.relative_to(context)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    digest = h.hexdigest()
    return f"{repo}:{digest[:16]}", digest


def connect(environ: Mapping[str, str] = os.environ):
    """A docker client that answered a ping, or CauseError naming where it looked."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise CauseError("action.cause.no_docker_package") from None
    where = environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.DockerClient.from_env(environment=dict(environ), timeout=120)
        client.ping()
    except (DockerException, OSError) as exc:
        raise CauseError("action.cause.no_engine", where=where, detail=short(exc)) from None
    return client


def ensure_image(client, s: ActionSettings, log: Callable[[str], None] = say) -> tuple[str, bool]:
    """(image id, built?): the `image` input as it is, else the image tagged with the sources' hash,
    else one built now."""
    from docker.errors import ImageNotFound

    if s.image:
        try:
            return client.images.get(s.image).id, False
        except ImageNotFound:
            raise CauseError("action.cause.no_image", image=repr(s.image)) from None
    if not (s.action_path / s.dockerfile).is_file():
        raise CauseError("action.cause.no_dockerfile", dockerfile=s.dockerfile, path=str(s.action_path))
    tag, digest = image_tag(s.action_path, s.dockerfile, s.base_image, s.image_repo)
    try:
        image = client.images.get(tag)
        log(f"profopt: reusing image {tag} ({image.id[:19]}): Dockerfile and sources unchanged")
        return image.id, False
    except ImageNotFound:
        pass
    log(f"profopt: building image {tag} from {s.action_path / s.dockerfile} (BASE_IMAGE={s.base_image})")
    started = time.monotonic()
    image_id = _build(client, s, tag, digest, log)
    log(f"profopt: built image {tag} ({image_id[:19]}) in {time.monotonic() - started:.1f} s")
    return image_id, True


def _build(client, s: ActionSettings, tag: str, digest: str, log: Callable[[str], None]) -> str:
    """Build `tag`, streaming the engine's lines to the log and to image-build.log; the image id."""
    from docker.errors import APIError, ImageNotFound

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
                    raise _build_failure(tag, detail, tail, build_log)
                text = chunk.get("stream") or chunk.get("status") or ""
                if text:
                    fh.write(text if text.endswith("\n") else text + "\n")
                    for line in text.splitlines():
                        if line.strip():
                            tail = (tail + [line])[-15:]
                            log(f"  [build] {line}")
    except APIError as exc:
        raise _build_failure(tag, short(exc, 1000), tail, build_log) from None
    try:
        return client.images.get(tag).id
    except ImageNotFound:
        raise _build_failure(tag, "the engine reported no image after the build", tail, build_log) from None


def _build_failure(tag: str, detail: str, tail: list[str], log_path: Path) -> CauseError:
    lines = "\n".join(f"    {t}" for t in tail[-8:])
    return CauseError("action.cause.build_failed", tag=tag, detail=detail.strip(), lines=lines, log=str(log_path))
