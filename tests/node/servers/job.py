"""A benchmark job for node tests: ``job.py ok|bad|fail|none|slow``."""

from __future__ import annotations

import json
import sys
import time

mode = sys.argv[1]
print("allreduce benchmark: 8 ranks", flush=True)
if mode == "ok":
    print("AUTOTUNE_METRICS " + json.dumps({"allreduce_p50_us": 41.5, "busbw_gbs": 12}), flush=True)
elif mode == "bad":
    print('AUTOTUNE_METRICS {"allreduce_p50_us": "fast"}', flush=True)
elif mode == "fail":
    print("RuntimeError: NCCL error: unhandled system error", flush=True)
    sys.exit(1)
elif mode == "slow":
    time.sleep(60)
sys.exit(0)
