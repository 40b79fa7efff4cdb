"""The tuner's own cost: Optuna ``ask()`` latency as a study grows, and the driver per trial.

1. ``ask()`` + ``space.suggest`` with autotune's sampler (``study.driver.make_sampler``) over
   the SQLite storage a study uses by default, after 100 and after 1000 finished trials
   (filled with ``add_trials``, values from a smooth function, 10% crashes told as autotune
   tells them). Median and worst of ``--asks`` asks each.
2. The crash model (``search.CrashModel``) after 100 and 1000 such launches: built from the
   launches, then the crash probability of ``--pool`` configurations, as the sampler weighs
   a pool of candidates.
3. The driver's whole per-trial overhead (ask, steering, dead ends, tell, user attributes,
   events) with an executor that answers at once (bench/search's in-process executor), over
   SQLite, for a study of ``--trials`` launches: wall time / launches.

    .venv/bin/python bench/tuner_overhead.py
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.search.inprocess import InProcessExecutor  # noqa: E402
from tests.search.landscapes import by_name  # noqa: E402


def ask_latency(n_done: int, asks: int, folder: Path) -> list[float]:
    import yaml

    from autotune.space.load import load_text
    from autotune.space.suggest import distributions, suggest
    from autotune.study.driver import make_sampler

    land = by_name("five")
    spec = load_text(yaml.safe_dump(land.space(n_done)), "five.yaml")
    storage = f"sqlite:///{folder / f'ask{n_done}.db'}"
    study = optuna.create_study(
        storage=storage, direction="maximize", sampler=make_sampler("search", 0, 1)
    )
    rng = random.Random(0)
    dists = distributions(spec)
    trials = []
    for _ in range(n_done):
        config = _random_config(spec, dists, rng)
        point = land.evaluate(config, rng)
        if point.value is None:
            t = optuna.trial.create_trial(
                params=config,
                distributions=dists,
                state=optuna.trial.TrialState.PRUNED,
                system_attrs={"constraints:crash": 1.0},
            )
        else:
            t = optuna.trial.create_trial(
                params=config,
                distributions=dists,
                value=point.value,
                system_attrs={"constraints:slo": 0.0},
            )
        trials.append(t)
    study.add_trials(trials)
    out = []
    for _ in range(asks):
        start = time.perf_counter()
        trial = study.ask()
        config = suggest(trial, spec)
        out.append(time.perf_counter() - start)
        study.tell(trial, land.evaluate(config, rng).value or 0.0)
    return out


def crash_model_cost(n_done: int, pool: int) -> tuple[float, float]:
    """Seconds to rebuild the crash model's explanations after ``n_done`` random launches of
    ``five`` (its crashes as the landscape gives them), and to give ``pool`` others a crash
    probability."""
    import yaml

    from autotune.search import CrashModel
    from autotune.search.space import encode, known
    from autotune.space.load import load_text
    from autotune.space.suggest import distributions

    land = by_name("five")
    spec = load_text(yaml.safe_dump(land.space(n_done)), "five.yaml")
    rng = random.Random(0)
    dists = distributions(spec)
    launches: list[tuple[dict[str, Any], str | None]] = []
    for _ in range(n_done):
        config = _random_config(spec, dists, rng)
        point = land.evaluate(config, rng)
        launches.append((config, None if point.value is not None else point.cause))
    trial = optuna.trial.create_trial(params=launches[0][0], distributions=dists, value=0.0)
    params = list(known([trial]).values())
    configs = [_random_config(spec, dists, rng) for _ in range(pool)]
    start = time.perf_counter()
    model = CrashModel(params, launches)
    built = time.perf_counter()
    model.probability(encode(params, configs))
    return built - start, time.perf_counter() - built


def _random_config(
    spec: Any, dists: dict[str, optuna.distributions.BaseDistribution], rng: random.Random
) -> dict[str, Any]:
    """A configuration of ``spec`` drawn uniformly (numbers on their scale)."""
    return {
        p.name: dists[p.name].to_external_repr(
            rng.uniform(0, len(p.values()) - 1e-9) // 1
            if p.type in ("categorical", "bool")
            else _draw(dists[p.name], rng)
        )
        for p in spec.parameters
    }


def _draw(d: optuna.distributions.BaseDistribution, rng: random.Random) -> float:
    low, high = float(d.low), float(d.high)  # type: ignore[attr-defined]
    if getattr(d, "log", False):
        x = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        x = rng.uniform(low, high)
    step = getattr(d, "step", None)
    if isinstance(d, optuna.distributions.IntDistribution):
        return float(int(round(x)))
    if step:
        return low + round((x - low) / step) * step
    return x


def driver_overhead(trials: int, folder: Path) -> float:
    import yaml

    from autotune.engines import get_engine
    from autotune.space.load import load_text
    from autotune.study.driver import Driver, DriverOptions
    from autotune.tracking.none import NullTracker

    land = by_name("five")
    spec = load_text(yaml.safe_dump(land.space(trials)), "five.yaml")
    rng = random.Random(0)
    executor = InProcessExecutor(lambda ts: land.evaluate(dict(ts.params), rng), 0)
    engine = get_engine(spec.engine)
    driver = Driver(
        spec,
        engine=engine,
        real_engine=engine,
        executor=executor,
        tracker=NullTracker(),
        options=DriverOptions(study="overhead", study_dir=folder / "study", seed=0),
    )
    start = time.perf_counter()
    driver.run()
    return (time.perf_counter() - start) / len(executor.launches)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--asks", type=int, default=20)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--pool", type=int, default=300)
    a = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory(prefix="autotune-overhead-") as tmp:
        for n in (100, 1000):
            lat = ask_latency(n, a.asks, Path(tmp))
            print(
                f"ask()+suggest after {n:4d} trials (SQLite): median {statistics.median(lat):.3f}"
                f" s, worst {max(lat):.3f} s over {len(lat)} asks",
                flush=True,
            )
        for n in (100, 1000):
            rebuild, pooled = crash_model_cost(n, a.pool)
            print(
                f"crash model after {n:4d} launches: built in {rebuild:.3f} s, "
                f"{a.pool} crash probabilities in {pooled:.3f} s",
                flush=True,
            )
        per = driver_overhead(a.trials, Path(tmp))
        print(
            f"driver overhead per trial, {a.trials}-launch study over SQLite, in-process "
            f"executor: {per:.3f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
