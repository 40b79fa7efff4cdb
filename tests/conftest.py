"""Shared fixtures, and the test tiers (CONTRIBUTING.md).

``pytest -q`` runs the fast tier: every test not marked ``slow``. ``pytest -q --slow`` runs
everything (what ``.ci/run`` does); ``-m EXPR`` picks tests by marker as usual and then no
test is left out by tier. ``gpu`` tests skip themselves where there is no NVIDIA GPU.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# One BLAS thread per process. The xdist workers (pyproject.toml) already fill the cores
# of a small machine, and OpenBLAS's own threads, spinning over the search's small matrices
# (tests/search: the Gaussian process and the crash model), doubled its CPU time. Set here, in
# the process that starts the workers, before they import numpy; the tests' subprocesses
# inherit it. An explicit setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# pytest rewrites the asserts of every test module as it imports it, and keeps the result in
# __pycache__ unless bytecode writing is off (PYTHONDONTWRITEBYTECODE, set on some machines):
# then each xdist worker parsed, rewrote and compiled all 120 test modules again on every run,
# about 4 s of CPU a worker. The test session writes them (and the project's own modules it
# imports, which the tests' subprocesses then read instead of compiling them each); the
# variable itself is left as it is for those subprocesses.
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parents[1]
AUTOTUNE = [sys.executable, "-m", "autotune.cli"]
# Seconds each file took, recorded with ``--record-durations``: the order files are run in.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the slow tier (real servers, Ray instances, an mlflow server, a browser)",
    )
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each file's seconds in this run to {DURATIONS.name} (it orders the files)",
    )


MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml): two workers a core for the fast tier, two in all with the
    slow one. The fast tier's tests wait much of their time (on the small servers they
    start, streaming at set rates, and on their subprocesses), so two workers a core keep the
    cores busy; the slow tier's end-to-end tests start real engine servers and keep their
    old share (four on two cores took 17% less wall, but measured rates grew so noisy that
    two noise-sensitive tests failed in CI, mypy beside them: docs/benchmarks.md). At most
    ``MAX_AUTO_WORKERS``: each holds about 400 MB once it has run its share.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or ``-n N`` still decide when given."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.getoption("--slow"):
        return None if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else 2
    if hasattr(os, "sched_getaffinity"):  # the cores this process may use (Linux)
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    return min(2 * cores, MAX_AUTO_WORKERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (config.getoption("--slow") or config.option.markexpr):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]
    items[:] = longest_files_first(items, recorded_durations())


# A file not in tests/durations.json is guessed at this many seconds a test, and an
# end-to-end (slow) test at SLOW_GUESS_S: a new slow file goes first, a new fast one by its size.
TEST_GUESS_S = 0.1
SLOW_GUESS_S = 30.0


def recorded_durations(path: Path | None = None) -> dict[str, list[float]]:
    """Per file, its recorded seconds: [fast tests, slow tests] (``--record-durations``)."""
    try:
        data = json.loads((path or DURATIONS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): [float(v[0]), float(v[1])] for k, v in data.items()}


def longest_files_first(
    items: list[pytest.Item], seconds: dict[str, list[float]]
) -> list[pytest.Item]:
    """The files by their expected seconds in this run, longest first; each file's tests kept
    together and in their order.

    xdist (``--dist loadscope --no-loadscope-reorder``, pyproject.toml) hands out whole files in
    this order, each to the first worker free: the long files start at once and the short ones
    fill the workers at the end (ordered by their number of tests, xdist's own order, a
    20-second one-test file started last and ran alone for its last 20 seconds). A file's
    expected seconds are those recorded in ``seconds`` for the tiers it runs in, or a guess
    (``TEST_GUESS_S`` a test, ``SLOW_GUESS_S`` a slow one) for a tier not recorded."""

    def file(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    tiers: dict[str, list[int]] = {}  # per file: [fast tests, slow tests] in this run
    for item in items:
        tiers.setdefault(file(item), [0, 0])[item.get_closest_marker("slow") is not None] += 1

    def expected(name: str) -> float:
        # per tier that runs here: its recorded seconds, or a guess where none is recorded
        recorded = seconds.get(name, [0.0, 0.0])
        guess = (TEST_GUESS_S, SLOW_GUESS_S)
        return sum(
            (recorded[tier] or n * guess[tier]) for tier, n in enumerate(tiers[name]) if n > 0
        )

    order = {name: -expected(name) for name in tiers}
    return sorted(items, key=lambda item: order[file(item)])


_run_seconds: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # In the main process, each test's setup, call and teardown (xdist's workers' too).
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        tier = _run_seconds.setdefault(report.nodeid.split("::")[0], [0.0, 0.0])
        tier["slow" in report.keywords] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if config.getoption("--record-durations") and os.environ.get("PYTEST_XDIST_WORKER") is None:
        write_durations(DURATIONS, _run_seconds)


def write_durations(path: Path, run: dict[str, list[float]]) -> None:
    """Merge a run's seconds per file and tier into ``path`` (a tier the run had no test of
    keeps its recorded seconds)."""
    data = recorded_durations(path)
    for name, (fast, slow) in run.items():
        old = data.get(name, [0.0, 0.0])
        data[name] = [round(fast or old[0], 1), round(slow or old[1], 1)]
    lines = [f"{json.dumps(name)}: {json.dumps(data[name])}" for name in sorted(data)]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the CLI as a subprocess, isolated from the user's state."""
    env = dict(os.environ)
    env["AUTOTUNE_NODE_STATE"] = str(tmp_path / "node-state")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("AUTOTUNE_CACHE_DIR", str(Path.home() / ".cache" / "autotune"))
    return env
