#!/usr/bin/env bash
# Every GPU check of issue 27 in one call (<= 8 minutes on one GPU), run from the repository root:
#   1. a CUDA training step, compare's step time and change against the one-process truth
#      (bench/alone.py: cuda-train, whose base does a wasted 1536² matmul on the GPU, and its A/A);
#   2. the container path: the runner image started with `--gpus all` sees the device.
# The figures go to docs/gpu-check.md (linked from docs/accuracy.md) and to stdout.
# Without a CUDA device it says so, writes nothing and exits 3.
#
#   PYTHON=python3 bench/gpu_check.sh        # PYTHON: an interpreter whose torch has CUDA
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu_check: no CUDA device found ($PY: torch missing or torch.cuda.is_available() is False): nothing was checked" >&2
  exit 3
fi

out=docs/gpu-check.md
table=$(mktemp)
device=$("$PY" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"{p.name}, {p.total_memory / 2**30:.0f} GiB, torch {torch.__version__}")')
echo "gpu_check: $device"
timeout 390 "$PY" bench/alone.py --cases cuda-train cuda-train-aa --markdown "$table"

container="not checked: no Docker engine"
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  base=${PROFOPT_BASE_IMAGE:-}
  if [ -n "$base" ] && timeout 60 docker run --rm --gpus all "$base" nvidia-smi -L >/dev/null 2>&1; then
    container="docker run --gpus all $base: $(timeout 30 docker run --rm --gpus all "$base" nvidia-smi -L | head -n1)"
  else
    container="docker run --gpus all failed or PROFOPT_BASE_IMAGE unset: the NVIDIA container toolkit is needed on the runner"
  fi
fi

{
  echo "# GPU check (bench/gpu_check.sh)"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) on $device."
  echo
  cat "$table"
  echo
  echo "Container: $container"
} > "$out"
rm -f "$table"
echo "gpu_check: figures written to $out"
