"""The Ray executor's own placement, on a real local Ray instance (2 CPUs, 2 logical GPUs)."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.dispatch.conftest import LocalRay

from autotune.dispatch import ray as ray_dispatch
from autotune.dispatch.ray import RayExecutor
from autotune.models import Cause, Limits, Outcome, TrialSpec

WAIT_S = 60.0  # a bound on a short job on a loaded machine, not a timing assertion


def job(tmp_path: Path, number: int, gpus: int = 0) -> TrialSpec:
    return TrialSpec(
        study="placement",
        number=number,
        engine="command",
        params={},
        mode="job",
        argv=[sys.executable, "-c", "print('AUTOTUNE_METRICS {\"x\": 1}')"],
        gpus=gpus,
        log_dir=str(tmp_path / "logs"),
        limits=Limits(benchmark_s=30),
    )


@pytest.mark.slow  # a local Ray instance
def test_a_trial_no_node_can_hold_comes_back_as_infra_and_the_rest_still_run(
    local_ray: LocalRay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the expired trial's result had ``node=None`` (invalid), the placement round
    died on it, the trial placed in the same round was never launched, and both futures hung.
    """
    monkeypatch.setattr(ray_dispatch, "NODE_WAIT_S", 0.0)
    ex = RayExecutor(0)
    try:
        # No node has 3 GPUs: the first trial waits for one, gives up at once (NODE_WAIT_S 0),
        # in the same placement round that places the second.
        too_big = ex.submit(job(tmp_path, 0, gpus=3))
        fits = ex.submit(job(tmp_path, 1))
        lost = too_big.result(timeout=WAIT_S)
        assert lost.outcome is Outcome.INFRA
        assert lost.failure is not None and lost.failure.cause is Cause.NODE_LOST
        assert "no alive Ray node has 3 GPUs" in lost.failure.message
        assert lost.node == "" and lost.number == 0
        done = fits.result(timeout=WAIT_S)
        assert done.outcome is Outcome.OK, done.failure
        # Nothing stays counted against the node: another trial still gets placed.
        again = ex.submit(job(tmp_path, 2)).result(timeout=WAIT_S)
        assert again.outcome is Outcome.OK, again.failure
    finally:
        ex.shutdown()


def test_local_workers_keep_the_drivers_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from autotune.dispatch.ray import worker_pythonpath

    monkeypatch.setenv("PYTHONPATH", "/tmp/carry/node")
    parts = worker_pythonpath().split(os.pathsep)
    assert parts[0].endswith("src") and parts[1] == "/tmp/carry/node"
    monkeypatch.delenv("PYTHONPATH")
    assert worker_pythonpath().endswith("src")


@pytest.mark.slow  # a local Ray instance
def test_shutdown_returns_after_the_window_relay_thread_has_ended(local_ray: LocalRay) -> None:
    """Regression: the relay's thread was still inside ``ray.get`` when shutdown stopped Ray
    under it, and Ray ended the thread with SystemExit (an error in a test's teardown)."""
    ex = RayExecutor(0)
    try:
        ex._start_relay()  # what the first trial with a window hook does
        relay = [t for t in threading.enumerate() if t.name == "autotune-ray-windows"]
        assert relay and relay[0].is_alive()
    finally:
        ex.shutdown()
    assert not relay[0].is_alive()


@pytest.mark.slow  # a local Ray instance
def test_a_trial_shutdown_stops_is_not_reported_lost(
    local_ray: LocalRay, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression (the SGLang study on an H100): Ctrl-C tore the running trial down and the log
    said "WARNING: trial 10 lost on <node>: " with nothing after the colon, as if the node had
    died; the study had stopped it on purpose."""
    started = tmp_path / "started"
    sleeper = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    ex = RayExecutor(0)
    try:
        running = ex.submit(job(tmp_path, 0).model_copy(
            update={"argv": [sys.executable, "-c", sleeper]}))  # fmt: skip
        deadline = time.monotonic() + WAIT_S
        while not started.exists():
            assert time.monotonic() < deadline, "the trial never started"
            time.sleep(0.2)
        caplog.set_level(logging.INFO, logger=ray_dispatch.__name__)
    finally:
        ex.shutdown()
    deadline = time.monotonic() + WAIT_S
    while not running.done():  # its settle callback has run (or shutdown cancelled it)
        assert time.monotonic() < deadline, "the trial's future never settled"
        time.sleep(0.2)
    time.sleep(1.0)
    ours = [r for r in caplog.records if r.name == ray_dispatch.__name__]
    assert not [r.getMessage() for r in ours if r.levelno >= logging.WARNING]
    assert any("stopped" in r.getMessage() for r in ours), [r.getMessage() for r in ours]
