"""The code stays as STYLE.md asks: ruff (E, F, I, B, UP) and mypy --strict are clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name if (BIN / name).exists() else shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return str(path)


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-5000:]


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-5000:]
