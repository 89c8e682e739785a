"""What the action's image costs: a cold build, a rebuild after a change under src/ (the
dependency layer cached), and the reuse of an unchanged image (no build at all).

Needs a Docker engine and a base image to build FROM:

    BASE=$(../shared/tools/docker-up | tail -n1)
    python bench/action_image.py --base-image "$BASE"

The cold build fetches the dependencies from the package index, so it depends on the network too.
Tags made here (profopt-bench-*) are removed at the end; the layers stay in the engine's cache.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import docker

from profopt_ci.action import image as action_image
from profopt_ci.action import inputs as action_inputs

ROOT = Path(__file__).resolve().parent.parent


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def settings(context: Path, base_image: str, repo: str, workdir: Path) -> action_inputs.ActionSettings:
    s = action_inputs.ActionSettings(workspace=workdir, action_path=context, base_image=base_image, image_repo=repo)
    (s.workdir / "logs").mkdir(parents=True, exist_ok=True)
    return s


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base-image", default=action_inputs.DEFAULT_BASE_IMAGE)
    args = p.parse_args()
    client = docker.from_env(timeout=600)
    quiet = lambda line: None  # noqa: E731
    tags = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ctx = tmp / "ctx"
        shutil.copytree(ROOT, ctx, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info",
                                                                  ".profopt", "tests", "bench", "docs"))
        work = tmp / "ws"
        work.mkdir()

        # Cold: no layer cache at all (what a fresh hosted runner pays).
        tag, digest = action_image.image_tag(ctx, base_image=args.base_image, repo="profopt-bench-cold")
        cold, _ = timed(lambda: list(client.api.build(path=str(ctx), tag=tag, nocache=True, rm=True, decode=True,
                                                       buildargs={"BASE_IMAGE": args.base_image})))
        tags.append(tag)

        # A change under src/: the dependency layer is reused, only the package is reinstalled.
        (ctx / "src" / "profopt_ci" / "_bench_marker.py").write_text(f"STAMP = {time.time()!r}\n")
        s = settings(ctx, args.base_image, "profopt-bench-src", work)
        warm, (image_id, built) = timed(lambda: action_image.ensure_image(client, s, quiet))
        assert built
        tags.append(action_image.image_tag(ctx, base_image=args.base_image, repo="profopt-bench-src")[0])

        # Unchanged: found by its tag, no build.
        reuse, (again, built_again) = timed(lambda: action_image.ensure_image(client, s, quiet))
        assert not built_again and again == image_id

        size_mb = client.images.get(image_id).attrs["Size"] / 2**20
    for t in tags:
        client.images.remove(t, noprune=True)
    print(f"base image           {args.base_image}")
    print(f"cold build           {cold:6.1f} s   (no cache; dependencies fetched from the index)")
    print(f"rebuild, src changed {warm:6.1f} s   (dependency layer cached)")
    print(f"reuse, unchanged     {reuse:6.2f} s   (tag lookup, no build)")
    print(f"image size           {size_mb:6.0f} MB")


if __name__ == "__main__":
    main()
