#!/usr/bin/env bash
# Runs bench/slo_sweep_h200.yaml on the H200 test machine (no registry there; the device tool
# with carry [".whl"], as tests/gpu/run.sh): every configuration of the space once, each
# trial bisecting the highest concurrency within p99 TTFT 500 ms on one running server.
# Prints the study's table and each trial's probes; copies the study to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
ROOT=/tmp/slo-studies
python3 -m autotune.cli start --space bench/slo_sweep_h200.yaml --executor local --no-mlflow \
    --n-trials 3 --baseline-launches 1 --no-confirm --seed 0 --study-root "$ROOT" -q || true
python3 -m autotune.cli status --study-root "$ROOT"
for n in 0 1 2 3 4 5; do python3 -m autotune.cli status --study-root "$ROOT" --trial "$n" 2>/dev/null | grep -E "^trial|^workload|sweep:" || true; done
python3 -m autotune.cli status --study-root "$ROOT" --json > "$OUT/status.json"
