"""Fixtures for tracker tests: real MLflow stores (SQLite file, and a real ``mlflow server``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

SECRET = "hf_" + "Qw3" * 12  # the same shape as tests/tracking/test_mlflow.py


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``mlflow server`` on a free 127.0.0.1 port, backed by SQLite in a temp folder."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    log = (root / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(mlflow_bin),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{root / 'mlflow.db'}",
            "--artifacts-destination",
            str(root / "artifacts"),
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                log.flush()
                tail = (root / "server.log").read_text()[-2000:]
                raise RuntimeError(f"mlflow server exited: {tail}")
            try:
                if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("mlflow server did not become healthy within 90 s")
            time.sleep(0.25)
        yield url
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()


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
