"""Fixtures for dispatch tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep node markers and the server registry of every test in its own folder."""
    state = tmp_path / "node-state"
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(state))
    return state
