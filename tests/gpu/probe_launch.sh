#!/usr/bin/env bash
# On the GPU machine: launch a real engine once per FLAGS string, each until it is ready, exits
# or SECONDS pass, keep each server log in $OUT/probe-<n>.log, and say what `autotune diagnose`
# names in it. For recording real failures as test data (tests/data/gpu-crashlogs/).
#
#   bash tests/gpu/probe_launch.sh sglang SECONDS "FLAGS" ["FLAGS"...]
#   e.g. bash tests/gpu/probe_launch.sh sglang 150 "--mem-fraction-static 0.99"
#
# Device tool: as engine_study.sh (tests/gpu/README.md). FLAGS is split on spaces, never run
# by a shell. Every launch uses the study's model (dummy:llama-3-8b) and the baseline's flags.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { echo "usage: $0 sglang|vllm SECONDS FLAGS..." >&2; exit 2; }
engine=$1; limit=$2; shift 2
source tests/gpu/engine_env.sh
model=$(python3 -c 'from autotune.engines import dummymodel; print(dummymodel.ensure("dummy:llama-3-8b"))')
port=31000
n=0
for flags in "$@"; do
  n=$((n + 1))
  read -ra extra <<< "$flags"
  engine_server "$engine" "$model" $port || exit 2
  log="$OUT/probe-$n.log"
  echo "# $engine ${SERVER_ARGV[*]:3} ${extra[*]}" > "$log"
  "${SERVER_ARGV[@]}" "${extra[@]}" >> "$log" 2>&1 &
  server=$!
  t0=$SECONDS; state=timeout; code=
  while [ $((SECONDS - t0)) -lt "$limit" ]; do
    if ! kill -0 $server 2>/dev/null; then
      code=0; wait $server || code=$?
      state="exited $code"; break
    fi
    if python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; then
      state=ready; break
    fi
    sleep 2
  done
  kill $server 2>/dev/null || true
  wait $server 2>/dev/null || true
  pkill -f "port $port" 2>/dev/null || true
  for _ in $(seq 30); do
    used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1)
    [ "${used:-0}" -lt 1024 ] && break
    sleep 2
  done
  echo "probe $n: ${extra[*]}: $state after $((SECONDS - t0)) s"
  # (head closes the pipe early: under pipefail that must not end the loop)
  python3 -m autotune.cli diagnose "$log" ${code:+--exit-code "$code"} 2>&1 | head -8 \
    | sed 's/^/  /' || true
done
