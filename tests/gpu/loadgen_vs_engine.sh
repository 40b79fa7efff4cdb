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
source tests/gpu/engine_env.sh
model=$(python3 -c 'from autotune.engines import dummymodel; print(dummymodel.ensure("dummy:llama-3-8b"))')
port=31000
engine_server "$engine" "$model" $port || exit 2
"${SERVER_ARGV[@]}" > "$OUT/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" \
    2>/dev/null && break
  kill -0 $server 2>/dev/null || { tail -20 "$OUT/server.log"; exit 1; }
  sleep 1
done
echo "ready after $SECONDS s" | tee "$OUT/loadgen.txt"
# The studies' workload (search_spaces/sglang-gpu.yaml): prompts of 256-512 tokens, outputs of
# 192-384, uniform (one range ratio, as both engines' benchmarks take it), 768 a run.
python3 bench/loadgen.py --url "http://127.0.0.1:$port" --model m --tokenizer "$model" \
  --engine-bench "$engine" --repeat "$repeat" --streams 256 --requests 768 \
  --prompt-len 512 --prompt-min 256 --tokens 384 --tokens-min 192 2>&1 | tee -a "$OUT/loadgen.txt"
