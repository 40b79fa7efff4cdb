#!/usr/bin/env bash
# autotune: best configuration of study h200c (trial 0)
# output_tok_s (maximize): 98.02
# no configuration beat the baseline beyond noise: -1.4% (95% CI -42.3% .. +68.5%, 2 vs 2 launches) (confirmed)
# this is the BASELINE: keep your current configuration
# engine: transformers unknown version
# GPU: 1x NVIDIA H200
# exported 2026-11-30T15:08:47+00:00 by autotune unknown
set -euo pipefail

export HF_HUB_DISABLE_UPDATE_CHECK=1
export HF_HUB_OFFLINE=1
export HF_HUB_DISABLE_PROGRESS_BARS=1
export TOKENIZERS_PARALLELISM=false

/opt/torch/.venv/bin/python3 -m transformers.cli.transformers serve /root/.cache/autotune/models/tiny-llama-gpu-996dbd735f21 \
  --host 127.0.0.1 \
  --port 30000 \
  --device cuda \
  --log-level info
