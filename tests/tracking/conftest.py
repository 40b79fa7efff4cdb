"""Fixtures for tracker tests: real MLflow stores (SQLite file, and a real ``mlflow server``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import pytest

from autotune.node.process import free_port

SECRET = "hf_" + "Qw3" * 12  # the same shape as tests/tracking/test_mlflow.py


@contextmanager
def _mlflow_server(root: Path, port: int) -> Iterator[str]:
    """A real ``mlflow server`` on ``port`` over a SQLite store in ``root``; killed on exit.

    The store and log stay in ``root``, so one can be killed and started again on them.
    """
    log = (root / "server.log").open("a")
    argv = [str(Path(sys.executable).with_name("mlflow")), "server", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
            "--artifacts-destination", str(root / "artifacts")]  # fmt: skip
    proc = subprocess.Popen(
        argv,
        cwd=root,
        # No job runner (Huey consumers for MLflow's GenAI jobs): autotune only tracks runs, and
        # the runner's processes about doubled the time to healthy (2026-12-06, load 15-18:
        # 15 and 28 s without them, 30 and 53 s with).
        env={
            **os.environ,
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (root / "server.log").read_text()[-2000:]
            try:
                if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "mlflow server not healthy within 120 s"
            time.sleep(0.25)
        yield url
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: mlflow's workers too
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``mlflow server`` on a free 127.0.0.1 port, backed by SQLite in a temp folder."""
    with _mlflow_server(tmp_path_factory.mktemp("mlflow-server"), free_port()) as url:
        yield url


@pytest.fixture
def start_mlflow() -> Callable[[Path, int], AbstractContextManager[str]]:
    """Start an ``mlflow server`` on a store and port (a context manager), for a test that
    kills it and starts it again."""
    return _mlflow_server


@pytest.fixture(scope="session")
def store_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite MLflow store shared by the tests (creating one runs migrations: seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """A server log with a secret in it, as a node would have written it."""
    path = tmp_path / "trial-0.log"
    path.write_text(
        "[2026-01-01] server_args=ServerArgs(model_path='m', api_key='k-123', tp_size=8)\n"
        f"[2026-01-01] Using HF token {SECRET}\n"
        "[2026-01-01] KV Cache is allocated. #tokens: 123456\n"
        "[2026-01-01] The server is fired up and ready to roll!\n",
        encoding="utf-8",
    )
    return path
