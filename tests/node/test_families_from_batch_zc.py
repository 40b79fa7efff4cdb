"""Families read in any engine's words, from the misses of batch zc's tuning part (issue 51).

Batch zc (the fifteenth blind set) joined with its tuning part as rule data (MANIFEST.md).
Each test names a family the way at least two engines, runtimes or supervisors word it; every
line is written for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

from autotune.node.logparse import parse_log

# --- a structured record pasted cut short or without its brace: its level is read ----------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # a Python service's JSON logger, pasted from the middle of the record
        (
            '"timestamp": "2026-02-01 09:00:00,120", "level": "ERROR", "message": "Error: '
            "engine failed to start: CUDA error: out of memory",
            "Error: engine failed to start: CUDA error: out of memory",
        ),
        # a Go or Node service's record (zap, pino), cut before its closing brace
        (
            '{"level":"error","ts":1767000000.5,"msg":"failed to load model: CUDA error: out of '
            "memory",
            "failed to load model: CUDA error: out of memory",
        ),
    ],
)
def test_a_cut_structured_record_gives_its_level_and_message(line: str, message: str) -> None:
    """A record whose level and message fields are there is read as the logger wrote it,
    though the thread cut it short or dropped its opening brace."""
    record = parse_log([line])[0]
    assert (record.text, record.level) == (message, "error")
    assert cause_of([line]) == "cuda_oom"


def test_fields_without_a_level_stay_as_written() -> None:
    """A line of fields with no level (a config dump) is not a record to read a level from."""
    line = '"model": "llama-3-8b", "max_batch_size": 8, "message": "loaded"'
    record = parse_log([line])[0]
    assert (record.text, record.level) == (line, None)


# --- a supervisor that ended the server for a failed health check: killed ------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # Kubernetes' events: the liveness probe failed, the kubelet kills the container
        [
            "  Normal   Started    6m                 kubelet  Started container engine",
            "  Warning  Unhealthy  4m (x3 over 5m)    kubelet  Liveness probe failed: HTTP probe "
            "failed with statuscode: 503",
            "  Normal   Killing    4m                 kubelet  Container engine failed liveness "
            "probe, will be restarted",
        ],
        # a model-swapping proxy (Go): its health check errs, then it terminates the child
        [
            "[INFO] <qwen-32b> starting upstream: llama-server --port 5801",
            "[DEBUG] <qwen-32b> health check error on http://127.0.0.1:5801/health: 503",
            "[DEBUG] <qwen-32b> cmd.Wait() returned error: signal: terminated",
        ],
    ],
)
def test_a_supervisor_that_ended_a_server_failing_its_health_check_is_killed(
    lines: list[str],
) -> None:
    """The server printed no error and never became ready; the last lines are its supervisor
    ending it after a failed health check: a kill, not a start-up that hung."""
    assert cause_of(lines) == "killed"


@pytest.mark.parametrize(
    "lines",
    [
        # a health check that failed while the server was starting, then nothing: a hang
        [
            "INFO 01-01 10:00:00 [loader.py:1] Loading weights took 30.1 seconds",
            "[DEBUG] health check error on http://127.0.0.1:8000/health: 503",
        ],
        # a container killed with no failed check before it: no supervisor's reason given
        [
            "INFO 01-01 10:00:00 [loader.py:1] Loading weights took 30.1 seconds",
            "  Normal   Killing    1m    kubelet  Stopping container engine",
        ],
    ],
)
def test_a_failed_check_or_a_kill_alone_is_no_supervisor_kill(lines: list[str]) -> None:
    """Either half alone says nothing of why the start ended: it stays a stopped start."""
    assert cause_of(lines) != "killed"


# --- a cluster manager's report that a node failed, where the log stops: node_lost ---------------


@pytest.mark.parametrize(
    "lines",
    [
        # Ray's control store: a node failed, its actors are rebuilt elsewhere
        [
            "[2026-01-01 10:00:00,000 I 12 12] (gcs_server) gcs_actor_manager.cc:1038: Node "
            "7f3e9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b failed, reconstructing "
            "actors.",
            "[2026-01-01 10:00:00,001 I 12 12] (gcs_server) gcs_node_manager.cc:300: Removing "
            "node, node id = 7f3e9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b",
        ],
        # Kubernetes' events: the node the server ran on stopped reporting
        [
            "INFO 01-01 10:00:00 [loader.py:1] Loading weights",
            "  Warning  NodeNotReady  2m   node-controller  Node gpu-node-3 status is now: "
            "NodeNotReady",
        ],
    ],
)
def test_a_node_the_cluster_lost_where_the_log_stops_is_node_lost(lines: list[str]) -> None:
    """The server printed no error; the last lines are its cluster manager saying a node
    failed: the node was lost, not a start-up that hung."""
    assert cause_of(lines) == "node_lost"


# --- a start that stops in one subsystem's own set-up: that step's family (pre-registered) ------


@pytest.mark.parametrize(
    ("lines", "family"),
    [
        # NCCL setting up a communicator, and nothing after it
        (
            [
                "INFO 01-01 10:00:00 [loader.py:1] Loading weights took 12.0 seconds",
                "node-a:4100:4180 [0] NCCL INFO Channel 00/02 :    0   1",
                "node-a:4100:4180 [0] NCCL INFO Connected all rings",
                "node-a:4100:4180 [0] NCCL INFO Connected all trees",
            ],
            "nccl_error",
        ),
        # Ascend's HCCL, the same step in its own words
        (
            [
                "[INFO] worker 0 started",
                "[HCCL INFO] hcclCommInitRootInfo: rank 0 of 8 begins",
                "[HCCL INFO] establishing links with 7 peers",
                "[HCCL INFO] link setup in progress",
            ],
            "nccl_error",
        ),
        # the engine waiting on a worker through shared memory, minute after minute
        (
            [
                "(EngineCore pid=10) INFO 01-01 10:01:00 [shm_broadcast.py:1] No available "
                "shared memory broadcast block found in 60 seconds.",
                "(EngineCore pid=10) INFO 01-01 10:02:00 [shm_broadcast.py:1] No available "
                "shared memory broadcast block found in 60 seconds.",
                "(EngineCore pid=10) INFO 01-01 10:03:00 [shm_broadcast.py:1] No available "
                "shared memory broadcast block found in 60 seconds.",
            ],
            "watchdog_timeout",
        ),
    ],
)
def test_a_start_stopped_in_one_subsystems_set_up_names_its_family(
    lines: list[str], family: str
) -> None:
    """No error, no ready line, and the last lines are all one subsystem's own set-up: the
    hang is in that step, not a start that was merely slow."""
    assert cause_of(lines) == family


def test_set_up_lines_before_other_progress_are_no_hang_of_that_step() -> None:
    """The collective set up and the start went on: its lines are not where it stopped."""
    lines = [
        "node-a:4100:4180 [0] NCCL INFO Connected all rings",
        "node-a:4100:4180 [0] NCCL INFO Connected all trees",
        "INFO 01-01 10:00:00 [model_runner.py:1] Capturing cudagraphs for decoding",
    ]
    assert cause_of(lines) not in ("nccl_error", "watchdog_timeout")
