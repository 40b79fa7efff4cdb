"""A server that fails the way real ones do: ``crash.py SCENARIO [--port N]``.

Prints the real log lines of SGLang, NCCL, FlashInfer and argparse failures (see
shared/reference/sglang-and-nccl.md) and ends with the real exit: SGLang SIGKILLs itself
after a scheduler failure, argparse exits 2, a hung server never becomes ready, a server that
logged a fatal line may keep running.
"""

from __future__ import annotations

import os
import signal
import sys
import time

START = [
    "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
    "[2026-01-01 10:00:01 TP0] Load weight begin. avail mem=139.20 GB",
]
SCHED = "[2026-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):"
FRAMES = [
    '  File "/sglang/srt/managers/scheduler.py", line 2901, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
]
SIGQUIT = (
    "[2026-01-01 10:00:05] Received sigquit from a child process. "
    "It usually means the child failed."
)
T0 = "[2026-01-01 10:00:04 TP0]"

SCENARIOS: dict[str, tuple[list[str], str]] = {
    # (lines, how it ends): "kill9" self-SIGKILL, "exitN" exit code N, "hang", "run"
    "kv_pool_oom": (
        START
        + [f"{T0} Load weight end. type=DeepseekV3ForCausalLM, mem usage=130.1 GB."]
        + [SCHED, *FRAMES]
        + [
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: server_args.mem_fraction_static=0.907",
            "",
            SIGQUIT,
        ],
        "kill9",
    ),
    "graph_capture": (
        START
        + [
            "[2026-01-01 10:00:04 TP0] Load weight end. type=LlamaForCausalLM, mem usage=15.0 GB.",
            "[2026-01-01 10:00:05 TP0] Memory pool end. avail mem=20.00 GB",
            f"{T0} Capture cuda graph begin. This can take up to several minutes.",
            SCHED,
            *FRAMES,
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "Possible solutions: 1. set --mem-fraction-static to a smaller value "
            "2. set --cuda-graph-max-bs to a smaller value",
            SIGQUIT,
        ],
        "kill9",
    ),
    "flashinfer_arch": (
        START
        + [
            SCHED,
            *FRAMES,
            "RuntimeError: No supported CUDA architectures found for major versions [9, 10].",
            SIGQUIT,
        ],
        "kill9",
    ),
    "nccl_token": (
        START
        + [
            "host:123:123 [0] NCCL INFO NCCL_PROTO set by environment to LL129",
            "host:123:123 [0] enqueue.cc:170 NCCL WARN Unrecognized element token LL129 "
            "when parsing NCCL_PROTO",
            SCHED,
            *FRAMES,
            "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
            SIGQUIT,
        ],
        "kill9",
    ),
    "argparse": (
        [
            "usage: launch_server.py [-h] --model-path MODEL_PATH [--cuda-graph-max-bs-decode N]",
            "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match "
            "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill",
        ],
        "exit2",
    ),
    "argparse_other": (
        [
            "usage: launch_server.py [-h] --tp-size TP_SIZE",
            "launch_server.py: error: argument --tp-size: invalid int value: 'x'",
        ],
        "exit2",
    ),
    "unbalanced": (
        START
        + [
            SCHED,
            *FRAMES,
            "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by "
            "other processes. min_per_gpu_memory=12.1, local_gpu_memory=139.2, "
            "local_gpu_memory * 0.9=125.3",
            SIGQUIT,
        ],
        "kill9",
    ),
    "unknown_traceback": (
        START
        + [
            "Traceback (most recent call last):",
            '  File "x.py", line 1',
            "KeyError: 'rope_scaling'",
        ],
        "exit1",
    ),
    "plain_kill": (START, "kill9"),
    "hang": (
        START
        + ["[2026-01-01 10:00:04 TP0] Load weight end. type=LlamaForCausalLM, mem usage=15.0 GB."],
        "hang",
    ),
    # A thread died on an assertion (evidence only: not fatal by itself); the server hangs.
    "hang_after_assert": (
        START + ["Traceback (most recent call last):", "AssertionError: speculative_eagle_topk"],
        "hang",
    ),
    # Logs a fatal line but keeps running and never becomes ready: the trial must end on the line.
    "fatal_keeps_running": (START, "fatal_run"),
    "exit0_early": (START, "exit0"),
}


def main() -> None:
    scenario = sys.argv[1]
    delay = float(os.environ.get("CRASH_DELAY_S", "0.1"))
    lines, end = SCENARIOS[scenario]
    time.sleep(delay)
    for line in lines:
        print(line, flush=True)
    if end == "kill9":
        os.kill(os.getpid(), signal.SIGKILL)
    elif end.startswith("exit"):
        sys.exit(int(end[4:]))
    elif end == "fatal_run":
        time.sleep(0.5)
        print(
            f"Exception: Capture cuda graph failed: CUDA error: out of memory at={time.time():.3f}",
            flush=True,
        )
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
