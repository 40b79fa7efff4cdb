"""Fixtures for node tests: trial specs that launch the stdlib fixture servers."""

from __future__ import annotations

import itertools
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from node_helpers import MILESTONES, server_argv

from autotune.engines.flagtable import load_table, message_flags
from autotune.models import Limits, Milestone, TrialSpec, Workload
from autotune.node.process import free_port
from autotune.rules import load_rules


@pytest.fixture
def milestones() -> list[Milestone]:
    """SGLang-like startup milestones, as the fixture servers log them."""
    return list(MILESTONES)


@pytest.fixture
def rules_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules' own answer, with no learnt cause for their ``unknown`` (node/learned.py):
    for tests that pin how the rules read a log. The learnt layer is held by
    test_learned_causes.py and by the corpus's floors (test_crashlog_corpus.py)."""
    from autotune.node.failures import api

    monkeypatch.setattr(api, "guess", lambda lines, exit_code=None: None)


@pytest.fixture(autouse=True)
def node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep the node-state marker of every test in its own folder."""
    state = tmp_path / "node-state"
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(state))
    return state


@pytest.fixture
def make_spec(tmp_path: Path) -> Callable[..., TrialSpec]:
    """Build a TrialSpec for the fixture servers; keyword arguments override fields."""

    def build(argv: list[str], **overrides: Any) -> TrialSpec:
        limits = overrides.pop("limits", {})
        workload = overrides.pop("workload", {})
        fields: dict[str, Any] = {
            "study": "node-test",
            "number": 7,
            "engine": "sglang",
            "params": {},
            "argv": argv,
            "rules": load_rules("sglang"),
            "milestones": MILESTONES,
            "flags": message_flags(load_table("sglang", None)),  # as the driver gives SGLang's
            "log_dir": str(tmp_path / "logs"),
            "limits": Limits(
                **{"startup_s": 20, "benchmark_s": 30, "teardown_grace_s": 2, "gpu_release_s": 0}
                | limits
            ),
            "workload": Workload(
                **{
                    "concurrency": 4,
                    "num_requests": 8,
                    "output_len": 16,
                    "warmup_requests": 1,
                    "windows": 1,
                }
                | workload
            ),
        }
        fields.update(overrides)
        return TrialSpec(**fields)

    return build


@pytest.fixture
def start_server() -> Iterator[Callable[..., str]]:
    """Start ``argv`` (``{host}``, ``{port}`` filled in); returns its URL once healthy."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], env: dict[str, str] | None = None) -> str:
        port = str(free_port())
        argv = [a.replace("{host}", "127.0.0.1").replace("{port}", port) for a in argv]
        out = subprocess.DEVNULL
        procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=out))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{argv} did not start")

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.fixture
def fixture_server(start_server: Callable[..., str]) -> Callable[..., str]:
    """Start openai_server.py with extra flags; returns its base URL once healthy."""
    return lambda *extra: start_server(server_argv(*extra))


@pytest.fixture
def canned() -> Iterator[Callable[[Callable[[int], bytes]], str]]:
    """A TCP server that answers request number i with the raw bytes ``respond(i)``, then
    closes the connection; returns its base URL."""
    servers: list[socketserver.ThreadingTCPServer] = []

    def start(respond: Callable[[int], bytes]) -> str:
        count = itertools.count()

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                length = 0
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.rfile.read(length)
                self.wfile.write(respond(next(count)))

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fixed_rate_sim(start_server: Callable[..., str]) -> Callable[..., str]:
    """The stand-in in its fixed-rate mode; returns its base URL once healthy."""

    def start(*, rate: float, ttft_ms: float) -> str:
        env = {
            **os.environ,
            "AUTOTUNE_SIM_STARTUP": "0.001",
            "AUTOTUNE_SIM_FIXED_RATE": str(rate),
            "AUTOTUNE_SIM_FIXED_TTFT_MS": str(ttft_ms),
        }
        argv = [sys.executable, "-m", "autotune.sim", "--model-path", "m", "--tp-size", "8",
                "--log-level", "error", "--host", "{host}", "--port", "{port}"]  # fmt: skip
        return start_server(argv, env)

    return start
