"""Fixtures for the stand-in server: launch ``python -m autotune.sim`` as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from autotune.node.process import free_port

SIM = [sys.executable, "-m", "autotune.sim"]
# Start-up at 1/1000 of the realistic seconds: milestones still in order, ~0.1-0.4 s in all.
FAST = "0.001"


def sim_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "AUTOTUNE_SIM_"))}
    env.update({"AUTOTUNE_SIM_STARTUP": FAST, "AUTOTUNE_SIM_SEED": "7", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def sim_argv(port: int, *flags: str) -> list[str]:
    return [
        *SIM,
        "--model-path",
        "/models/Kimi-K2.5",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--tp-size",
        "8",
        *flags,
    ]


def run_to_exit(*flags: str, timeout: float = 30.0, **env: str) -> subprocess.CompletedProcess[str]:
    """Launch a configuration expected to exit by itself (argparse error, crash)."""
    return subprocess.run(
        sim_argv(free_port(), *flags),
        env=sim_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class Running:
    """A launched stand-in server."""

    proc: subprocess.Popen[str]
    url: str
    health_codes: list[int]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text()

    def info(self) -> dict[str, object]:
        data: dict[str, object] = httpx.get(f"{self.url}/get_server_info", timeout=5).json()
        return data


def wait_ready(proc: subprocess.Popen[str], url: str, timeout: float = 30.0) -> list[int]:
    """Poll /health until 200; returns the status codes seen (0: connection refused)."""
    codes: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            codes.append(httpx.get(f"{url}/health", timeout=2).status_code)
        except httpx.TransportError:
            codes.append(0)
        if codes[-1] == 200:
            return codes
        time.sleep(0.01)
    raise AssertionError(f"not ready after {timeout} s: {codes[-5:]}")


@pytest.fixture
def launch_sim(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    """Start servers (flags, env overrides) and stop them at the end of the test."""
    procs: list[subprocess.Popen[str]] = []

    def start(*flags: str, **env: str) -> Running:
        port = free_port()
        log_path = tmp_path / f"sim-{port}.log"
        with log_path.open("w") as log:  # a file, not a pipe: a full pipe would stall the server
            proc = subprocess.Popen(
                sim_argv(port, *flags),
                env=sim_env(**env),
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        return Running(proc, url, wait_ready(proc, url), log_path)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
