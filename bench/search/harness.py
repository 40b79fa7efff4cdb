"""Runs one strategy on one landscape and one seed; returns the launches in order.

autotune's own strategies run the real ``study.Driver`` (Optuna study, ``space.suggest``, dead
ends, steering, repeat reuse, the baseline first) with an in-process executor that answers
each ``TrialSpec`` from the landscape instead of starting a server, over Optuna's in-memory
storage. The competitors (grid, one-at-a-time tiers, TPE told crashes as FAIL) are plain loops
written the way their tools run them.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import yaml
from bench.search.landscapes import Landscape, Point, grid, levels
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
def driver_sampler(
    build: Callable[[optuna.samplers.BaseSampler, int | None], optuna.samplers.BaseSampler],
) -> Iterator[None]:
    """Drivers made inside get ``build(the default sampler, seed)`` as their sampler."""
    from autotune.study import driver as driver_module

    original = driver_module.make_sampler

    def patched(
        name: str, seed: int | None, parallel: int, objectives: int = 1
    ) -> optuna.samplers.BaseSampler:
        return build(original(name, seed, parallel, objectives), seed)

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
    sampler: str = "tpe",
    steering: Any = None,
    tpe: dict[str, Any] | None = None,
    local: float | None = None,
    step: float = 0.12,
    defaults: dict[str, Any] | None = None,
    inner: Callable[[int | None], optuna.samplers.BaseSampler] | None = None,
    **moves: Any,
) -> list[Launch]:
    """autotune's real path on ``land`` (``steering``: SteeringOptions or None; ``tpe``:
    TPESampler arguments to try instead of the driver's, for candidates; ``defaults``:
    DriverOptions fields to change)."""
    from autotune.space.load import load_text
    from autotune.study.driver import DriverOptions
    from autotune.study.ledger import Ledger

    if tpe is not None or local is not None or moves or inner is not None:

        def candidate(
            base: optuna.samplers.BaseSampler, s: int | None
        ) -> optuna.samplers.BaseSampler:
            from autotune.study.sampler import LOCAL_SHARE, LocalTPESampler

            if inner is not None:
                base = inner(s)
            elif tpe is not None:
                base = optuna.samplers.TPESampler(seed=s, **tpe)
            elif moves or local is not None:  # the default sampler's own TPE, other moves
                base = base._tpe  # type: ignore[attr-defined]
            return (
                LocalTPESampler(
                    base,
                    local=local if local is not None else LOCAL_SHARE,
                    step=step,
                    seed=s,
                    **moves,
                )
                if local or moves
                else base
            )

        with driver_sampler(candidate):
            return run_driver(
                land, seed, trials, sampler=sampler, steering=steering, defaults=defaults
            )

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
            # The real defaults: the baseline launched three times, a proposal made again
            # relaunched (up to three launches), confirmation rounds at the end.
            **(defaults or {}),
        )
        if steering is not None:
            options.steering = steering
        driver = in_process_driver(spec, executor, options)
        driver.run()
        return tagged(executor, Ledger(driver.study), land, rng)


# -- competitors --------------------------------------------------------------------------


def run_tpe_fail(land: Landscape, seed: int, trials: int) -> list[Launch]:
    """Optuna TPE with crashes told as FAIL (auto-tuning-vllm): every proposal is launched."""
    from autotune.space.load import load_text
    from autotune.space.suggest import suggest

    spec = load_text(yaml.safe_dump(land.space(trials), sort_keys=False), f"<{land.name}>")
    rng = random.Random(seed * 7919 + 1)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.enqueue_trial(dict(land.baseline))
    out: list[Launch] = []
    while len(out) < trials:
        trial = study.ask()
        fixed = study._storage.get_trial_system_attrs(trial._trial_id).get("fixed_params")
        config = suggest(trial, spec, fixed=fixed)
        p = land.evaluate(config, rng)
        out.append(Launch(config, p.value, p.truth, p.value is None, p.seconds))
        if p.value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, p.value)
    return out


def run_tiers(land: Landscape, seed: int, trials: int) -> list[Launch]:
    """SGLang auto_benchmark's tiers: one parameter at a time from the baseline, then the
    first three parameters crossed, then the full product (5 levels per numeric parameter)."""
    rng = random.Random(seed * 7919 + 1)
    base = dict(land.baseline)
    one_at_a_time = [{**base, p["name"]: v} for p in land.parameters for v in levels(p, 5)]
    first3 = ({**base, **c} for c in grid(land.parameters[:3], 5))
    queue = itertools.chain([base], one_at_a_time, first3, grid(land.parameters, 5))
    return _launch_unique(land, queue, trials, rng)


def run_grid(land: Landscape, seed: int, trials: int) -> list[Launch]:
    """vLLM auto_tune's grid: the full product of 3 levels per parameter, in file order, after
    the baseline; shuffled per seed so that seeds differ."""
    rng = random.Random(seed * 7919 + 1)
    order = random.Random(seed)
    size = math.prod(len(levels(p, 3)) for p in land.parameters)
    cells: Iterable[dict[str, Any]]
    if size <= 20_000:
        listed = list(grid(land.parameters, 3))
        order.shuffle(listed)
        cells = listed
    else:  # too many cells to list: draw them in random order
        cells = (
            {p["name"]: order.choice(levels(p, 3)) for p in land.parameters} for _ in range(100_000)
        )
    base = dict(land.baseline)
    return _launch_unique(land, itertools.chain([base], cells), trials, rng)


def _launch_unique(
    land: Landscape, queue: Iterable[dict[str, Any]], trials: int, rng: random.Random
) -> list[Launch]:
    seen: list[dict[str, Any]] = []
    out: list[Launch] = []
    for config in queue:
        config = {k: v for k, v in config.items() if not _inactive(land, k, config)}
        for p in land.parameters:  # a parameter that just became active: its first level
            if p.get("when") and p["name"] not in config and not _inactive(land, p["name"], config):
                config[p["name"]] = levels(p, 5)[0]
        if config in seen or not _in_bounds(land, config):
            continue
        seen.append(config)
        p = land.evaluate(config, rng)
        out.append(Launch(config, p.value, p.truth, p.value is None, p.seconds))
        if len(out) >= trials:
            break
    return out


def _inactive(land: Landscape, name: str, config: dict[str, Any]) -> bool:
    for p in land.parameters:
        if p["name"] == name and p.get("when"):
            return not config.get(p["when"])
    return False


def _in_bounds(land: Landscape, config: dict[str, Any]) -> bool:
    for p in land.parameters:
        high = p.get("high")
        if isinstance(high, dict) and p["name"] in config:
            if config[p["name"]] > config[high["param"]]:
                return False
    return True
