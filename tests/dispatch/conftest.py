"""Fixtures for dispatch tests: a per-test node state folder and one real local Ray instance."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep node markers and the server registry of every test in its own folder."""
    state = tmp_path / "node-state"
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(state))
    return state


class LocalRay:
    """A real single-node Ray instance started by this test session (2 CPUs, 2 logical GPUs)."""

    def __init__(self, state: Path) -> None:
        self.state = state  # the node state folder its workers use (fixed when they start)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[LocalRay]:
    """One local Ray instance per test module (Ray starts slowly); its own temp folder.

    Module-scoped: it is shut down before other modules' tests start Ray instances of their
    own (``ray.init`` twice in one process fails; a "package" scope did not end it in a full
    run, the tests folders being plain directories).

    Executors built while it runs join it (``RayExecutor`` does not start or stop an
    instance it did not start), so each test pays for a trial, not for a Ray start.
    """
    import ray

    # Short: Ray's unix sockets live under it (a socket path has a 107-byte limit).
    temp = Path(tempfile.mkdtemp(prefix="at-ray-", dir="/tmp"))
    state = temp / "node-state"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTUNE_NODE_STATE", str(state))  # inherited by the raylet and its workers
        try:
            ray.init(
                address="local",
                num_cpus=2,
                num_gpus=2,  # logical: Ray hands them out, no device needed
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                logging_level="ERROR",
                _temp_dir=str(temp),
            )
            yield LocalRay(state)
        finally:
            ray.shutdown()
            shutil.rmtree(temp, ignore_errors=True)
