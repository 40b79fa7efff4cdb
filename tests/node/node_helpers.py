"""Shared constants and argv builders for node tests (imported by conftest and tests)."""

from __future__ import annotations

import sys
from pathlib import Path

from autotune.models import Milestone, Phase

SERVERS = Path(__file__).parent / "servers"
PY = sys.executable

MILESTONES = [
    Milestone(phase=Phase.LOAD, pattern=r"Load weight begin", label="load_begin"),
    Milestone(phase=Phase.MEMORY_POOL, pattern=r"Load weight end", label="weights_loaded"),
    Milestone(phase=Phase.GRAPH_CAPTURE, pattern=r"Capture cuda graph begin", label="graphs"),
    Milestone(phase=Phase.READY, pattern=r"fired up and ready to roll", label="ready"),
]


def server_argv(*extra: str) -> list[str]:
    return [PY, str(SERVERS / "openai_server.py"), "--host", "{host}", "--port", "{port}", *extra]


def crash_argv(scenario: str) -> list[str]:
    return [PY, str(SERVERS / "crash.py"), scenario, "--port", "{port}"]
