#!/usr/bin/env bash
# On the GPU machine: install the carried parts, then run (or resume) a study of a real engine
# through the real loop (a local Ray head, the engine's own server, the GPU checked idle after
# every trial) for at most SECONDS, and leave the study's storage and logs in $OUT.
#
#   bash tests/gpu/engine_study.sh SPACE SECONDS [autotune start options...]
#
# Here, first:  python3 tools/offline/build.py node sglang     (tools/offline/README.md)
# Device tool:  carry [".carry/node"] in a first short run, then [".carry/sglang", "studies"];
#               a study longer than one run resumes from studies/<name>/study.db, brought back from $OUT and carried again.
# No launch (search, confirmation) starts that the study's median launch says would end within
# RESERVE_S (default 90: a launch can take longer than the median) seconds of the end; the run
# is interrupted (Ctrl-C: the trial in flight is recorded as interrupted and run again on
# resume) 40 seconds before SECONDS.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 SPACE SECONDS [autotune start options...]" >&2; exit 2; }
space=$1; budget=$2; shift 2
T0=$SECONDS
# the space's engine (its part alone goes on the path; nothing but the stdlib is there yet)
engine=$(awk '/^engine:/ {e = 1; next} e && /^[^ #]/ {e = 0} e && /^ +name:/ {print $2; exit}' "$space")
source tests/gpu/engine_env.sh
name=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$space")
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader \
    | sed 's/^/gpu: /'
  python3 -c 'import sys, torch, ray, optuna; print("python", sys.version.split()[0], "torch",
torch.__version__, "ray", ray.__version__, "optuna", optuna.__version__)'
  python3 -c 'import importlib.metadata as m
for d in ("sglang", "vllm", "transformers", "flashinfer-python"):
    try: print(d, m.version(d))
    except m.PackageNotFoundError: pass'
} 2>&1 | tee "$OUT/versions.txt"
left=$((budget - (SECONDS - T0)))
status=0
# --foreground: one SIGINT to autotune alone (GNU timeout otherwise signals the whole process
# group too, and a second Ctrl-C forces the stop without tearing the trial down).
timeout --foreground -s INT -k 30 $((left - 40)) python3 -m autotune.cli start --space "$space" \
  --executor ray --no-mlflow --time-limit $((left - ${RESERVE_S:-90})) "$@" \
  > >(tee "$OUT/start.log") 2>&1 || status=$?
echo "autotune start exited $status after $((SECONDS - T0)) s" | tee -a "$OUT/start.log"
# The GPU back to idle (a server torn down late by its own shutdown path included).
for _ in $(seq 30); do
  used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1)
  [ "${used:-0}" -lt 1024 ] && break
  sleep 2
done
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | sed 's/^/gpu memory after: /' \
  | tee -a "$OUT/start.log"
python3 -m autotune.cli status --study "$name" > "$OUT/status.txt" 2>&1 || true
cp "studies/$name/study.db" "$OUT/study.db"
tar -cJf "$OUT/logs.tar.xz" -C "studies/$name" logs
exit "$status"
