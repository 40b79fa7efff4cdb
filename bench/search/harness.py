"""Runs autotune's real path on one landscape and one seed; returns the launches in order.

The real ``study.Driver`` (Optuna study, ``space.suggest``, dead ends, crash steering, repeat
reuse, the baseline first, confirmation at the end) with the in-process executor of
``tests/search/inprocess.py``, which answers each ``TrialSpec`` from the landscape instead of
starting a server, over Optuna's in-memory storage. The competitors (random search, stock
TPE) are plain Optuna loops in ``__main__.py``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import yaml
from bench.search.landscapes import Landscape, Point
from tests.search.inprocess import InProcessExecutor, Launch, in_process_driver, tagged

WINDOWS = 0  # measurement windows per in-process launch (bench --prune sets 3)
PARALLEL = 1  # trials in flight at once (bench --parallel sets it)
WINDOW_NOISE = 0.02  # spread (log) of a window's reading around its launch's value


Evaluate = Callable[[dict[str, Any], random.Random], Point]


def check_passes(rows: list[tuple[float, int]], draws: int = 20_000) -> float:
    """The share of draws of 5 studies from ``rows`` (with replacement) that pass the issue's
    check: at least 95% of the optimum in 4 of the 5, at most 4 crashes per 30 on average."""
    rng = random.Random(1)
    passed = 0
    for _ in range(draws):
        five = [rng.choice(rows) for _ in range(5)]
        reached = sum(pct >= 95 for pct, _ in five) >= 4
        passed += reached and statistics.mean(c for _, c in five) <= 4
    return passed / draws


@contextmanager
def driver_sampler(**knobs: Any) -> Iterator[None]:
    """Drivers made inside get the search's sampler with these constructor arguments (the
    driver's own ``feasible`` and seed kept)."""
    from autotune.search import Sampler
    from autotune.study import driver as driver_module

    original = driver_module.make_sampler

    def patched(
        name: str,
        seed: int | None,
        parallel: int,
        objectives: int = 1,
        feasible: Any = None,
        steer: bool = True,
    ) -> optuna.samplers.BaseSampler:
        return Sampler(seed=seed, feasible=feasible, **knobs)

    driver_module.make_sampler = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        driver_module.make_sampler = original


def run_driver(
    land: Landscape,
    seed: int,
    trials: int,
    *,
    sampler: str = "search",
    steer: bool = True,
    defaults: dict[str, Any] | None = None,
    **knobs: Any,
) -> list[Launch]:
    """autotune's real path on ``land``: ``sampler`` named as on the command line, the
    search's sampler with other constructor arguments (``knobs``), ``defaults``: other
    DriverOptions fields."""
    from autotune.space.load import load_text
    from autotune.study.driver import DriverOptions
    from autotune.study.ledger import Ledger

    if knobs:
        with driver_sampler(**knobs):
            return run_driver(land, seed, trials, steer=steer, defaults=defaults)
    spec = load_text(yaml.safe_dump(land.space(trials), sort_keys=False), f"<{land.name}>")
    rng = random.Random(seed * 7919 + 1)
    executor = InProcessExecutor(
        lambda ts: land.evaluate(dict(ts.params), rng), seed, WINDOWS, PARALLEL, WINDOW_NOISE
    )
    with tempfile.TemporaryDirectory(prefix="autotune-bench-") as tmp:
        options = DriverOptions(
            study=f"{land.name}-{seed}",
            study_dir=Path(tmp),
            storage=":memory:",
            seed=seed,
            sampler=sampler,
            steer=steer,
            # The real defaults: the baseline launched three times, a proposal made again
            # relaunched (up to three launches), confirmation rounds at the end.
            **(defaults or {}),
        )
        driver = in_process_driver(spec, executor, options)
        driver.run()
        return tagged(executor, Ledger(driver.study), land, rng)
