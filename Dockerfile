# The runner image: profopt and its dependencies in /opt/profopt, git, a non-root user.
# Built by src/profopt_ci/action/image.py and tagged by a hash of this file, pyproject.toml and src/,
# so an unchanged image is reused. torch and other benchmark dependencies are NOT baked in: the
# spec's `setup` installs what each side needs (with network), and measurement runs offline.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/profopt \
    PATH=/opt/profopt/bin:$PATH

# git for worktrees and valgrind for `instrument: instructions` (callgrind); installed only when
# the base image lacks one of them (the slim Python image lacks both).
# hadolint ignore=DL3008
RUN if ! command -v git >/dev/null || ! command -v valgrind >/dev/null; then \
      apt-get update \
      && apt-get install -y --no-install-recommends git ca-certificates valgrind \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
    && git config --system --add safe.directory '*' \
    && python3 -m venv /opt/profopt

# Dependencies and the build backend (with wheel: an older setuptools needs it) first, from
# pyproject.toml alone, so a change under src/ reuses this layer and builds profopt without
# fetching the backend again.
WORKDIR /opt/profopt/src
COPY pyproject.toml ./
# The `gpu` extra too (nvidia-ml-py, pure Python): measuring runs in here, and reads a GPU's clocks,
# power and energy through the driver's NVML that `--gpus all` mounts (measure/gpu.py).
RUN python3 -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); print("\n".join(p["project"]["dependencies"] + p["project"]["optional-dependencies"]["gpu"] + p["build-system"]["requires"] + ["wheel"]))' > /tmp/requirements.txt \
    && pip install --no-compile -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# pyproject names README.md as the long description; the image does not need the real one.
COPY src ./src
RUN touch README.md \
    && pip install --no-deps --no-build-isolation --no-compile . \
    && rm -rf build ./*.egg-info src/*.egg-info \
    && python3 -c 'import profopt_ci, sys; print("profopt", profopt_ci.__version__, sys.version)'

# Benchmarks run as this user; the entrypoint maps it onto the workspace owner's uid when that is
# not root, so files written into the mounted workspace stay owned by the runner.
RUN useradd --create-home --uid 10001 --shell /bin/bash profopt
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["profopt"]
CMD ["--help"]
