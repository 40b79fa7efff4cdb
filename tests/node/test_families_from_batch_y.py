"""Families read in any engine's words, from the misses of batch y's tuning part (issue 51).

Batch y (the eleventh blind set) joined with its tuning part as rule data (MANIFEST.md). Each
test names a family the way at least two engines or libraries word it; every line is written
for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

# --- a value above the limit its own setting allows ----------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM: an adapter's rank above the LoRA rank the engine was started for
        ["ValueError: LoRA rank 128 is greater than max_lora_rank 32."],
        # SGLang: more adapters in a batch than the server was started for
        [
            "[2026-01-05 10:00:00] Scheduler hit an exception: Traceback (most recent call last):",
            "ValueError: The number of adapters (12) is larger than max_loras_per_batch (8).",
        ],
        # an engine's speculative settings: more draft tokens than its setting allows
        ["RuntimeError: num_draft_tokens=16 exceeds max_draft_tokens (8) set at start-up"],
    ],
)
def test_a_value_above_the_limit_its_setting_allows_is_an_invalid_argument(
    lines: list[str],
) -> None:
    """A value checked against a ``max_*`` setting is the setting's refusal: the flag that sets
    the limit (or the value) is what to change, whatever else the message mentions (a LoRA
    "rank" is no process rank of a collective)."""
    assert cause_of(lines) == "invalid_argument"


# --- a device kernel that faulted, in Ascend's words ----------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang on Ascend, serving: the device reports a vector core's fault
        [
            "[2026-01-10 08:00:00 TP1] Decode batch. #running-req: 12, #token: 5120",
            "EZ9999: [PID: 4321] 2026-01-10-08:00:01.100.200 device(chipId:1) reported an "
            "exception of aivec error on core 3, errorStr: address out of bounds",
            "        Kernel task failed, retCode=0x31, [vector core exception].",
        ],
        # vLLM on Ascend: a stream's synchronisation fails on an AI core's fault
        [
            "(EngineCore_DP0 pid=900) INFO 01-10 08:00:00 [model_runner.py:100] Running step",
            "(EngineCore_DP0 pid=900) ERROR 01-10 08:00:01 [core.py:700] rtStreamSynchronize "
            "execute failed, reason=[aicore exception]",
        ],
        # MindIE: an AI core kernel that never finished (the device's own timeout)
        [
            "2026-01-10 08:00:00 [mindie] text generator step 42",
            "[Error]: The aicore execution times out on device 5.",
        ],
    ],
)
def test_an_ascend_device_kernel_that_faulted_is_a_crash(lines: list[str]) -> None:
    """Ascend's AI and vector cores fault (or time out) as a CUDA kernel's illegal access does:
    a kernel crashed on the device, whatever the words of the runtime that reports it."""
    assert cause_of(lines) == "runtime_crash"


# --- a module the engine's host process could not import ----------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # a Rust front end that embeds the Python engine: its panic's message says what failed
        [
            "INFO dynamo_run: starting the worker",
            "thread 'main' panicked at lib/engines/sglang/src/lib.rs:120:9:",
            "Failed to import Python module 'sglang': TypeError: an integer is required",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        ],
        # a Rust router that embeds Python for its tokenizer, in lower case, the name quoted
        [
            "2026-01-10T08:00:00Z INFO router: loading the tokenizer",
            "thread 'tokio-runtime-worker' panicked at router/src/main.rs:77:10:",
            "unable to import python module `transformers`: SystemError: initialization failed",
        ],
        # Triton's Python backend (read so already): the stub cannot import the model's engine
        [
            "I0110 08:00:00.000000 1 model_lifecycle.cc:461] loading: llm:1",
            "E0110 08:00:01.000000 1 model_lifecycle.cc:626] failed to load 'llm' version 1: "
            "Internal: Unable to import the 'vllm' package in the stub's environment",
        ],
    ],
)
def test_a_module_its_host_process_could_not_import_is_an_import_error(lines: list[str]) -> None:
    """A host process (a Rust panic's message, a C++ server's load error) that says it could
    not import the engine's module names the installation, whatever error the import raised."""
    assert cause_of(lines) == "import_error"


# --- cuDNN with no engine for this GPU and data type ----------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # a vision tower's 3-D convolution in half precision on an older GPU (cuDNN's GET mode)
        [
            '  File "/opt/engine/vision/patch_embed.py", line 40, in forward',
            "    return F.conv3d(pixels, self.weight, self.bias, stride=self.stride)",
            "RuntimeError: GET was unable to find an engine to execute this computation",
        ],
        # the same refusal in cuDNN's FIND mode, from an audio encoder's 1-D convolution
        [
            "ERROR 03-02 10:00:00 [engine.py:90] encoder forward failed",
            "RuntimeError: FIND was unable to find an engine to execute this computation",
        ],
    ],
)
def test_cudnn_with_no_engine_for_this_gpu_is_arch_unsupported(lines: list[str]) -> None:
    """cuDNN that finds no engine (kernel) for an operation on this GPU and data type says what
    its ``CUDNN_STATUS_NOT_SUPPORTED`` says: the build has nothing for this device and dtype."""
    assert cause_of(lines) == "arch_unsupported"


# --- a report that counts failures ------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # a measurement collector's JSON summary: some of its runs failed
        [
            "{",
            '  "engine": "sglang",',
            '  "total_errors": 7,',
            '  "errors_by_kind": {"WorkerCrashed": 7}',
            "}",
        ],
        # a load tester's JSON results (LLMPerf's field names): requests that errored
        [
            '"results_number_errors": 12,',
            '"results_num_completed_requests": 88,',
            '"results_mean_output_throughput_token_per_s": 410.5',
        ],
        # a benchmark's plain-text summary, the failures counted in its own words
        ["Total requests: 200", "Number of failures: 25", "Request throughput (req/s): 3.1"],
    ],
)
def test_a_report_that_counts_failures_is_benchmark_errors(lines: list[str]) -> None:
    """A report (a benchmark's, a collector's) that counts failed requests or measurements says
    they failed, in whatever tool's words; a count of none is no failure."""
    assert cause_of(lines) == "benchmark_errors"
    zero = [line.replace("7,", "0,").replace("12,", "0,").replace("25", "0") for line in lines]
    assert cause_of(zero) != "benchmark_errors"
