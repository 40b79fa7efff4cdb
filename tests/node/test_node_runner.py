"""run_trial end to end against real subprocesses (the fixture servers in ./servers)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from node_helpers import SERVERS, crash_argv, server_argv

from autotune.models import Cause, Outcome, Phase, TrialSpec
from autotune.node import run_trial
from autotune.node.process import NodeState

SpecMaker = Callable[..., TrialSpec]


def _pids_alive(log: str, word: str) -> list[int]:
    pids = [int(p) for p in re.findall(rf"{word} (\d+)", log)]
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]


def test_ok_trial_measures_and_cleans_up(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--accept-length", "2.5", "--usage"),
        workload={"num_requests": 12, "output_len": 20, "warmup_requests": 2},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    metrics = result.metrics
    assert metrics is not None
    assert (metrics.completed, metrics.failed, metrics.output_tokens) == (12, 0, 12 * 20)
    assert metrics.accept_length == 2.5
    assert metrics.output_tok_s > 0 and metrics.ttft_ms is not None
    assert result.milestones == ["load_begin", "weights_loaded", "graphs", "ready"]
    assert result.cleanup.clean and result.cleanup.processes_left == 0
    assert result.cleanup.gpu_clean is None  # no GPU checked on this machine
    assert result.port is not None and result.port > 0
    assert result.log_path is not None and result.log_path.endswith("trial-0007-a0.log")
    assert result.timings.launch_to_ready_s is not None
    assert result.timings.benchmark_s is not None and result.timings.total_s > 0
    assert result.node == socket.gethostname()
    assert json.loads(result.model_dump_json())["outcome"] == "ok"


def test_generate_endpoint(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--chunk", "3"),
        workload={"endpoint": "/generate", "num_requests": 4, "output_len": 10},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    assert result.metrics is not None and result.metrics.output_tokens == 40


def test_orphans_are_killed(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--spawn", "double-fork", "--spawn", "setsid", "--spawn", "ignore-term"),
        limits={"teardown_grace_s": 0.5},
        workload={"num_requests": 2, "warmup_requests": 0},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.OK, result.failure
    log = Path(result.log_path or "").read_text()
    assert "grandchild" in log and "setsid child" in log and "stubborn child" in log
    assert result.cleanup.processes_left == 0 and result.cleanup.clean
    assert _pids_alive(log, "grandchild") == [] and _pids_alive(log, "setsid child") == []
    assert not NodeState().path.exists()


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    ("scenario", "outcome", "cause", "phase", "exit_code"),
    [
        ("kv_pool_oom", Outcome.CRASHED, Cause.KV_POOL_OOM, Phase.MEMORY_POOL, -9),
        ("graph_capture", Outcome.CRASHED, Cause.CUDA_GRAPH_CAPTURE, Phase.GRAPH_CAPTURE, -9),
        ("argparse", Outcome.CRASHED, Cause.INVALID_ARGUMENT, Phase.LAUNCH, 2),
        ("argparse_other", Outcome.CRASHED, Cause.INVALID_ARGUMENT, Phase.LAUNCH, 2),
        ("unbalanced", Outcome.INFRA, Cause.GPU_NOT_CLEAN, Phase.MEMORY_POOL, -9),
        ("plain_kill", Outcome.CRASHED, Cause.HOST_OOM, Phase.LOAD, -9),  # SIGKILL, no error
        ("unknown_traceback", Outcome.CRASHED, Cause.UNKNOWN, Phase.LOAD, 1),
        ("exit0_early", Outcome.CRASHED, Cause.UNKNOWN, Phase.LOAD, 0),
    ],
)
def test_startup_crashes_are_classified(
    make_spec: SpecMaker,
    scenario: str,
    outcome: Outcome,
    cause: Cause,
    phase: Phase,
    exit_code: int,
) -> None:
    result = run_trial(make_spec(crash_argv(scenario)))
    assert result.outcome == outcome
    failure = result.failure
    assert failure is not None
    assert (failure.cause, failure.phase, failure.exit_code) == (cause, phase, exit_code)
    assert failure.evidence and failure.log_tail
    assert result.cleanup.processes_left == 0
    assert failure.permanent == (outcome != Outcome.INFRA)


def test_nccl_token_blames_the_variable(make_spec: SpecMaker) -> None:
    spec = make_spec(crash_argv("nccl_token"), env={"NCCL_PROTO": "LL129", "NCCL_ALGO": "Ring"})
    failure = run_trial(spec).failure
    assert failure is not None
    assert (failure.cause, failure.rule) == (Cause.NCCL_ERROR, "common.nccl_bad_token")
    assert failure.blame == ["NCCL_PROTO", "NCCL_ALGO"]


def test_fatal_line_ends_trial_within_a_second(make_spec: SpecMaker) -> None:
    result = run_trial(make_spec(crash_argv("fatal_keeps_running")))
    returned = time.time()
    failure = result.failure
    assert failure is not None and failure.cause == Cause.CUDA_GRAPH_CAPTURE
    written = float(re.search(r"at=([\d.]+)", "\n".join(failure.evidence)).group(1))  # type: ignore[union-attr]
    assert returned - written < 1.2
    assert result.cleanup.processes_left == 0


def test_startup_timeout_names_last_milestone(make_spec: SpecMaker) -> None:
    result = run_trial(make_spec(crash_argv("hang"), limits={"startup_s": 1.0}))
    assert result.outcome == Outcome.TIMEOUT
    failure = result.failure
    assert failure is not None and failure.cause == Cause.STARTUP_TIMEOUT
    assert "'weights_loaded'" in failure.message and "memory_pool" in failure.message
    assert failure.phase == Phase.MEMORY_POOL
    assert result.milestones == ["load_begin", "weights_loaded"]
    assert result.cleanup.processes_left == 0


def test_startup_timeout_reports_non_fatal_evidence(make_spec: SpecMaker) -> None:
    result = run_trial(make_spec(crash_argv("hang_after_assert"), limits={"startup_s": 0.8}))
    failure = result.failure
    assert result.outcome == Outcome.TIMEOUT and failure is not None
    assert failure.cause == Cause.STARTUP_TIMEOUT
    assert "log shows assertion" in failure.message
    assert failure.evidence == ["AssertionError: speculative_eagle_topk"]


def test_death_mid_benchmark_is_runtime_crash(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--die-after", "3", "--rate", "50"),
        workload={"num_requests": 20, "warmup_requests": 0},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.CRASHED
    failure = result.failure
    assert failure is not None
    assert (failure.cause, failure.phase, failure.exit_code) == (
        Cause.RUNTIME_CRASH,
        Phase.BENCHMARK,
        1,
    )
    assert "worker exploded" in failure.message


def test_fatal_line_mid_benchmark_stops_it(make_spec: SpecMaker) -> None:
    # 64 tokens at 20/s: the benchmark would take over 3 s without the fatal line.
    spec = make_spec(
        server_argv("--fatal-after", "2", "--rate", "20"),
        workload={"num_requests": 8, "concurrency": 4, "output_len": 64, "warmup_requests": 0},
    )
    result = run_trial(spec)
    returned = time.time()
    failure = result.failure
    assert failure is not None
    assert (failure.cause, failure.phase) == (Cause.KV_POOL_OOM, Phase.BENCHMARK)
    written = float(re.search(r"at=([\d.]+)", failure.message).group(1))  # type: ignore[union-attr]
    assert returned - written < 1.5
    assert result.cleanup.processes_left == 0


def test_rejected_requests_are_benchmark_errors(make_spec: SpecMaker) -> None:
    spec = make_spec(
        server_argv("--reject-field", "ignore_eos"),
        workload={"extra_body": {"ignore_eos": True}, "num_requests": 3},
    )
    result = run_trial(spec)
    assert result.outcome == Outcome.CRASHED
    failure = result.failure
    assert failure is not None
    assert (failure.cause, failure.phase) == (Cause.BENCHMARK_ERRORS, Phase.WARMUP)
    assert failure.evidence[0].startswith("HTTP 422")
    assert failure.permanent


def test_port_clash_before_launch_is_infra(make_spec: SpecMaker) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = run_trial(make_spec(server_argv(), port=port))
    assert result.outcome == Outcome.INFRA
    assert result.failure is not None and result.failure.cause == Cause.PORT_IN_USE
    assert not result.failure.permanent and result.log_path is None


def test_port_clash_at_launch_is_infra(make_spec: SpecMaker) -> None:
    # The port is free when the node checks it, taken when the server binds it.
    script = SERVERS / "openai_server.py"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
            "print(s.getsockname()[1], flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        taken = int(holder.stdout.readline())
        argv = [sys.executable, str(script), "--port", str(taken), "--startup-s", "0"]
        result = run_trial(make_spec(argv, limits={"startup_s": 5}))
    finally:
        holder.kill()
        holder.wait()
    assert result.outcome == Outcome.INFRA
    assert result.failure is not None and result.failure.cause == Cause.PORT_IN_USE


def test_dirty_node_is_refused_until_clean(make_spec: SpecMaker) -> None:
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        created = psutil.Process(stray.pid).create_time()
        NodeState().mark({"processes": [{"pid": stray.pid, "create_time": created}]})
        # The re-check kills the recorded leftover (same PID, same start time) and goes on.
        result = run_trial(make_spec(server_argv(), workload={"num_requests": 1}))
        assert result.outcome == Outcome.OK, result.failure
        gone = not psutil.pid_exists(stray.pid) or psutil.Process(stray.pid).status() == "zombie"
        assert gone
        assert not NodeState().path.exists()
    finally:
        stray.kill()
        stray.wait()


def test_bad_regex_raises_before_launch(make_spec: SpecMaker, tmp_path: Path) -> None:
    from autotune.models import Rule

    bad = Rule(id="bad", pattern="(unclosed", cause=Cause.UNKNOWN)
    with pytest.raises(ValueError, match="rule 'bad'"):
        run_trial(make_spec(server_argv(), rules=[bad]))
    assert not (tmp_path / "logs").exists()


def test_missing_executable(make_spec: SpecMaker) -> None:
    result = run_trial(make_spec(["/nonexistent/serve", "--port", "{port}"]))
    assert result.outcome == Outcome.CRASHED
    assert result.failure is not None and result.failure.phase == Phase.LAUNCH
    assert "cannot start" in result.failure.message


@pytest.mark.parametrize(
    ("mode", "outcome", "cause"),
    [
        ("ok", Outcome.OK, None),
        ("bad", Outcome.CRASHED, Cause.UNKNOWN),
        ("none", Outcome.CRASHED, Cause.UNKNOWN),
        ("fail", Outcome.CRASHED, Cause.NCCL_ERROR),
        ("slow", Outcome.TIMEOUT, Cause.BENCHMARK_ERRORS),
    ],
)
def test_job_mode(make_spec: SpecMaker, mode: str, outcome: Outcome, cause: Cause | None) -> None:
    spec = make_spec(
        [sys.executable, str(SERVERS / "job.py"), mode],
        mode="job",
        engine="collective",
        limits={"benchmark_s": 1.0},
    )
    result = run_trial(spec)
    assert result.outcome == outcome
    if cause is None:
        assert result.metrics is not None
        assert result.metrics.extra == {"allreduce_p50_us": 41.5, "busbw_gbs": 12.0}
        assert result.metrics.duration_s > 0
    else:
        assert result.failure is not None and result.failure.cause == cause
    assert result.cleanup.processes_left == 0


def test_fill_placeholders_only() -> None:
    from autotune.node.runner import fill

    value = '{"host": "{host}", "port": {port}, "py": "{python}", "x": {}}'
    assert fill(value, "127.0.0.1", 8000) == (
        f'{{"host": "127.0.0.1", "port": 8000, "py": "{sys.executable}", "x": {{}}}}'
    )
