"""Families read in any engine's words, from the misses of batch z's tuning part (issue 51).

Batch z (the twelfth blind set) joined with its tuning part as rule data (MANIFEST.md). Each
test names a family the way at least two engines or libraries word it; every line is written
for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of, cause_phase

# --- a KV cache transfer between prefill and decode instances that failed ------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang with prefill/decode disaggregation: the decode side gives up on a request's KV
        [
            "[2026-02-01 10:00:00] The server is fired up and ready to roll!",
            '[2026-02-01 10:00:05] INFO:     127.0.0.1:4000 - "GET /health HTTP/1.1" 200 OK',
            "[2026-02-01 10:00:09 TP0] Decode transfer failed for request rid='abc' with "
            "exception KVTransferError(bootstrap_room=7): peer did not answer",
        ],
        # vLLM with a KV connector: the worker reports the connector's transfer failed
        [
            '(APIServer pid=10) INFO:     10.0.0.2:5000 - "POST /v1/completions HTTP/1.1" 200 OK',
            "(Worker_TP0 pid=20) ERROR 02-01 10:00:09 [nixl_connector.py:900] NIXL transfer "
            "failed for request cmpl-123 after 30 s",
        ],
        # any engine: a KV cache transfer to the decode instance that timed out
        [
            'INFO:     10.0.0.2:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            "ERROR 02-01 10:00:30 KV cache transfer to decode instance 10.0.0.3 timed out",
        ],
    ],
)
def test_a_kv_transfer_between_instances_that_failed_is_an_nccl_error(lines: list[str]) -> None:
    """Prefill and decode instances hand a request's KV cache over a transport (Mooncake, NIXL,
    RDMA): when it fails or times out the ranks' communication failed, as NCCL's does; the
    server had served, so it happened while serving (the transport's settings are the fix)."""
    assert cause_phase(lines) == ("nccl_error", "benchmark")


def test_a_transfer_that_is_no_kv_handover_is_not_an_nccl_error() -> None:
    """A file download or a host-to-device copy that failed is no collective's failure."""
    assert cause_of(["ERROR: model file transfer failed: 404 Not Found"]) != "nccl_error"
    assert cause_of(["RuntimeError: CUDA error: device-side transfer failed"]) != "nccl_error"


# --- a GPU refused by its SM number written with a space ------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang's kernel package on an older card, its only line
        ["sgl-kernel only supports sm 80 and above"],
        # a vLLM quantisation kernel refusing the card, the SM in capitals
        ["Marlin kernels only support SM 80 or newer"],
        # TensorRT-LLM's FP8 GEMM on an Ampere card
        ["[TensorRT-LLM][ERROR] FP8 GEMM only supports sm 89 or later"],
    ],
)
def test_a_gpu_refused_by_its_sm_number_is_arch_unsupported(lines: list[str]) -> None:
    """``only supports sm 75 and above`` says the GPU is too old, as ``only supports sm_75``
    does: the SM number is the GPU's architecture however it is spaced."""
    assert cause_of(lines) == "arch_unsupported"


# --- no version of the loader that supports the model yet -----------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM's config check, Transformers' words in it
        [
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "  Value error, the checkpoint is newer than this install: there is no release "
            "version that supports this model yet. [type=value_error, input_value=..., ]",
        ],
        # SGLang's scheduler on a model type its Transformers does not know
        [
            "[2026-02-01 10:00:00] Scheduler hit an exception: ValueError: install a "
            "transformers version which supports this model (model_type=foo9)"
        ],
    ],
)
def test_no_version_that_supports_the_model_is_model_unsupported(lines: list[str]) -> None:
    """A loader saying that no version of it (yet) supports the model names the model as what
    this build cannot run, however it words the upgrade it suggests."""
    assert cause_of(lines) == "model_unsupported"
