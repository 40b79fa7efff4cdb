#!/usr/bin/env bash
# The load sweep on the H200: each launched `transformers serve` is probed at Poisson request
# rates, bisecting for the highest rate within p99 TTFT 1 s (tests/gpu/h200-slo.yaml). The
# console, status and each trial's probes are written to $OUT as they come.
#
# There (the device tool, carry [".whl"]):   bash tests/gpu/slo_sweep.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
export AUTOTUNE_NODE_STATE=/tmp/autotune-node
where=(--study h200-slo --study-root /tmp/autotune-studies)
python3 -m autotune.cli start --space tests/gpu/h200-slo.yaml "${where[@]}" \
    --executor local --no-mlflow --baseline-launches 1 --no-confirm --seed 0 \
    --n-trials "${TRIALS:-4}" 2>&1 | tee "$OUT/h200-slo-console.txt"
python3 -m autotune.cli status "${where[@]}" --json > "$OUT/h200-slo-status.json"
for n in 0 1 2 3 4 5; do
    python3 -m autotune.cli status "${where[@]}" --trial "$n" > "$OUT/h200-slo-trial-$n.txt" 2>&1 \
        || break
done
