# Sourced by the GPU machine's engine scripts (engine_study.sh, loadgen_vs_engine.sh,
# probe_launch.sh), from the repository's root: the carried parts installed, the environment
# every run of a real engine there shares, $OUT made, and `engine_server ENGINE MODEL PORT`,
# which sets SERVER_ARGV to the engine's server on its defaults (the baseline's flags).
# A script that sets $engine first gets that engine's part alone on the path (with node):
# SGLang's and vLLM's parts each bring their own dependencies (openai, transformers, ...), at
# versions that differ, so a machine that has both unpacked must not import one's from the other.
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
eval "$(python3 tools/offline/install.py --env ${engine:+node "$engine"})"
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 AUTOTUNE_CACHE_DIR=/tmp/autotune-cache
# NVLink multicast stays off on every machine these studies run on (device tool's rules).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# vLLM's FlashInfer sampler compiles on first use (as in search_spaces/vllm-gpu.yaml).
export VLLM_USE_FLASHINFER_SAMPLER=0

engine_server() {
  local engine=$1 model=$2 port=$3
  case $engine in
    sglang) SERVER_ARGV=(python3 -m sglang.launch_server --model-path "$model"
                         --served-model-name m --load-format dummy --attention-backend triton
                         --sampling-backend pytorch --port "$port") ;;
    vllm) SERVER_ARGV=(python3 -m vllm.entrypoints.cli.main serve "$model" --served-model-name m
                       --load-format dummy --max-model-len 4096 --port "$port") ;;
    *) echo "engine: sglang or vllm, not $engine" >&2; return 2 ;;
  esac
}
