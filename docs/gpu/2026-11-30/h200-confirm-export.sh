#!/usr/bin/env bash
# autotune: best configuration of study h200-confirm (trial 7)
# output_tok_s (maximize): 1,094.6 vs baseline 65.84 (+1248.9%)
# gain over the baseline +1248.9% (95% CI +635.6% .. +2373.7%, 3 vs 3 launches) (confirmed)
# config: continuous_batching=True cb_use_cuda_graph=True dtype=float32 attn_implementation=eager
# engine: transformers unknown version
# GPU: 1x NVIDIA H200
# exported 2026-11-30T16:29:21+00:00 by autotune unknown
set -euo pipefail

export HF_HUB_DISABLE_UPDATE_CHECK=1
export HF_HUB_OFFLINE=1
export HF_HUB_DISABLE_PROGRESS_BARS=1
export TOKENIZERS_PARALLELISM=false

/opt/torch/.venv/bin/python3 -m transformers.cli.transformers serve /root/.cache/autotune/models/tiny-llama-gpu-996dbd735f21 \
  --host 127.0.0.1 \
  --port 30000 \
  --device cuda \
  --log-level info \
  --continuous-batching \
  --cb-use-cuda-graph \
  --dtype float32 \
  --attn-implementation eager
