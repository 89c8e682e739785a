#!/usr/bin/env bash
# Every GPU check in one call (<= 8 minutes on one GPU), run from the repository root:
#   1. the device, its settings as the fingerprint lists them, and the NVML telemetry read back
#      (clocks, power, temperature, throttle reasons, how often the energy counter moves);
#   2. a CUDA training step's compare against the one-process truth and its A/A (bench/alone.py:
#      cuda-train, whose base does a wasted 1536² matmul), with the energy per step, the telemetry
#      and the device-memory peaks those comparisons carry;
#   3. a torch.compile (inductor) CUDA step whose head adds a graph break: the breaks per side, and
#      no compile inside a timed value (2 and 3: bench/gpu_check.py);
#   4. the container path: the runner image started with `--gpus all` sees the device.
# The figures go to docs/gpu-check.md and to stdout.
#
# Without a CUDA device it says so on stderr, writes nothing and exits 3 (profopt's exit code for
# an infrastructure that cannot run the benchmark). Without nvidia-ml-py it still runs and says that
# no telemetry could be read.
#
#   PYTHON=python3 bench/gpu_check.sh     # PYTHON: an interpreter whose torch has CUDA (+ nvidia-ml-py)
#   PROFOPT_BASE_IMAGE=IMAGE              # the runner image for step 4 (skipped when unset or no Docker)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu_check: no CUDA device found ($PY: torch missing or torch.cuda.is_available() is False): nothing was checked" >&2
  exit 3
fi
if ! "$PY" -c 'import pynvml' 2>/dev/null; then
  echo "gpu_check: nvidia-ml-py is not installed for $PY (pip install nvidia-ml-py): telemetry will be absent" >&2
fi

out=docs/gpu-check.md
body=$(mktemp)
trap 'rm -f "$body"' EXIT
started=$(date -u +%Y-%m-%dT%H:%MZ)
# 7 minutes for the Python checks, the rest for the container
timeout 450 "$PY" bench/gpu_check.py --out "$body" --budget-s 420 || echo "gpu_check: bench/gpu_check.py exited $?" >&2

container="not checked: no Docker engine on this machine"
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  base=${PROFOPT_BASE_IMAGE:-}
  if [ -z "$base" ]; then
    container="not checked: PROFOPT_BASE_IMAGE is unset (the runner image to start with --gpus all)"
  elif line=$(timeout 60 docker run --rm --gpus all "$base" nvidia-smi -L 2>&1 | head -n1) && [[ $line == GPU* ]]; then
    container="docker run --gpus all $base sees: $line"
  else
    container="docker run --gpus all $base failed (${line:-no output}): the NVIDIA container toolkit is needed on the runner"
  fi
fi

{
  echo "# GPU check (bench/gpu_check.sh)"
  echo
  echo "Run $started (UTC), one call of bench/gpu_check.sh."
  echo
  cat "$body" 2>/dev/null || echo "bench/gpu_check.py wrote nothing."
  echo
  echo "## Container"
  echo
  echo "$container"
} > "$out"
echo "gpu_check: container: $container"
echo "gpu_check: figures written to $out"
