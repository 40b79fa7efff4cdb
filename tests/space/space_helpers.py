"""Constants and helpers shared by the space tests (fixtures are in conftest.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPACES = ROOT / "search_spaces"

# A small valid space; tests append to it or replace parts of it.
BASE = """\
engine: {name: sglang}
model: m
parameters:
  - {name: a, type: int, low: 1, high: 8, flag: --a}
"""


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")
