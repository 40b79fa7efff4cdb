"""Which knob matters for which traffic shape, on the stand-in SGLang server (SIMULATED).

Runs the stand-in's scheduler (``autotune.sim.replay``: the same code the server runs,
driven in simulated time, so the figures are exact and take seconds of CPU) for each
traffic shape under each launch, and prints a markdown table of simulated output tok/s,
TTFT, ITL and prefix-cache hit rate. Every figure is modelled, not measured.

    .venv/bin/python bench/sim_shapes.py            # the table in docs/benchmarks.md
    .venv/bin/python bench/sim_shapes.py --quick    # fewer requests
    .venv/bin/python bench/sim_shapes.py --server   # + one shape through a live server

``--server`` sends the first shape to a real ``python -m autotune.sim`` process (time scale
20, HTTP streaming, wall-clock scheduler) with the same prompts and arrival times, and prints
what a client measured next to the replay's figures: the table is what the server serves.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from autotune.sim.replay import Prompt, run_open, scheduler_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script


# The shapes are test fixtures (tests/sim/test_sim_docs.py checks the documented rows).
from tests.sim.sim_shapes import KNOBS, row, shapes  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def through_server(prompts: list[Prompt], rate: float, seed: int, scale: float = 20.0) -> str:
    """Send the prompts to a live stand-in at Poisson times; a table row of what it served."""
    import random

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "AUTOTUNE_SIM_STARTUP": "0.001", "AUTOTUNE_SIM_LAUNCH_NOISE": "0"}
    env["AUTOTUNE_SIM_TIME_SCALE"] = str(scale)
    argv = [sys.executable, "-m", "autotune.sim", "--model-path", "m", "--tp-size", "8"]
    proc = subprocess.Popen([*argv, "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        client = httpx.Client(limits=httpx.Limits(max_connections=512), timeout=600)
        rng, t, arrivals = random.Random(seed), 0.0, []
        for _ in prompts:  # the replay's arrival times (run_open draws them the same way)
            arrivals.append(t)
            t += rng.expovariate(rate)
        start = time.monotonic() + 0.2
        lock, ttft, itl, tokens = threading.Lock(), [], [], [0]

        def one(i: int) -> None:
            text, out = prompts[i]
            delay = start + arrivals[i] / scale - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sent, times = time.monotonic(), []
            body = {"prompt": text, "max_tokens": out, "stream": True}
            with client.stream("POST", f"{url}/v1/completions", json=body) as r:
                for line in r.iter_lines():
                    if line.startswith("data: {") and '"text": "' in line:
                        times.append(time.monotonic())
            with lock:
                ttft.append((times[0] - sent) * scale)
                itl.extend((b - a) * scale for a, b in zip(times, times[1:], strict=False))
                tokens[0] += len(times)

        cpu0, wall0, mine = _cpu_s(proc.pid), time.monotonic(), time.process_time()
        with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
            list(pool.map(one, range(len(prompts))))
        took = (time.monotonic() - start) * scale
        wall = time.monotonic() - wall0
        busy, client_busy = (_cpu_s(proc.pid) - cpu0) / wall, (time.process_time() - mine) / wall
        sched = httpx.get(f"{url}/get_server_info", timeout=5).json()["simulation"]["scheduler"]
        print(
            f"(CPU: live server {busy:.0%} of a core, client {client_busy:.0%}; the server's "
            f"scheduler woke late by p50 {sched['lag_ms_p50']} / p99 {sched['lag_ms_p99']} / "
            f"max {sched['lag_ms_max']} simulated ms)",
            file=sys.stderr,
        )
        return (
            f"| live server, scale {scale:g} | `default` | {tokens[0] / took:.0f} | "
            f"{_pct(ttft, 0.5) * 1000:.0f} | {_pct(ttft, 0.99) * 1000:.0f} | "
            f"{_pct(itl, 0.5) * 1000:.1f} | {_pct(itl, 0.99) * 1000:.0f} | - | - |"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 requests a shape, not 256")
    parser.add_argument("--seed", type=int, default=0, help="seed of the arrival times")
    parser.add_argument("--server", action="store_true", help="also the first shape, live")
    parser.add_argument("--scale", type=float, default=20.0, help="the live server's time scale")
    args = parser.parse_args()
    n = 64 if args.quick else 256
    started = time.process_time()
    print("SIMULATED (autotune.sim, pcie-blackwell profile, Kimi-K2.5 INT4 TP8):", end=" ")
    print(f"{n} requests a shape, Poisson arrivals, seed {args.seed}\n")
    print(
        "| shape | launch | output tok/s | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) "
        "| ITL p99 (ms) | cache hit rate | refused |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for shape, (prompts, rate) in shapes(n).items():
        for knob, flags in KNOBS.items():
            result = run_open(scheduler_for(flags), prompts, rate, seed=args.seed)
            print(row(shape, knob, result), flush=True)
    print(f"\n({time.process_time() - started:.1f} s of CPU)")
    if args.server:
        shape, (prompts, rate) = next(iter(shapes(n).items()))
        print(f"\n{shape}, replay against a live server (SIMULATED, wall-clock timing):\n")
        print("| run | launch | output tok/s | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | | |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        replay = run_open(scheduler_for([]), prompts, rate, seed=args.seed)
        print(row("replay", "default", replay))
        print(through_server(prompts, rate, args.seed, args.scale), flush=True)


if __name__ == "__main__":
    main()
