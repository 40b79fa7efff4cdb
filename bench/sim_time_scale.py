"""How far the stand-in's time scale can go: the same workload at several scales, unscaled.

Launches ``python -m autotune.sim`` (default configuration, no launch noise) at each time
scale, drives it with autotune's load generator (4 streams of 128 tokens, 32 requests) and
prints the wall time and the figures as autotune reports them (in simulated seconds). Up to
the ceiling they should not move with the scale.

    .venv/bin/python bench/sim_time_scale.py 1 20 25 40
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx

from autotune.models import Workload
from autotune.node import bench


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(scale: float) -> str:
    port = _port()
    env = {
        **os.environ,
        "AUTOTUNE_SIM_STARTUP": "0.001",
        "AUTOTUNE_SIM_TIME_SCALE": str(scale),
        "AUTOTUNE_SIM_SEED": "1",
        "AUTOTUNE_SIM_LAUNCH_NOISE": "0",
    }
    argv = [sys.executable, "-m", "autotune.sim", "--model-path", "m", "--tp-size", "8"]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        workload = Workload(concurrency=4, num_requests=32, prompt_len=128, output_len=128)
        start = time.perf_counter()
        result = bench.run_load(url, workload, bench.make_prompts(workload, 32), concurrency=4)
        wall = time.perf_counter() - start
        m = bench.unscale(result.metrics(), scale)
        ttft = m.ttft_ms.p50 if m.ttft_ms else float("nan")
        itl = m.itl_ms.p50 if m.itl_ms else float("nan")
        return (
            f"| {scale:g} | {wall:.1f} s | {m.output_tok_s:.1f} | {ttft:.1f} | {itl:.2f} |"
            f" {m.completed} |"
        )
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    scales = [float(a) for a in sys.argv[1:]] or [1.0, 20.0, 25.0, 40.0]
    print("| scale | wall time | output tok/s | TTFT p50 (ms) | ITL p50 (ms) | completed |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for scale in scales:
        print(run(scale), flush=True)


if __name__ == "__main__":
    main()
