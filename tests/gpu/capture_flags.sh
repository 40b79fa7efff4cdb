#!/usr/bin/env bash
# On the GPU machine: capture ENGINE's flag table from its own argument parser (the installed
# version), write it to $OUT/ENGINE-VERSION.json, and say how it differs from the table the
# repository holds for that version (src/autotune/engines/flags/). Copy it there to keep it.
#   bash tests/gpu/capture_flags.sh sglang|vllm
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
eval "$(python3 tools/offline/install.py --env)"
export PYTHONPATH="$PWD/src:$PYTHONPATH"
tmp=$(mktemp)
(cd /tmp && timeout 300 python3 -m autotune.engines.flagdump "$1") > "$tmp" 2> "$OUT/flagdump-$1.err"
python3 - "$tmp" "$OUT" <<'PY'
import json, pathlib, shutil, sys
got = json.load(open(sys.argv[1]))
name = f"{got['engine']}-{got['version']}.json"
shutil.copy(sys.argv[1], pathlib.Path(sys.argv[2]) / name)
kept = pathlib.Path("src/autotune/engines/flags") / name
print(f"{name}: {len(got['flags'])} flags captured")
if kept.exists():
    old = json.load(open(kept))["flags"]
    new = got["flags"]
    for flag in sorted(set(old) | set(new)):
        if old.get(flag) != new.get(flag):
            print(f"  differs: {flag}: repository {old.get(flag)} / here {new.get(flag)}")
else:
    print(f"  the repository has no {kept}: copy it there")
PY
