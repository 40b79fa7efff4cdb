#!/usr/bin/env bash
# Runs the GPU tests on the H200 test machine (no registry there): install the carried wheels
# into /tmp/site, put src/ on the path, run pytest -m gpu. Results land in $OUT (or ./gpu-out).
#
# Here, once:   bash tests/gpu/fetch_wheels.sh            (transformers serve: 10 MB in .whl/)
#               python3 tools/offline/build.py node sglang   (real engines: .carry/, see
#               tools/offline/README.md; vllm is a part of its own, two runs to carry)
# There:        bash tests/gpu/run.sh [pytest args]       (the device tool: carry [".whl"] or
#               [".carry/node"] staged first, then [".carry/sglang"]);
#               default: every test under tests/gpu
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then  # transformers serve's server side (fetch_wheels.sh)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if ls .carry/*/manifest.json >/dev/null 2>&1; then  # tools/offline parts: node, sglang, vllm
  eval "$(python3 tools/offline/install.py --env)"
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export AUTOTUNE_GPU_OUT="$OUT" PYTHONUNBUFFERED=1
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c 'import sys, torch, transformers, optuna; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "optuna", optuna.__version__)'
} | tee "$OUT/versions.txt"
python3 -m pytest -p no:cacheprovider -o addopts="" -m gpu -x -q -s \
    --junitxml="$OUT/junit.xml" "${@:-tests/gpu}" 2>&1 | tee "$OUT/pytest.log"
