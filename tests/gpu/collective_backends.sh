#!/usr/bin/env bash
# The all-reduce implementations side by side on this machine's GPUs: NCCL against PyTorch's
# symmetric-memory one-shot and two-shot all-reduce (multicast off), eager back-to-back and
# captured in a CUDA graph, at 42 KB, 256 KB and 4 MB, each configuration launched LAUNCHES
# times (launch-to-launch spread is part of the answer). Prints a markdown table and writes
# it, with every launch's raw metrics, to $OUT.
#
# On the 2-H200 machine (the device tool, nothing carried: torch is there):
#     bash tests/gpu/collective_backends.sh            # LAUNCHES=3 ITERS=200 SAMPLES=20
#     LAUNCHES=5 bash tests/gpu/collective_backends.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
# NVLink multicast stays off in every launch (the bench forces these too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
GPUS="${GPUS:-$(nvidia-smi -L | wc -l)}"
LAUNCHES="${LAUNCHES:-3}" ITERS="${ITERS:-200}" SAMPLES="${SAMPLES:-20}"
SIZES="42K,256K,4M"
RAW="$OUT/collective-backends.jsonl"
: > "$RAW"
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  nvidia-smi topo -m | head -4
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'
} | tee "$OUT/collective-backends-versions.txt"

for launch in $(seq 1 "$LAUNCHES"); do
  for impl in nccl symm_mem_one_shot symm_mem_two_shot; do
    for mode in eager graph; do
      log="$OUT/collective-$impl-$mode-$launch.log"
      # Symmetric-memory processes were seen slow to exit: every launch has a time limit.
      timeout 300 python3 -m torch.distributed.run --standalone --nproc-per-node "$GPUS" \
        -m autotune.engines.collective_bench --sizes "$SIZES" --dtype bf16 \
        --iters "$ITERS" --samples "$SAMPLES" --warmup 20 --mode "$mode" --allreduce "$impl" \
        > "$log" 2>&1
      rc=$?
      python3 - "$log" "$impl" "$mode" "$launch" "$rc" >> "$RAW" <<'EOF'
import json, sys
log, impl, mode, launch, rc = sys.argv[1:]
metrics = None
for line in open(log, errors="replace"):
    if line.startswith("AUTOTUNE_METRICS "):
        metrics = json.loads(line[len("AUTOTUNE_METRICS "):])
lines = open(log, errors="replace").read().strip().splitlines()
# torchrun ends with a banner; the cause is the bench's own error line or the last exception.
said = [l for l in lines if "collective_bench: error" in l]
said = said or [l for l in lines if "Error" in l and "ChildFailedError" not in l]
tail = (said or lines)[-1:] if metrics is None else []
print(json.dumps({"impl": impl, "mode": mode, "launch": int(launch), "rc": int(rc),
                  "metrics": metrics, "error": tail[0][:300] if tail else None}))
EOF
      echo "launch $launch $impl $mode: rc $rc"
    done
  done
done

python3 - "$RAW" <<'EOF' | tee "$OUT/collective-backends.md"
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
sizes = ["42k", "256k", "4m"]
print("| all-reduce | mode | floor p50 | " + " | ".join(f"{s.upper()} p50 (range) | {s.upper()} p99" for s in sizes) + " | launches ok |")
print("| --- | --- | ---: | " + " | ".join("---: | ---:" for _ in sizes) + " | ---: |")
for impl in ("nccl", "symm_mem_one_shot", "symm_mem_two_shot"):
    for mode in ("eager", "graph"):
        mine = [r for r in rows if r["impl"] == impl and r["mode"] == mode]
        ok = [r["metrics"] for r in mine if r["metrics"]]
        if not ok:
            err = next((r["error"] for r in mine if r["error"]), "no metrics")
            print(f"| {impl} | {mode} | failed: {err} |")
            continue
        cells = [f"{statistics.median(m['floor_p50_us'] for m in ok):.1f}"]
        for s in sizes:
            p50 = [m[f"allreduce_{s}_p50_us"] for m in ok]
            p99 = [m[f"allreduce_{s}_p99_us"] for m in ok]
            cells.append(f"{statistics.median(p50):.1f} ({min(p50):.1f}-{max(p50):.1f})")
            cells.append(f"{statistics.median(p99):.1f}")
        print(f"| {impl} | {mode} | " + " | ".join(cells) + f" | {len(ok)}/{len(mine)} |")
print()
print("microseconds per all-reduce (bf16); p50/p99 over samples of ITERS back-to-back calls,")
print("median (min-max) over launches; floor: a 16-byte all-reduce timed the same way.")
EOF
