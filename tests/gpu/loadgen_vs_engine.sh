#!/usr/bin/env bash
# On the GPU machine: one server of a real engine on its default flags, measured alternately
# by autotune's load generator and by the engine's own serving benchmark (bench/loadgen.py
# --url), with the study's workload. Output in $OUT/loadgen.txt, the server's log beside it.
#
#   bash tests/gpu/loadgen_vs_engine.sh vllm|sglang [REPEAT]
#
# Device tool: carry [".carry/node", ".carry/<engine>"] (tools/offline/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
engine=$1; repeat=${2:-3}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
eval "$(python3 tools/offline/install.py --env)"
export PYTHONPATH="$PWD/src:$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 AUTOTUNE_CACHE_DIR=/tmp/autotune-cache
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
model=$(python3 -c 'from autotune.engines import dummymodel; print(dummymodel.ensure("dummy:llama-3-8b"))')
port=31000
case $engine in
  vllm) VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve "$model" \
          --served-model-name m --load-format dummy --max-model-len 4096 --port $port \
          > "$OUT/server.log" 2>&1 & ;;
  sglang) python3 -m sglang.launch_server --model-path "$model" --served-model-name m \
          --load-format dummy --attention-backend triton --sampling-backend pytorch \
          --port $port > "$OUT/server.log" 2>&1 & ;;
  *) echo "engine: vllm or sglang, not $engine" >&2; exit 2 ;;
esac
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" \
    2>/dev/null && break
  kill -0 $server 2>/dev/null || { tail -20 "$OUT/server.log"; exit 1; }
  sleep 1
done
echo "ready after $SECONDS s" | tee "$OUT/loadgen.txt"
python3 bench/loadgen.py --url "http://127.0.0.1:$port" --model m --tokenizer "$model" \
  --engine-bench "$engine" --repeat "$repeat" --streams 256 --requests 1024 --tokens 256 \
  --prompt-len 512 2>&1 | tee -a "$OUT/loadgen.txt"
