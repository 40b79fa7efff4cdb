"""A fifth black-box server: another independent guess at the issue's hidden one (held out).

Five settings of the kinds the issue names (categorical, log-scaled int, bool; flags and
environment variables), SGLang- and NCCL-flavoured, none of them blackbox3's or blackbox4's:
``--chunked-prefill-size`` and ``--num-continuous-decode-steps`` (log-scaled ints) and
``--sampling-backend`` (categorical) as flags; ``BB5_NCCL_ALGO`` (categorical) and
``BB5_ENABLE_MIXED_CHUNK`` (bool) as environment variables. The chunk size has a best size
inside the range (a hill on the log scale) that mixed chunking moves from 4096 to 2048; more
decode steps per scheduling round always help, less and less (the scheduler's overhead spread
over them); the NCCL algorithm, the sampler and mixed chunking scale the rate. Three crash
regions, each with its own shape and error:

- a chunk above what its activations leave room for, an edge that moves with a bool (mixed
  chunking on: above 8192; off: above 12288): ``torch.OutOfMemoryError`` in the scheduler;
- flashinfer sampling with more than 12 decode steps (a box on a categorical and a log-int):
  ``RuntimeError: CUDA error: an illegal memory access was encountered``;
- more than 16 decode steps, whatever else: ``Capture cuda graph failed``. The optimum sits
  on this edge (16 steps), and flashinfer's best (12 steps, 99.9%) on the box's.

The optimum (2048, 16, pytorch, NVLS, mixed on) is 3.06x the baseline (2048, 1, pytorch,
Ring, off). Its constants were set on plain TPE (``tpe-nosteer``) and random search only,
never on autotune's defaults, so that plain TPE behaves here roughly as the issue reports it
did on the hidden server. Simulated in-process, 100 seeds of 30 launches:

    .venv/bin/python bench/search_blackbox.py --server blackbox5 --seeds 100 --prune \
        --in-process tpe-nosteer --against random

tpe-nosteer: 96.0% of the optimum, 76 of 100 seeds at 95%, 7.4 crashes per 30 launches;
random: 87.3%, 15 of 100, 6.1 crashes (without ``--prune``: 95.5%, 70 of 100, 7.2 crashes;
random the same).
"""

from __future__ import annotations

import math
from typing import Any

import blackbox

SAMPLERS = ["pytorch", "flashinfer"]
ALGOS = ["Ring", "Tree", "NVLS"]
PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "chunk",
        "type": "int",
        "low": 256,
        "high": 16384,
        "log": True,
        "flag": "--chunked-prefill-size",
    },
    {
        "name": "decode_steps",
        "type": "int",
        "low": 1,
        "high": 20,
        "log": True,
        "flag": "--num-continuous-decode-steps",
    },
    {
        "name": "sampling",
        "type": "categorical",
        "choices": SAMPLERS,
        "flag": "--sampling-backend",
    },
    {"name": "algo", "type": "categorical", "choices": ALGOS, "env": "BB5_NCCL_ALGO"},
    {"name": "mixed", "type": "bool", "env": "BB5_ENABLE_MIXED_CHUNK"},
]
BASELINE: dict[str, Any] = {
    "chunk": 2048,
    "decode_steps": 1,
    "sampling": "pytorch",
    "algo": "Ring",
    "mixed": False,
}
# The largest prefill chunk whose activations fit, with mixed chunking (prefill and decode
# tokens in one batch) and without.
MAX_CHUNK = {True: 8192, False: 12288}
MAX_FLASHINFER_STEPS = 12  # the most decode steps flashinfer's sampling kernels run
MAX_STEPS = 16  # the most decode steps whose CUDA graphs capture
ALGO_GAIN = {"Ring": 1.0, "Tree": 1.08, "NVLS": 1.31}
SAMPLING_GAIN = {"pytorch": 1.0, "flashinfer": 1.02}
MIXED_GAIN = 1.15
STEP_OVERHEAD = 1.1  # the scheduler's time per decode round, as a share of one step's
# The chunk size: a hill on the log scale (gain at its top, best size with mixed chunking
# and without, width in doublings).
CHUNK_GAIN, BEST_CHUNK, CHUNK_WIDTH = 0.4, {True: 2048, False: 4096}, 2.0


def crash_of(c: dict[str, Any]) -> list[str] | None:
    """The error lines a configuration dies with, or None when it serves."""
    if c["chunk"] > MAX_CHUNK[c["mixed"]]:
        return [
            "Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2310,'
            " in run_scheduler_process",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.50 GiB. GPU 0 has a "
            "total capacity of 139.81 GiB of which 2.31 GiB is free.",
        ]
    if c["sampling"] == "flashinfer" and c["decode_steps"] > MAX_FLASHINFER_STEPS:
        return [
            '  File "/usr/local/lib/python3.12/dist-packages/flashinfer/sampling.py", line 84, in '
            "top_k_top_p_sampling_from_probs",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.",
        ]
    if c["decode_steps"] > MAX_STEPS:
        return [
            "Capture cuda graph failed: CUDA error: out of memory",
            "RuntimeError: Capture cuda graph failed. Possible solutions: 1. set "
            "--mem-fraction-static to a smaller value 2. set --cuda-graph-max-bs to a smaller "
            "value 3. disable torch compile by not using --enable-torch-compile",
        ]
    return None


def rate(c: dict[str, Any]) -> float:
    """Tokens per second of one configuration that serves (noise-free)."""
    r = 100.0 * ALGO_GAIN[c["algo"]] * SAMPLING_GAIN[c["sampling"]]
    r *= (1 + STEP_OVERHEAD) / (1 + STEP_OVERHEAD / c["decode_steps"])
    hill = math.log2(c["chunk"] / BEST_CHUNK[c["mixed"]]) / CHUNK_WIDTH
    r *= 1 + CHUNK_GAIN * math.exp(-0.5 * hill**2)
    return r * (MIXED_GAIN if c["mixed"] else 1.0)


def truth(c: dict[str, Any]) -> float | None:
    """The noise-free rate, or None where the configuration crashes."""
    return None if crash_of(c) is not None else rate(c)


def optimum() -> float:
    """The best noise-free rate: the chunk's hill is highest at its best size or, past an
    edge, at the edge, so those sizes and every step count hold it (exact)."""
    chunks = [256, 16384, *BEST_CHUNK.values(), *MAX_CHUNK.values()]
    return blackbox.best_over(
        truth,
        sampling=SAMPLERS,
        algo=ALGOS,
        mixed=[False, True],
        decode_steps=range(1, 21),
        chunk=chunks,
    )


def main() -> None:
    blackbox.serve("blackbox5", PARAMETERS, BASELINE, crash_of, rate)


if __name__ == "__main__":
    main()
