"""Which sampler for a study with two objectives: multi-objective TPE, NSGA-II or random?

A synthetic, server-like trade-off (not a measurement) over six knobs and a backend: a batch
knob raises throughput and time to first token together, three knobs have a throughput
optimum inside their range, two only cost TTFT away from their best, the backend shifts both,
and some settings "crash" (told to Optuna as infeasible through a constraint, as the driver
does). Every value gets 5% log-normal
noise. Each sampler runs ``--trials`` trials in an in-memory Optuna study with
``directions=["maximize", "minimize"]`` and is scored by the hypervolume of its front of
*true* (noise-free) values against a fixed reference point, as a share of the best front
found by a long random search. The budgets are those of server studies: 20-40 launches.

    .venv/bin/python bench/mo_sampler.py --seeds 20 --trials 20,30,40
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable
from typing import Any

import optuna

BACKENDS = {"a": (1.0, 1.0), "b": (1.15, 1.3), "c": (0.85, 0.8), "d": (0.6, 1.5)}
CENTRES = (0.7, 0.3, 0.55)  # where the three tuning knobs peak
REF = (0.0, 30.0)  # (throughput, ttft): worse than anything on a front


def truth(x: list[float], backend: str) -> tuple[float, float] | None:
    """Noise-free (throughput, ttft) of knobs ``x`` (six in [0, 1]), or None for a crash.

    ``x[0]`` is the batch (throughput and TTFT rise together), ``x[1:4]`` tune throughput
    with an optimum inside the range, ``x[4:6]`` only cost TTFT away from their best.
    """
    if x[0] > 0.8 and x[1] > 0.8:  # too much memory
        return None
    tp_b, ttft_b = BACKENDS[backend]
    tp = (1 + 3 * x[0]) * tp_b
    for xi, c in zip(x[1:4], CENTRES, strict=True):
        tp *= math.exp(-6 * (xi - c) ** 2)
    ttft = (1 + 4 * x[0] ** 2) * (1 + 2 * x[4]) * math.exp(3 * (x[5] - 0.2) ** 2) * ttft_b
    return tp, ttft


def objective(trial: optuna.Trial, rng: random.Random, seen: list[tuple[float, float]]) -> Any:
    x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(6)]
    backend = trial.suggest_categorical("backend", list(BACKENDS))
    t = truth(x, backend)
    trial.set_constraint("crash", 1.0 if t is None else 0.0)  # as the driver tells a crash
    if t is None:
        raise optuna.TrialPruned()
    seen.append(t)
    return t[0] * math.exp(rng.gauss(0, 0.05)), t[1] * math.exp(rng.gauss(0, 0.05))


def hypervolume(points: list[tuple[float, float]]) -> float:
    """2-D hypervolume of (maximize x, minimize y) points against REF."""
    front = sorted(
        (p for p in points if not any(q[0] >= p[0] and q[1] <= p[1] and q != p for q in points)),
        key=lambda p: -p[0],
    )
    area, best_y = 0.0, REF[1]
    for x, y in front:  # x falling, y falling: each adds a slab
        if y < best_y:
            area += (x - REF[0]) * (best_y - y)
            best_y = y
    return area


SAMPLERS: dict[str, Callable[[int, int], optuna.samplers.BaseSampler]] = {
    "tpe (multi-objective)": lambda seed, n: optuna.samplers.TPESampler(
        seed=seed, n_startup_trials=5, multivariate=True
    ),
    "nsga-ii (population 50)": lambda seed, n: optuna.samplers.NSGAIISampler(seed=seed),
    "nsga-ii (population 10)": lambda seed, n: optuna.samplers.NSGAIISampler(
        seed=seed, population_size=10
    ),
    "random": lambda seed, n: optuna.samplers.RandomSampler(seed=seed),
}


def run(make: Callable[[int, int], optuna.samplers.BaseSampler], seed: int, n: int) -> float:
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=make(seed, n))
    rng, seen = random.Random(seed), []
    study.optimize(lambda t: objective(t, rng, seen), n_trials=n)
    return hypervolume(seen)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--trials", default="20,30,40")
    args = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    budgets = [int(x) for x in args.trials.split(",")]
    rng, best = random.Random(0), []
    for _ in range(200000):  # the reference front: a long random search of true values
        t = truth([rng.random() for _ in range(6)], rng.choice(list(BACKENDS)))
        if t is not None:
            best.append(t)
    top = hypervolume(best)
    print(f"synthetic 2-objective landscape (SIMULATED), {args.seeds} seeds; share of best front")
    print(f"{'sampler':<26}" + "".join(f"{f'{n} trials':>12}" for n in budgets))
    for name, make in SAMPLERS.items():
        cells = []
        for n in budgets:
            share = [run(make, seed, n) / top for seed in range(args.seeds)]
            cells.append(f"{statistics.fmean(share):>11.1%} ")
        print(f"{name:<26}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
