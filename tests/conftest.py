from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AUTOTUNE = [sys.executable, "-m", "autotune.cli"]


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the CLI as a subprocess, isolated from the user's state."""
    env = dict(os.environ)
    env["AUTOTUNE_NODE_STATE"] = str(tmp_path / "node-state")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("AUTOTUNE_CACHE_DIR", str(Path.home() / ".cache" / "autotune"))
    return env
