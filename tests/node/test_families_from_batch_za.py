"""Families read in any engine's words, from the misses of batch za's tuning part (issue 51).

Batch za (the thirteenth blind set) joined with its tuning part as rule data (MANIFEST.md).
Each test names a family the way at least two engines or libraries word it; every line is
written for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

from autotune.node.logparse import parse_log

# --- a transport library's own level: UCX's and UCC's "file.c:N UCX  ERROR" ----------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "[1750000000.123456] [node-a:4242 :0]      ib_iface.c:812 UCX  ERROR "
            "ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
            "UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
        ),
        (
            "[1750000000.5] [gpu-7:99:3]        ucc_team.c:301  UCC  FATAL team create timed out",
            "UCC  FATAL team create timed out",
        ),
    ],
)
def test_a_c_librarys_error_level_after_its_source_line_is_read(line: str, message: str) -> None:
    """UCX and UCC (the transports under NIXL, Mooncake and MPI) stamp each line with the time,
    the host and pid, the source file and line, the library's name and then its level: an
    error level is read, so the line is an error, not an unmarked one; the library's name
    stays in the message, where its family is read."""
    (rec,) = parse_log([line])
    assert (rec.level, rec.text) == ("error", message)


def test_nccls_warn_in_the_same_stamp_is_not_made_a_warning() -> None:
    """NCCL stamps its lines alike and reports its failures as `NCCL WARN`: that level is not
    read, so the failure is not set aside as a warning."""
    (rec,) = parse_log(["node-a:4242:4300 [0] misc/param.cc:40 NCCL WARN Invalid NCCL_PROTO"])
    assert rec.level != "warning"


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM with a NIXL connector: UCX's own error line, then the worker stops talking
        [
            "INFO 02-01 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 9.0 tokens/s",
            "[1750000000.1] [decode-0:77 :0]   tcp_ep.c:900 UCX  ERROR tcp_ep 0x55 "
            "(state=CONNECTED): recv(12) failed: Connection reset by peer",
        ],
        # SGLang's Mooncake transfer engine over UCX: the same library's words, another host
        [
            "[2026-02-01 10:00:00 TP0] Decode batch, #running-req: 3, #token: 900",
            "[1750000002.7] [prefill-1:31:2]  rc_mlx5_ep.c:420 UCX  ERROR "
            "send completion with error: remote access error",
        ],
    ],
)
def test_a_transport_librarys_error_line_is_an_nccl_error(lines: list[str]) -> None:
    """An error from the transport that carries the ranks' or instances' traffic (UCX under
    NIXL or Mooncake) is the communication family, whatever the engine above it."""
    assert cause_of(lines) == "nccl_error"


def test_a_transport_librarys_info_line_is_no_failure() -> None:
    """UCX's information lines in a healthy server's log stay information."""
    lines = [
        "[1750000001.0] [gpu-7:99:0]  ucp_worker.c:1900 UCX  INFO  ep_cfg[2]: tag(tcp/eth0)",
        "INFO:     Application startup complete.",
    ]
    assert cause_of(lines) == "ok"


# --- a model config the loader cannot deserialise, serde's bare error -----------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # a candle-based Rust server: a newer architecture's config lacks a field it reads
        [
            "2026-04-01T10:00:00.000000Z  INFO candle_server::loader: loading config.json",
            "Error: missing field `num_key_value_heads`",
            "   0: <std::backtrace::Backtrace>::create",
        ],
        # mistral.rs-style: the config's model type is no variant the loader knows
        [
            "2026-04-01T10:00:00.000000Z  INFO mistralrs_core::pipeline: Loading `config.json`",
            "Error: unknown variant `qwen4_moe`, expected one of `llama`, `mistral`, `qwen2`",
        ],
    ],
)
def test_a_config_field_or_variant_serde_cannot_read_is_model_unsupported(
    lines: list[str],
) -> None:
    """A Rust server that cannot deserialise a model's config (a field its struct needs is
    missing, or a model type no variant names) does not support that model, with or without
    the position serde adds for a file."""
    assert cause_of(lines) == "model_unsupported"


def test_serde_on_a_request_body_is_not_the_model() -> None:
    """serde's words inside a sentence about something else (a request's JSON) decide nothing
    about the model."""
    line = "WARN router: request rejected: missing field `inputs` in the JSON body"
    assert cause_of(["INFO:     Application startup complete.", line]) != "model_unsupported"


# --- a benchmark report cut after its count of answered requests ---------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang's bench_serving, the excerpt stops inside its report
        [
            "============ Serving Benchmark Result ============",
            "Backend:                                 sglang",
            "Successful requests:                     24",
            "Benchmark duration (s):                  3.15",
        ],
        # vLLM's `vllm bench serve`, the same report in its own title
        [
            "Namespace(subparser='bench', bench_type='serve', num_prompts=50)",
            "============ Serving Benchmark Result ============",
            "Successful requests:                     50",
        ],
    ],
)
def test_a_report_of_answered_requests_is_a_served_run(lines: list[str]) -> None:
    """A benchmark client that counts requests the server answered proves the server was up
    and served, even where the excerpt stops before the report's failure count or figures:
    nothing failed that the log shows, so the run is healthy, not a start-up that hung."""
    assert cause_of(lines) == "ok"


def test_a_report_with_fewer_answers_than_asked_is_still_a_failure() -> None:
    """The report's count still decides: fewer answered than the client sent is a failure."""
    lines = [
        "Namespace(backend='vllm', num_prompts=40, request_rate=inf)",
        "============ Serving Benchmark Result ============",
        "Successful requests:                     12",
    ]
    assert cause_of(lines) == "benchmark_errors"


# --- a log that ends waiting for a step of the start ---------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # SGLang: the scheduler is up, uvicorn starts its application and nothing more comes
        [
            "[2026-01-05 09:00:00 TP0] max_total_num_tokens=90000, max_running_requests=512",
            "[2026-01-05 09:00:01] INFO:     Started server process [4242]",
            "[2026-01-05 09:00:01] INFO:     Waiting for application startup.",
        ],
        # vLLM: the API server announces itself, then waits for its engine core forever
        [
            "(APIServer pid=7) INFO 01-05 09:00:00 [api_server.py:1] Starting vLLM API server 0 "
            "on http://0.0.0.0:8000",
            "(APIServer pid=7) DEBUG 01-05 09:00:10 [utils.py:1] Waiting for 1 local, 0 remote "
            "core engine proc(s) to start.",
        ],
    ],
)
def test_a_log_that_ends_waiting_for_a_step_is_no_healthy_run(lines: list[str]) -> None:
    """A log whose last line waits for a step (the application's start, an engine's process,
    a shard) never saw the step: the run hung there, whatever milestone came before, so it
    is a start that timed out, never `ok`."""
    assert cause_of(lines) == "startup_timeout"


def test_a_wait_that_ended_or_an_idle_loop_is_healthy() -> None:
    """The step came (the next line says so), or the server idles waiting for requests."""
    done = [
        "[2026-01-05 09:00:01] INFO:     Waiting for application startup.",
        "[2026-01-05 09:00:01] INFO:     Application startup complete.",
    ]
    idle = [
        "INFO 01-05 09:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "INFO 01-05 09:00:05 [worker.py:9] Waiting for new requests",
    ]
    assert cause_of(done) == "ok"
    assert cause_of(idle) == "ok"
