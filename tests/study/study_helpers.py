"""The toy study every driver test shares: a space file for ``servers/toy.py`` and a real
``Driver`` over it (command engine, local executor, Optuna SQLite storage, no MLflow).

The benchmarks in ``bench/`` use the same fixtures (they import this module; tests never
import ``bench/``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

TOY = Path(__file__).resolve().parent / "servers" / "toy.py"


def toy_space(
    path: Path,
    *,
    trials: int = 30,
    parameters: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Path:
    """Write a space file for the toy server (default: the steering space) and return it."""
    params = parameters or [
        {
            "name": "backend",
            "type": "categorical",
            "choices": ["a", "b", "c", "d"],
            "flag": "--backend",
        },
        {"name": "x", "type": "float", "low": 0.0, "high": 1.0, "flag": "--x"},
        {"name": "y", "type": "int", "low": 1, "high": 8, "flag": "--y"},
    ]
    space: dict[str, Any] = {
        "name": "toy",
        "engine": {
            "name": "command",
            "command": [sys.executable, str(TOY), "--port", "{port}"],
            "startup_timeout_s": 30,
        },
        "model": "toy",
        "parameters": params,
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {
            "concurrency": 1,
            "num_requests": 2,
            "prompt_len": 4,
            "output_len": 12,
            "warmup_requests": 0,
        },
        "budget": {"trials": trials},
        **extra,
    }
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def make_driver(space_file: Path, study_dir: Path, **options: Any) -> Any:
    """A real Driver over the toy space: command engine, local executor, no MLflow."""
    from autotune.dispatch.local import LocalExecutor
    from autotune.engines import get_engine
    from autotune.space.load import load
    from autotune.study.driver import Driver, DriverOptions
    from autotune.tracking.none import NullTracker

    spec = load(space_file)
    engine = get_engine(spec.engine)
    opts = DriverOptions(study=options.pop("study", "toy"), study_dir=study_dir, **options)
    return Driver(
        spec,
        engine=engine,
        real_engine=engine,
        executor=LocalExecutor(0, 1),
        tracker=NullTracker(),
        options=opts,
    )
