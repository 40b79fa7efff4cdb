"""Families every engine shares, read by what they are (issue 51, eighth round).

Each case is written for this test, in the shape such logs take, not copied from the corpus:

- a server says it is **up** in many words (a URL it listens on, "ready", "started", an idle
  slot loop, a browser hint); words that *wait* for readiness or report a failure are no
  ready line; a log that reaches a ready line with warnings and deprecation notes only is
  healthy;
- a structured (JSON) log record is read as its message even behind a container's prefix;
- a **benchmark client's** log is the client's: requests it lost (a report with fewer
  successes than requests, error statuses in its responses) are ``benchmark_errors``, and a
  client log that stops is no server hang;
- a **SIGKILL** that nothing in the log explains is the host's OOM killer, whether the log or
  only the exit status tells it; a kill after an error is the engine ending itself (``killed``,
  the error above is the lead);
- a model **refused by a registry that lists it** as supported was not refused for its
  architecture: its class failed to load (an installation problem, ``import_error``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.node.corpus_helpers import cause_of, cause_phase

from autotune.diagnosis import diagnose_text

START = [
    "2025-03-02 09:14:11 INFO starting the inference server, model /srv/models/qwen-7b",
    "2025-03-02 09:14:12 WARNING option `rope_scaling.type` is deprecated, use `rope_type`",
    "/opt/venv/lib/python3.11/site-packages/pydantic/_internal/_config.py:341: UserWarning: "
    "field name shadows an attribute in parent",
    "  warnings.warn(message, UserWarning)",
    "2025-03-02 09:14:40 INFO weights loaded in 27.9 s (14.2 GiB)",
]


@pytest.mark.parametrize(
    "ready",
    [
        "2025-03-02 09:14:41 INFO Listening on http://0.0.0.0:9000",
        "2025-03-02 09:14:41 INFO serving at http://[::]:8080/v1",
        "Running on local URL:  http://127.0.0.1:7861",
        "2025-03-02 09:14:41 INFO The API server is ready.",
        "2025-03-02 09:14:41 INFO Server ready on port 9000",
        "2025-03-02 09:14:41 INFO server started on 0.0.0.0:9000",
        "2025-03-02 09:14:41 [INFO] Server started.",
        "Model loaded, server is up and running",
        "Service successfully started. Endpoint: http://10.0.0.5:9997",
        "INFO 2025-03-02 09:14:41 serve: Application 'llm' is ready at http://127.0.0.1:8000/.",
        "INFO 2025-03-02 09:14:41 serve: Deployed app 'llm' successfully.",
        "2025-03-02T09:14:41.118Z  INFO embeddings_router: router/src/lib.rs:301: Ready",
        "srv  update_slots: all slots are idle",
        "Please connect to custom endpoint at http://localhost:5001",
        "HINT:    Please open http://0.0.0.0:23333 in a browser for detailed api usage!!!",
    ],
)
def test_a_ready_line_in_any_servers_words_makes_a_healthy_start(ready: str) -> None:
    assert cause_of([*START, ready]) == "ok"


@pytest.mark.parametrize(
    "waiting",
    [
        "2025-03-02 09:14:41 INFO waiting for the API server to be ready ...",
        "2025-03-02 09:14:41 INFO server not ready yet, retrying in 5 s",
        "INFO:     Started server process [4242]",
        "2025-03-02 09:14:41 INFO checking whether the server is ready",
        # a shard's own server on a unix socket: the front server is not up yet
        "2025-03-02 09:14:41 INFO launcher: Server started at unix:///tmp/llm-shard-0",
    ],
)
def test_words_that_wait_for_readiness_are_no_ready_line(waiting: str) -> None:
    assert cause_of([*START, waiting]) == "startup_timeout"


def test_a_failure_after_a_ready_line_in_other_words_is_still_a_failure() -> None:
    lines = [
        *START,
        "2025-03-02 09:14:41 INFO Server ready on port 9000",
        "Traceback (most recent call last):",
        '  File "/srv/app/engine.py", line 88, in step',
        "    out = self.model(batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB",
    ]
    assert cause_of(lines) == "cuda_oom"


def _tracing(level: str, target: str, message: str) -> str:
    record = {
        "timestamp": "2025-03-02T09:14:41.118Z",
        "level": level,
        "fields": {"message": message},
        "target": target,
    }
    return "inference-1  | " + json.dumps(record)


def test_structured_records_behind_a_container_prefix_are_read_as_their_message() -> None:
    lines = [
        _tracing("INFO", "text_generation_launcher", "Starting shard"),
        _tracing("INFO", "text_generation_launcher", "Shard ready in 21.4s"),
        _tracing("INFO", "text_generation_router::server", "Connected"),
    ]
    assert cause_of(lines) == "ok"
    failed = [
        _tracing("INFO", "text_generation_launcher", "Starting shard"),
        _tracing("ERROR", "text_generation_launcher", "Shard 0 failed to start"),
        _tracing("ERROR", "text_generation_launcher", "torch.OutOfMemoryError: CUDA out of memory"),
    ]
    assert cause_of(failed) == "cuda_oom"


CLIENT_START = [
    "Namespace(backend='openai', host='127.0.0.1', port=8000, endpoint='/v1/completions', "
    "dataset_name='random', num_prompts=200, request_rate=inf, max_concurrency=16)",
    "Starting initial single prompt test run...",
    "Initial test run completed. Starting main benchmark run...",
]


def _report(done: int, total: int) -> list[str]:
    return [
        f"100%|##########| {total}/{total} [00:07<00:00, 27.40it/s]",
        "============ Serving Benchmark Result ============",
        f"Successful requests:                     {done}",
        "Benchmark duration (s):                  7.30",
        "Total input tokens:                      204800",
    ]


def test_a_benchmark_report_with_fewer_successes_than_requests_is_a_benchmark_error() -> None:
    assert cause_of([*CLIENT_START, *_report(3, 200)]) == "benchmark_errors"


def test_a_benchmark_report_where_every_request_succeeded_is_no_benchmark_error() -> None:
    # (nor proof that the server's run was healthy: the report may follow a server's log)
    assert cause_of([*CLIENT_START, *_report(200, 200)]) != "benchmark_errors"


def test_a_benchmark_report_that_counts_failed_requests_is_a_benchmark_error() -> None:
    report = [
        "============ Serving Benchmark Result ============",
        "Successful requests:                     180",
        "Failed requests:                         20",
    ]
    assert cause_of(report) == "benchmark_errors"


def test_a_client_whose_requests_get_error_statuses_is_a_benchmark_error() -> None:
    lines = [
        "2025-03-02 10:00:01,220 - INFO - sending request 17",
        "2025-03-02 10:00:01,912 - INFO - HTTP Request: POST http://10.1.2.3:8000/v1/chat/"
        'completions "HTTP/1.1 200 OK"',
        *[
            "2025-03-02 10:00:09,004 - INFO - HTTP Request: POST http://10.1.2.3:8000/v1/chat/"
            'completions "HTTP/1.1 503 Service Unavailable"'
        ]
        * 3,
        "2025-03-02 10:00:09,005 - INFO - Retrying request to /chat/completions in 0.42 seconds",
    ]
    assert cause_of(lines) == "benchmark_errors"


def test_a_client_answered_200_was_talking_to_a_serving_server() -> None:
    lines = [
        "2025-03-02 10:00:01,912 - INFO - HTTP Request: POST http://10.1.2.3:8000/v1/chat/"
        'completions "HTTP/1.1 200 OK"',
    ] * 3
    assert cause_of(lines) == "ok"


def test_a_benchmark_client_that_stops_before_its_report_is_no_server_hang() -> None:
    lines = [
        "$ python3 -m sglang.bench_serving --backend sglang --num-prompts 300",
        "benchmark_args=Namespace(backend='sglang', host='10.0.0.9', port=30000, "
        "dataset_name='sharegpt', num_prompts=300, request_rate=inf)",
    ]
    assert cause_of(lines) == "benchmark_errors"


LOADING = [
    "2025-03-02 09:14:11 INFO starting the inference server, model /srv/models/qwen-32b",
    "2025-03-02 09:14:20 INFO loading safetensors shard 3 of 14",
]


@pytest.mark.parametrize(
    ("lines", "exit_code"),
    [
        (LOADING, -9),
        (LOADING, 137),
        ([*LOADING, "launcher: worker process 4711 exits with return code = -9"], None),
        ([*LOADING, "launcher: worker process 4711 exits with return code = -9"], -9),
    ],
)
def test_a_sigkill_nothing_explains_is_the_hosts_oom_killer(
    lines: list[str], exit_code: int | None
) -> None:
    # The same evidence gives the same answer, from the log or from the exit status alone.
    assert cause_of(lines, exit_code) == "host_oom"


def test_a_sigkill_after_an_error_is_the_engine_ending_itself() -> None:
    lines = [
        *LOADING,
        "Traceback (most recent call last):",
        '  File "/srv/app/loader.py", line 40, in load',
        "    raise LoaderFault(name)",
        "LoaderFault: shard 3 has an unexpected layout",
    ]
    assert cause_of(lines, -9) == "killed"


def _refusal(refused: str) -> list[str]:
    return [
        "INFO 03-02 09:14:11 [config.py:520] resolved architecture from config.json",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/engine/model_loader.py", line 61, in '
        "resolve",
        "    raise ValueError(msg)",
        f"ValueError: Model architectures ['{refused}'] are not supported for now. Supported "
        "architectures: ['GPT2LMHeadModel', 'MistralForCausalLM', 'Qwen2ForCausalLM', "
        "'GemmaForCausalLM']",
    ]


def test_a_model_refused_by_a_registry_that_lists_it_failed_to_load_its_class() -> None:
    assert cause_of(_refusal("MistralForCausalLM")) == "import_error"


def test_a_model_the_registry_does_not_list_is_the_models() -> None:
    assert cause_of(_refusal("MambaHybridForCausalLM")) == "model_unsupported"


def test_an_error_level_after_a_stamp_and_a_pid_is_an_error_line() -> None:
    # "<stamp>:  <pid>  ERROR ||<component>||: ..." (a compiler wrapper's logger): the log
    # stops on an error, not in a hang.
    lines = [
        *START,
        "2025-03-02 09:15:02.004411:  51234  INFO ||GRAPH_COMPILER||: compiling 3 graphs",
        "2025-03-02 09:15:40.000866:  51234  ERROR ||GRAPH_COMPILER||: Failed compilation with "
        "['gcc-x', 'compile', '--target=acc2', '--framework=XLA']",
    ]
    assert cause_of(lines) not in ("ok", "startup_timeout")


def test_an_implementation_missing_while_loading_is_the_models() -> None:
    # The engine lacks what this model needs (a layer, an attention kind, a mode): the model is
    # not supported by this engine or backend, whatever words the message uses.
    lines = [
        "INFO 03-02 09:14:20 [loader.py:88] building the model (encoder-decoder)",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/engine/layers/attn.py", line 301, in '
        "__init__",
        "    raise NotImplementedError(msg)",
        "NotImplementedError: Cross-attention layers are not implemented for the PagedDecodeImpl "
        "backend",
    ]
    assert cause_of(lines) == "model_unsupported"


def test_a_missing_implementation_whose_words_name_another_family_is_that_family() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/engine/layers/attn.py", line 12, in '
        "<module>",
        "NotImplementedError: the fused kernel is unavailable: No module named 'fused_attn_ext'",
    ]
    assert cause_of(lines) == "import_error"


def test_a_log_that_stops_inside_the_first_request_before_any_ready_line_is_no_healthy_run() -> (
    None
):
    # Engines send themselves a request before they say they are ready (their warmup): one
    # prefill with no ready line and nothing answered is still the start-up, not serving.
    lines = [
        "[2025-03-02 09:20:01] Receive: obj=GenerateReqInput(rid='5f0c', text='warm me up', "
        "sampling_params={'max_new_tokens': 4})",
        "[2025-03-02 09:20:01 TP0] Prefill batch. #new-seq: 1, #new-token: 4, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0",
        "[2025-03-02 09:20:04 TP0] [req 0] extend finished, next step: decode",
    ]
    assert cause_of(lines) == "startup_timeout"


def test_a_log_that_answered_requests_without_a_ready_line_was_serving() -> None:
    lines = [
        "[2025-03-02 09:20:01 TP0] Prefill batch. #new-seq: 1, #new-token: 4, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0",
        "[2025-03-02 09:20:02 TP0] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, "
        "gen throughput (token/s): 61.20, #queue-req: 0",
        '[2025-03-02 09:20:02] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
    ]
    assert cause_of(lines) == "ok"


def test_a_traceback_cut_in_the_serving_loops_frames_is_a_crash_while_serving() -> None:
    # The logger's prefix ate the frames' indentation ("ERROR:    "), and the traceback is cut
    # before its exception: its frames still say the engine's step loop was running.
    lines = [
        "ERROR:    Exception in callback _on_loop_done(task=<Task finished ...>)",
        "ERROR:    Traceback (most recent call last):",
        'ERROR:      File "/srv/venv/lib/python3.11/site-packages/engine/async_loop.py", line 40, '
        "in run_engine_loop",
        "ERROR:        outputs = await self.engine_step()",
        'ERROR:      File "/srv/venv/lib/python3.11/site-packages/engine/async_loop.py", line 88, '
        "in engine_step",
        "ERROR:        return await self.engine.step_async()",
        'ERROR:      File "/srv/venv/lib/python3.11/site-packa',
    ]
    assert cause_phase(lines) == ("runtime_crash", "benchmark")


def test_native_frames_that_place_nothing_leave_the_error_lines_words_to_place_it() -> None:
    lines = [
        "[Engine][ERROR] Encountered an error in forwardAsync function: vector::_M_range_check",
        "1       0x7f00aa11bb22 /opt/engine/lib/libengine.so(+0x11bb22) [0x7f00aa11bb22]",
        "2       0x7f00aa22cc33 /opt/engine/lib/libengine.so(+0x22cc33) [0x7f00aa22cc33]",
    ]
    assert cause_phase(lines) == ("runtime_crash", "benchmark")


@pytest.mark.parametrize(
    "refusal",
    [
        "ERROR: this card's architecture (Maxwell) is not supported by the installed build",
        "fatal: GPU architecture 'Volta' unsupported, rebuild with the matching arch list",
        "RuntimeError: device architecture gfx1010 is not supported",
    ],
)
def test_a_gpu_architecture_refused_in_plain_words_is_the_gpus(refusal: str) -> None:
    assert cause_of(["INFO loading model /models/x", refusal]) == "arch_unsupported"


def test_a_model_architecture_refused_in_plain_words_stays_the_models() -> None:
    line = "ERROR: model architecture 'JambaForCausalLM' is not supported by this build"
    assert cause_of(["INFO loading model /models/x", line]) == "model_unsupported"


def test_colour_codes_that_lost_their_escape_byte_are_no_part_of_the_message() -> None:
    # Pasted from a terminal: "[2m", "[0m", "[31m" left behind, some followed by a space.
    lines = [
        "[2m2025-03-02T09:14:11.000Z[0m [32m INFO[0m [2mlauncher[0m[2m:[0m Starting shard",
        "[2m2025-03-02T09:14:40.000Z[0m [31mERROR[0m [2mlauncher[0m[2m:[0m Shard complete "
        "standard error output:",
        "[2m2025-03-02T09:14:40.000Z[0m [31mERROR[0m RuntimeError: CUDA error: no kernel image "
        "is available for execution on the device",
    ]
    assert cause_of(lines) == "arch_unsupported"
    failure = diagnose_text("\n".join(lines)).failure
    assert failure is not None and "[0m" not in failure.message


def _cut(*frames: tuple[str, str, str]) -> list[str]:
    lines = ["INFO starting the server", "Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [
            f'  File "/srv/venv/lib/python3.11/site-packages/{path}", line 77, in {function}',
            f"    {code}",
        ]
    return lines


@pytest.mark.parametrize(
    ("frames", "family"),
    [
        # the device allocator was the last thing running: an allocation that failed
        (
            [
                ("engine/weights.py", "place", "buf = torch.empty(n, device=dev)"),
                ("torch/cuda/memory.py", "caching_allocator_alloc", "return _alloc(size)"),
            ],
            "cuda_oom",
        ),
        # the dummy batch run at the largest size to measure peak memory
        (
            [
                ("engine/worker.py", "measure_free_memory", "self.runner.profile_run()"),
                ("engine/runner.py", "profile_run", "self._dummy_run(self.max_tokens)"),
            ],
            "cuda_oom",
        ),
        # cut at the code line that calls it
        ([("engine/worker.py", "measure_free_memory", "self.runner.profile_run()")], "cuda_oom"),
        # the command-line parser refusing the command
        (
            [
                ("engine/cli.py", "main", "args = parser.parse_args()"),
                ("argparse.py", "parse_args", "self.error(msg % ' '.join(argv))"),
            ],
            "invalid_argument",
        ),
    ],
)
def test_the_frames_of_a_cut_traceback_name_what_was_being_done(
    frames: list[tuple[str, str, str]], family: str
) -> None:
    assert cause_of(_cut(*frames)) == family


@pytest.mark.parametrize(
    "line",
    [
        # a check that fails because a package is missing: the installation, not the check
        "AssertionError: the fast tokenizer needs the tokenizers package, which is not installed",
        # the toolkit the runtime finds is not the one its framework was built with
        "RuntimeError: The detected CUDA version (12.4) mismatches the version that was used to "
        "compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
        # compiled operators missing from the installed build
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'fused_add_norm'",
        # an install that never finished
        "  error: subprocess-exited-with-error",
        # the program names the package to install, and stops there
        "To use the paged kernels, please install kernels-ext: pip install kernels-ext",
    ],
)
def test_an_installation_problem_in_any_words_is_an_import_error(line: str) -> None:
    assert cause_of(["INFO starting the server", line]) == "import_error"


@pytest.mark.parametrize(
    ("report", "family"),
    [
        # a shell's report of how its job ended: the process died of that signal
        ("zsh: abort      ./bin/server --model m.gguf --port 8080", "runtime_crash"),
        ("zsh: segmentation fault  python -m engine.serve --model m", "runtime_crash"),
        ("bash: line 1:  4242 Segmentation fault      python -m engine.serve", "runtime_crash"),
        ("zsh: killed     python -m engine.serve --model m", "host_oom"),
        ("zsh: illegal hardware instruction  ./bin/server --model m.gguf", "arch_unsupported"),
    ],
)
def test_a_shells_report_that_its_job_died_is_that_death(report: str, family: str) -> None:
    lines = [*START, "2025-03-02 09:14:41 INFO Listening on http://0.0.0.0:9000", report]
    assert cause_of(lines) == family


@pytest.mark.parametrize(
    "line",
    [
        # a cache that cannot hold one sequence of the longest length the server must accept
        "RuntimeError: KV cache capacity (4096 tokens) is smaller than max_model_len (8192)",
        "ValueError: the paged cache holds fewer tokens (3000) than the max sequence length 4096",
        # the pool's token budget refused as too small (any engine's name for it)
        "ValueError: max_total_token_num is too small, please raise it",
    ],
)
def test_a_cache_too_small_for_one_sequence_is_the_kv_pools(line: str) -> None:
    assert cause_of(["INFO weights loaded in 40 s", line]) == "kv_pool_oom"


@pytest.mark.parametrize(
    "lines",
    [
        # a traceback cut right after the frame whose code line is an assert statement
        [
            "Traceback (most recent call last):",
            '  File "/srv/venv/lib/python3.11/site-packages/engine/sched.py", line 9, in merge',
            "    assert len(outputs) == len(batch.reqs), (len(outputs), len(batch.reqs))",
        ],
        # a C++ check of the framework, in its own words
        ["RuntimeError: Expected lens.size(0) == num_seqs + 1 to be true, but got false."],
        ['RuntimeError: slots.size() > 0 INTERNAL ASSERT FAILED at "/src/engine/cache.cpp":88'],
    ],
)
def test_a_failed_check_in_any_words_is_an_assertion(lines: list[str]) -> None:
    ready = ["INFO:     Application startup complete.", "INFO:     Uvicorn running on :8000"]
    assert cause_of([*ready, *lines]) == "assertion"


@pytest.mark.parametrize(
    "line",
    [
        # an exception no family names, in a benchmark client's log: the client's failure
        "requests.exceptions.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        "ValueError: Initial test run failed - check the benchmark arguments. Error: Not Found",
        # a timeout in a client is the client's requests timing out, not a start-up
        "asyncio.exceptions.TimeoutError",
    ],
)
def test_a_failure_in_a_benchmark_clients_log_is_the_clients(line: str) -> None:
    assert cause_of([*CLIENT_START[:2], line]) == "benchmark_errors"


@pytest.mark.parametrize(
    "line",
    [
        "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: http://h:8000/v1",
        "Error: 429 Too Many Requests",
        "client: request 17 failed with status code 503",
    ],
)
def test_an_http_error_status_seen_by_a_client_is_a_benchmark_error(line: str) -> None:
    assert cause_of([line]) == "benchmark_errors"


@pytest.mark.parametrize(
    "line",
    [
        # a key the loader needs for this architecture is not in the model file (older build)
        "llama_model_load: error loading model: error loading model hyperparameters: key not "
        "found in model: newarch.rope.dimension_count",
        # a tensor stored in a type this build does not know
        "gguf_init: tensor 'blk.3.ffn_up.weight' has invalid ggml type 41 (NONE)",
        # an engine naming the model class it does not support
        "RuntimeError: this backend does not support MixtralVisionForCausalLM; use the other "
        "backend",
    ],
)
def test_a_model_file_or_class_this_build_cannot_load_is_the_models(line: str) -> None:
    assert cause_of(["INFO loading model /models/x", line]) == "model_unsupported"


# --- tenth round: mechanisms from the second blind set (batch p), each with lines of its own --


def test_an_error_before_the_first_served_request_of_an_excerpt_that_starts_serving_counts() -> (
    None
):
    """An excerpt that starts while the server serves (no start-up line in it) and shows the
    engine dead: the access-log line after it is a request answered before the death was
    noticed, not the moment the server became ready."""
    lines = [
        '(Frontend pid=77) ERROR 01-02 10:00:00 [api.py:88]   File "/srv/eng/client.py", line 4'
        ", in next_output",
        "(Frontend pid=77) ERROR 01-02 10:00:00 [api.py:88]     raise self._dead_error()",
        "(Frontend pid=77) ERROR 01-02 10:00:00 [api.py:88] eng.errors.EngineDeadError: the "
        "engine core died; see its log for the cause",
        '(Frontend pid=77) INFO:     10.1.2.3:5511 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
    assert cause_of(lines) == "runtime_crash"


def test_an_error_before_the_first_served_request_after_start_up_lines_did_not_stop_it() -> None:
    """The control: start-up lines, an optional part's traceback, then requests answered: the
    server came up despite it (healthy)."""
    lines = [
        *START,
        "Traceback (most recent call last):",
        '  File "/srv/eng/plugins.py", line 3, in <module>',
        "ModuleNotFoundError: No module named 'optional_metrics'",
        '10.1.2.3:5511 - "POST /v1/completions HTTP/1.1" 200 OK',
        '10.1.2.3:5512 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
    assert cause_of(lines) == "ok"


@pytest.mark.parametrize(
    "frames",
    [
        [
            "ERROR:    Exception in ASGI application",
            "ERROR:    Traceback (most recent call last):",
            'ERROR:      File "/usr/lib/python3/site-packages/starlette/routing.py", line 70, '
            "in app",
            "ERROR:        response = await func(request)",
            'ERROR:      File "/srv/eng/entrypoints/openai/server.py", line 210, in create_chat_'
            "completion",
            "ERROR:        gen = await handler.create_chat_completion(req, raw)",
        ],
        [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/aiohttp/web_protocol.py", line 452, in '
            "_handle_request",
            "    resp = await request_handler(request)",
            '  File "/srv/eng/api.py", line 55, in completion_stream_generator',
            "    async for out in results:",
        ],
    ],
)
def test_a_traceback_cut_in_a_request_handler_is_a_crash_while_serving(frames: list[str]) -> None:
    """The frames of an HTTP request's handler say the server was up and serving, whatever
    was (or was not) logged of its start: a crash after ready, not a start-up failure."""
    assert cause_phase(frames) == ("runtime_crash", "benchmark")


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    "message",
    [
        "ValueError: this accelerator build serves prompts of at most 4096 tokens (received a "
        "prompt with 9120 tokens)",
        "ValueError: This model's maximum context length is 8192 tokens. However, you requested "
        "12000 tokens in the messages.",
        "ValueError: Input is too long for the model: 33000 > 32768",
        "ValueError: prompt is longer than the model supports (40960 > 32768)",
    ],
)
def test_a_request_that_does_not_fit_while_serving_is_a_benchmark_error(message: str) -> None:
    """A request refused for its size by a server that stays up: the requests failed, the
    server did not (docs/failures.md: 4xx, the request does not fit the server)."""
    lines = [
        "ERROR 01-02 10:00:00 [chat.py:90] Traceback (most recent call last):",
        'ERROR 01-02 10:00:00 [chat.py:90]   File "/srv/eng/entrypoints/chat.py", line 40, in '
        "chat_completion_stream_generator",
        "ERROR 01-02 10:00:00 [chat.py:90]     async for res in result_generator:",
        f"ERROR 01-02 10:00:00 [chat.py:90] {message}",
    ]
    assert cause_phase(lines) == ("benchmark_errors", "benchmark")
    # the same words with no sign of serving say nothing of a request
    assert cause_of(["INFO loading model /models/x", message]) != "benchmark_errors"


def test_an_engine_that_dies_with_requests_running_crashed_while_serving() -> None:
    """A scheduler's dump with requests running says the server was serving when its engine
    reported a fatal error: a crash after ready (nothing names a narrower family)."""
    lines = [
        "(Core pid=31) ERROR 01-02 10:00:00 [dump.py:70] Dumping scheduler output: new_reqs=[], "
        "finished_req_ids=[]",
        "(Core pid=31) ERROR 01-02 10:00:00 [dump.py:79] Dumping scheduler stats: "
        "SchedulerStats(num_running_reqs=5, num_waiting_reqs=2, kv_cache_usage=0.4)",
        "(Core pid=31) ERROR 01-02 10:00:00 [core.py:700] The engine core hit a fatal error.",
    ]
    assert cause_phase(lines) == ("runtime_crash", "benchmark")


@pytest.mark.parametrize(
    "line",
    [
        # the collective libraries of other accelerators, NCCL's counterparts, in their words
        "RuntimeError: oneCCL: comm_selector.cpp:57 create: EXCEPTION: device node not found",
        "RuntimeError: CNCL error: unhandled system error",
        "RuntimeError: BKCL_ERROR: bkcl_init_rank failed with code 3",
        "RuntimeError: MCCL error: remote process exited or there was a network error",
    ],
)
def test_any_vendors_collective_library_failing_is_a_collective_error(line: str) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/eng/worker/dev_worker.py", line 80, in init_device',
        "    torch.distributed.all_reduce(torch.zeros(1).to(self.device))",
        line,
    ]
    assert cause_of(lines) == "nccl_error"
    assert cause_of([line]) == "nccl_error"


@pytest.mark.parametrize(
    "line",
    [
        "[TRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine (/src/runtime/"
        "rt.cpp:72)",
        "E1203 10:00:00.1 model.cc:91] failed to load 'llm': Internal: unable to deserialize "
        "the engine plan /models/llm/1/rank0.engine",
        "RuntimeError: Deserialization of the serialized engine failed",
    ],
)
def test_an_engine_file_that_will_not_deserialize_was_built_by_another_version(line: str) -> None:
    """A serialised engine or plan the runtime cannot read back was built by another version
    of it (docs/failures.md: two parts built for different versions, the ABI family), even
    when the runtime words it as a failed check."""
    assert cause_of(["I1203 10:00:00.0 loading model 'llm'", line]) == "import_error"


@pytest.mark.parametrize(
    "line",
    [
        "subprocess.CalledProcessError: Command '['/opt/venv/lib/python3.12/site-packages/"
        "kernels/bin/ptxas', '--gpu-name=sm_120', '/tmp/k.ptx', '-o', '/tmp/k.o']' returned "
        "non-zero exit status 255.",
        "RuntimeError: command ['nvcc', '-arch=sm_103a', '-c', 'attn.cu'] exited with code 1",
        "subprocess.CalledProcessError: Command '['hipcc', '--offload-arch=gfx1151', '-O3', "
        "'k.hip']' returned non-zero exit status 1.",
    ],
)
def test_a_kernel_compiler_failing_for_the_gpu_it_targets_refuses_the_gpu(line: str) -> None:
    """A kernel compiler run for this GPU's architecture that exits with an error: the build
    cannot make code for that GPU (its words are in the compiler's own output, not here)."""
    assert cause_of(["INFO compiling kernels for the first forward", line]) == "arch_unsupported"


@pytest.mark.parametrize(
    "warning",
    [
        "WARNING: unknown architecture: NovaForCausalLM, trying it as LlamaForCausalLM",
        " !! Warning, unknown architecture: NovaForConditionalGeneration",
        "[W] architecture NovaForCausalLM is not recognised; falling back to the Llama loader",
    ],
)
def test_a_loader_warned_of_an_unknown_architecture_before_a_cut_load_traceback(
    warning: str,
) -> None:
    """A loader that warns it does not know the model's architecture, then a traceback from
    loading the model cut before its exception: the model is not supported."""
    lines = [
        warning,
        "Traceback (most recent call last):",
        '  File "/srv/app/main.py", line 40, in start',
        "    await model.load_model(path)",
        '  File "/srv/app/model.py", line 79, in load_model',
        "    async for _ in load_model_gen(path):",
    ]
    assert cause_of(lines) == "model_unsupported"


# SGLang 0.5.17's own capture lines, as recorded on the GPU test machine (tests/data/gpu-crashlogs)
GPU_LOGS = Path(__file__).resolve().parents[1] / "data" / "gpu-crashlogs"


def _gpu_lines(name: str, first: int, last: int) -> list[str]:
    with (GPU_LOGS / f"sglang-0.5.17-{name}.log").open(encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")  # a progress bar's carriage returns stay in its line
    return lines[first - 1 : last]


def test_sglang_0_5_17s_capture_words_say_when_a_capture_runs_and_ends() -> None:
    """ "Capture target prefill CUDA graph begin" ... "Capture target decode CUDA graph end":
    a log cut after a capture began and before it ended stops in the capture (a saved excerpt
    that stops there: the capture's failure), one cut after it ended does not."""
    running = _gpu_lines("healthy-baseline", 28, 33)  # the decode capture began, no end
    assert running[-1].startswith("[2026-12-06 02:23:45] Capture target decode CUDA graph begin")
    assert cause_phase(running, engine="sglang") == ("cuda_graph_capture", "graph_capture")
    ended = _gpu_lines("healthy-baseline", 28, 35)  # both captures ended
    failure = diagnose_text("\n".join(ended), engine="sglang").failure
    assert failure is not None and failure.cause.value == "startup_timeout"


def test_a_capture_that_stalls_until_the_program_is_stopped_is_a_startup_timeout() -> None:
    """The capture began, made no progress and raised nothing; the program was then stopped
    from outside (the interpreter's shutdown report follows): a start-up that ran out of
    time in the capture, not a capture that failed (tests/data/gpu-crashlogs: induced with
    ``--max-total-tokens 64``, stopped at the probe's limit)."""
    lines = _gpu_lines("max-total-tokens-64-capture-stall", 1, 33)
    assert cause_phase(lines, engine="sglang") == ("startup_timeout", "graph_capture")
    # the same capture, the log cut before the shutdown report: it stops in the capture
    assert "leaked semaphore" in lines[31] and "leaked" not in "".join(lines[:31])
    failure = diagnose_text("\n".join(lines[:31]), engine="sglang").failure
    assert failure is not None and failure.cause.value == "cuda_graph_capture"


@pytest.mark.parametrize(
    ("lines", "want"),
    [
        # a supervisor that stops its own idle worker: the kill, then its word that the stop
        # went as meant
        (
            [
                "2024/01/02 10:00:00 runner.go:88: signal: killed",
                "2024/01/02 10:00:00 runner.go:91: model runner stopped successfully",
            ],
            "ok",
        ),
        (
            [
                "worker 3 exited on signal 9 (SIGKILL)",
                "worker pool: worker 3 shut down cleanly",
            ],
            "ok",
        ),
        # the kill alone, or followed by a failure, is still a kill
        (["2024/01/02 10:00:00 runner.go:88: signal: killed"], "host_oom"),
        (
            [
                "2024/01/02 10:00:00 runner.go:88: signal: killed",
                '2024/01/02 10:00:00 sched.go:40: error loading model: "runner terminated"',
            ],
            "host_oom",
        ),
    ],
)
def test_a_kill_its_supervisor_reports_as_a_clean_stop_is_no_failure(
    lines: list[str], want: str
) -> None:
    assert cause_of(lines) == want


def test_a_loggers_advice_after_an_exception_is_no_part_of_its_message() -> None:
    """An exception's message goes on in lines without a logger's record of their own; an
    INFO record after it is the engine's routine advice (which names the KV cache's knobs),
    not what the exception said."""
    lines = [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU",
        "INFO 01-02 10:00:00 runner.py:80] Capturing graphs takes 1-3 GiB; if you run out of "
        "memory, lower gpu_memory_utilization or the KV cache size.",
    ]
    assert cause_of(lines) == "cuda_oom"


@pytest.mark.parametrize(
    ("record", "want"),
    [
        (
            "future: <Task finished name='Task-3' coro=<Loop.run() done, defined at /srv/r.py:10> "
            "exception=RuntimeError('CUDA error: an illegal memory access was encountered')>",
            "runtime_crash",
        ),
        # Triton rejecting a kernel's source: the kernels were written for another Triton
        (
            "future: <Task finished name='Task-3' coro=<Loop.run() done, defined at /srv/r.py:10> "
            "exception=CompilationError('at 12:4:\\ndef _attn_kernel(\\n    Q, K, V,\\n')>",
            "import_error",
        ),
    ],
)
def test_an_asyncio_tasks_exception_record_is_its_exception(record: str, want: str) -> None:
    """asyncio's report of a task that ended in an exception ("future: <Task finished ...
    exception=X('...')>") is that exception, not a line to read past (the log then stops)."""
    assert cause_of(["INFO 01-02 10:00:00 router ready, waiting for requests", record]) == want


# Eleventh round (from the third blind set's misses, each mechanism with lines of its own).


@pytest.mark.parametrize(
    "prefix",
    [
        "[w0] ",
        "2025-02-03 04:05:06,789 - engine - INFO - ",
        "2025-02-03T04:05:06.789123456Z 2025-02-03 04:05:06,789 - wrapper - INFO - [w0] ",
    ],
)
def test_a_frames_code_line_that_lost_its_indentation_belongs_to_the_frame(prefix: str) -> None:
    """A wrapper that logs another process's output puts its prefix before each line and may
    eat the traceback's indentation; the code line under the last frame still belongs to the
    traceback, and it may be the only line that says where the failure ran (a serving loop)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/eng/managers/worker.py", line 301, in run_worker_process',
        "    worker.event_loop_overlap()",
    ]
    assert cause_phase([prefix + line.strip() for line in lines]) == ("runtime_crash", "benchmark")


@pytest.mark.parametrize("esc", ["#033", "\\033", "\\x1b", "\\e", "^["])
def test_colour_codes_whose_escape_byte_was_written_out_are_colour(esc: str) -> None:
    """A log shipper (CloudWatch, syslog) or a paste writes the escape byte out as text; the
    codes are colour all the same, and a level they wrap is that line's level."""
    line = (
        f"{esc}[2m2025-03-04T05:06:07.123Z{esc}[0m {esc}[31mERROR{esc}[0m "
        f"{esc}[2mrouter::infer{esc}[0m{esc}[2m:{esc}[0m CUDA error: an illegal memory access "
        "was encountered"
    )
    failure = diagnose_text(line).failure
    assert failure is not None
    assert failure.cause.value == "runtime_crash"
    assert esc not in failure.message


@pytest.mark.parametrize(
    "line",
    [
        "2025-03-04T05:06:07.123Z ERROR compat:generate{parameters=Params { top_k: None }}:"
        "generate: router::infer: src/infer.rs:246: Incomplete generation",
        '2025-03-04T05:06:07.123Z ERROR chat_completions{total_time="12ms"}: server::api: '
        "src/api.rs:88: stream ended early",
    ],
)
def test_an_error_inside_a_requests_tracing_span_happened_while_serving(line: str) -> None:
    """A Rust server's tracing names the span an event happened in (``generate{...}:``); an
    error inside a request's span happened while the server was serving it."""
    failure = diagnose_text(line).failure
    assert failure is not None
    assert (failure.cause.value, failure.phase.value) == ("runtime_crash", "benchmark")


@pytest.mark.parametrize(
    ("failure", "want"),
    [
        (
            [
                "Traceback (most recent call last):",
                '  File "/srv/app/warmup.py", line 88, in wait_and_warmup',
                "    assert reply.status == 200, reply",
                "AssertionError: reply=<Reply 503>",
            ],
            "assertion",
        ),
        (
            [
                "server: src/plan.cpp:212: void Plan::run(): Assertion `rows <= limit' failed.",
                "CRITICAL worker 2 died, shutting the group down",
            ],
            "assertion",
        ),
        (["Segmentation fault (core dumped) in worker 1"], "runtime_crash"),
    ],
)
@pytest.mark.parametrize("kill", ["Killed", "launcher: worker exited on signal 9 (SIGKILL)"])
def test_a_kill_after_a_failed_check_or_crash_is_its_echo_not_the_host(
    failure: list[str], want: str, kill: str
) -> None:
    """An engine that kills its own process group once a child failed leaves a ``Killed`` (or
    a signal 9) after the failure: that kill echoes the failure and names no family of its
    own, so a failed check or a crash before it stays what it was (docs/failures.md: host_oom
    or killed)."""
    assert cause_of([*LOADING, *failure, "", kill]) == want


@pytest.mark.parametrize(
    "lines",
    [
        [
            "Namespace(model='m', tokenizer='/t', request_rate=8.0, num_prompts=200, seed=1)",
            "loaded 200 prompts",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/httpx/_transports/default.py", line 72, in '
            "map_httpcore_exceptions",
            "    yield",
            "ConnectionResetError: Connection lost",
        ],
        [
            "$ loadgen run --model m",
            "Starting benchmark...",
            "Benchmark failed: the warm-up request failed. Error: Traceback (most recent call "
            "last):",
            '  File "/usr/lib/python3/site-packages/httpx/_client.py", line 1014, in send',
            "    response = await self._send_handling_auth(",
        ],
    ],
)
def test_a_benchmark_client_is_known_by_its_arguments_and_its_own_words(lines: list[str]) -> None:
    """A load generator dumps its arguments (a request rate, a number of prompts) and says that
    its benchmark starts or failed: its log is a client's, and what failed is its requests."""
    assert cause_phase(lines) == ("benchmark_errors", "benchmark")


@pytest.mark.parametrize(
    "line",
    [
        "ERROR:    [Errno 99] error while attempting to bind on address ('::1', 9000, 0, 0): "
        "cannot assign requested address",
        "error: bind to 0.0.0.0:9000 failed: permission denied",
        "FATAL listener: error binding socket on port 9000",
    ],
)
def test_any_error_binding_the_servers_address_is_the_port_family(line: str) -> None:
    """A server that cannot bind its address (in use, not assignable, refused), in whatever
    words its web stack uses, failed at its socket: the port family."""
    assert cause_of(["INFO starting the server", line]) == "port_in_use"


def test_a_benchmark_clients_full_report_with_every_request_answered_is_healthy() -> None:
    """A load generator's report that counts every request answered and none failed says the
    server served them: no start-up was cut, nothing failed."""
    lines = [
        "============ Serving Benchmark Result ============",
        "Successful requests:                     500",
        "Failed requests:                         0",
        "Benchmark duration (s):                  41.20",
        "Request throughput (req/s):              12.14",
        "---------------Time to First Token----------------",
        "Mean TTFT (ms):                          311.02",
        "P99 TTFT (ms):                           980.44",
    ]
    assert cause_of(lines) == "ok"
    # one request lost is a benchmark error, as before
    lost = [
        line.replace("Failed requests:                         0", "Failed requests: 1")
        for line in lines
    ]
    assert cause_of(lost) == "benchmark_errors"


def _thread_dump(frames: list[str]) -> list[str]:
    return [
        "Thread 0x00007f3a2b1c0700 (most recent call first):",
        '  File "/usr/lib/python3.11/threading.py", line 331 in wait',
        *frames,
        '  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run',
    ]


@pytest.mark.parametrize(
    ("frames", "want"),
    [
        (
            [
                '  File "/srv/eng/managers/worker.py", line 412 in wait_batch_result',
                '  File "/srv/eng/managers/worker.py", line 240 in event_loop_overlap',
            ],
            ("watchdog_timeout", "benchmark"),
        ),
        (
            [
                '  File "/srv/eng/distributed/setup.py", line 88 in init_process_group',
                '  File "/srv/eng/model_runner.py", line 120 in load_model',
            ],
            ("startup_timeout", "load"),
        ),
    ],
)
def test_a_dump_of_every_threads_stack_with_no_fatal_error_is_a_hang(
    frames: list[str], want: tuple[str, str]
) -> None:
    """Python's faulthandler dumps every thread's stack ("Thread 0x... (most recent call
    first):") when a watchdog or an operator asks: the program was stuck where its frames
    are, it did not crash. While serving that is a hang the watchdog catches; in start-up, a
    start that never finished. A dump after "Fatal Python error" is a crash's."""
    assert cause_phase(_thread_dump(frames)) == want
    crash = ["Fatal Python error: Segmentation fault", "", *_thread_dump(frames)]
    assert cause_of(crash) == "runtime_crash"


def test_py_spys_dump_of_a_stuck_server_is_a_hang_too() -> None:
    """py-spy's dump (``py-spy dump --pid N``) of a server stuck while serving: the same hang."""
    lines = [
        "Process 4242: python -m eng.serve --model m",
        "Python v3.11.9 (/usr/bin/python3.11)",
        "",
        'Thread 4242 (idle): "MainThread"',
        "    wait (threading.py:331)",
        "    wait_batch_result (eng/managers/worker.py:412)",
        "    event_loop_overlap (eng/managers/worker.py:240)",
        "    run_worker_process (eng/managers/worker.py:301)",
    ]
    assert cause_phase(lines) == ("watchdog_timeout", "benchmark")


@pytest.mark.parametrize("fn", ["sample_tokens", "_sample", "sample", "decode_step"])
def test_a_traceback_cut_in_the_sampler_or_a_decode_step_ran_while_serving(fn: str) -> None:
    """Sampling the next tokens and a decode step run only once requests are served: a
    traceback cut in those frames is a crash while serving."""
    lines = [
        "(Worker_TP1 pid=7) ERROR 01-06 19:37:15 [executor.py:824] Traceback (most recent call "
        "last):",
        '(Worker_TP1 pid=7) ERROR 01-06 19:37:15 [executor.py:824]   File "/srv/eng/worker.py", '
        f"line 354, in {fn}",
        "(Worker_TP1 pid=7) ERROR 01-06 19:37:15 [executor.py:824]     return self.runner.step(x)",
    ]
    assert cause_phase(lines) == ("runtime_crash", "benchmark")


@pytest.mark.parametrize(
    "told",
    [
        "[w3] eng.kernels: import failed (cuda_utils.so: cannot build), the model is off",
        "[w3] skipping eng.models.deepseek: import error (libcuda.so not found)",
    ],
)
def test_an_import_error_told_before_a_cut_traceback_is_the_failure(told: str) -> None:
    """A loader that goes on after it could not import a module says "import error" in
    words; when the traceback that follows is cut before its exception, that import is what
    the log shows of the cause. (SGLang's "Ignore import error when loading X", printed by
    every healthy start, stays ignored.)"""
    lines = [
        told,
        "[w1] Worker hit an exception: Traceback (most recent call last):",
        '  File "/srv/eng/managers/worker.py", line 88, in run_worker_process',
    ]
    assert cause_of(lines) == "import_error"


@pytest.mark.parametrize(
    "end",
    [
        ["TypeError: __init__() missing 1 required positional argument: 'detail'"],
        [],  # the traceback cut at the raise statement
    ],
)
def test_the_raise_statement_of_the_deepest_frame_names_the_exception_meant(end: list[str]) -> None:
    """The deepest frame's ``raise X(...)`` says which exception the program meant to raise,
    even when building it failed (a ``TypeError`` about its arguments) or the excerpt stops
    there: its type names the family as the exception line would."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/eng/serve/api.py", line 30, in main',
        "    engine = build_engine(args)",
        '  File "/srv/eng/serve/engine.py", line 111, in build_engine',
        "    raise ConfigError('set --model-name or a backend config')",
        *end,
    ]
    assert cause_of(lines) == "invalid_argument"


DUMP = (
    "ERROR 08-08 20:16:19 [dump.py:69] Dumping state for the engine with config: model='/m', "
    "trust_remote_code=False, model_type=None, dtype=auto, max_model_len=8192, "
    "tensor_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
    "mem_fraction_static=0.9, seed=0"
)


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize("prefix", ["", "> ", "[rank0]: > ", "(Engine pid=7) "])
def test_the_settings_an_error_line_dumps_are_no_words_of_the_failure(prefix: str) -> None:
    """An error line that dumps the engine's settings (``key=value, ...``) names settings,
    not complaints: ``trust_remote_code`` or ``mem_fraction_static`` there refuse nothing.
    The words before the dump still count."""
    assert cause_of([prefix + DUMP]) == "unknown"
    oom = DUMP.replace("Dumping state for the engine", "CUDA out of memory; the engine state")
    assert cause_of([prefix + oom]) == "cuda_oom"


@pytest.mark.parametrize(
    "check",
    [
        ("in _check_if_device_supports_dtype", "    _check_if_device_supports_dtype(cfg.dtype)"),
        ("in verify_gpu_compatibility", "    raise_if_unfit(torch.cuda.get_device_capability())"),
        ("in ensure_arch_supported", "    ensure_arch_supported(props)"),
    ],
)
def test_a_traceback_cut_in_a_check_that_the_gpu_supports_something_refuses_the_gpu(
    check: tuple[str, str],
) -> None:
    """A check whose name says it checks that the GPU (device, architecture) supports
    something, where a traceback stops: the GPU was refused."""
    where, code = check
    lines = [
        "ERROR | stderr | Traceback (most recent call last):",
        'ERROR | stderr |   File "/srv/eng/worker.py", line 71, in init_model',
        "ERROR | stderr |     self.setup(cfg)",
        f'ERROR | stderr |   File "/srv/eng/worker.py", line 231, {where}',
        f"ERROR | stderr | {code}",
    ]
    assert cause_of(lines) == "arch_unsupported"
