"""Shared fixtures, and the test tiers (CONTRIBUTING.md).

``pytest -q`` runs the fast tier: every test not marked ``slow``. ``pytest -q --slow`` runs
everything (what ``.ci/run`` does); ``-m EXPR`` picks tests by marker as usual and then no
test is left out by tier. ``gpu`` tests skip themselves where there is no NVIDIA GPU.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# One BLAS thread per process. The two xdist workers (pyproject.toml) already fill both cores
# of a small machine, and OpenBLAS's own threads, spinning over the search's small matrices
# (tests/search: the Gaussian process and the crash model), doubled its CPU time. Set here, in
# the process that starts the workers, before they import numpy; the tests' subprocesses
# inherit it. An explicit setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
AUTOTUNE = [sys.executable, "-m", "autotune.cli"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the slow tier (real servers, Ray instances, an mlflow server, a browser)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (config.getoption("--slow") or config.option.markexpr):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]
    items[:] = slow_files_first(items)


def slow_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The files that hold a slow test first, then the others by their number of tests, most
    first; each file's tests kept together and in their order.

    xdist (``--dist loadscope --no-loadscope-reorder``, pyproject.toml) hands out whole files in
    this order, each to the first worker free: the long end-to-end files start at once and the
    many short ones fill both workers at the end. (xdist's own order, most tests first, put
    the one-test end-to-end files last, to run one after the other on one worker.)
    """

    def file(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    slow = {file(item) for item in items if item.get_closest_marker("slow") is not None}
    count: dict[str, int] = {}
    for item in items:
        count[file(item)] = count.get(file(item), 0) + 1
    return sorted(items, key=lambda item: (file(item) not in slow, -count[file(item)]))


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the CLI as a subprocess, isolated from the user's state."""
    env = dict(os.environ)
    env["AUTOTUNE_NODE_STATE"] = str(tmp_path / "node-state")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("AUTOTUNE_CACHE_DIR", str(Path.home() / ".cache" / "autotune"))
    return env
