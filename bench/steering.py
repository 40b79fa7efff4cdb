"""Does the study stop launching crashing configurations? Crash share after the first 10 trials.

Runs the real driver (Optuna storage in SQLite, the local executor, the node's ``run_trial``)
on a synthetic space served by ``tests/study/servers/toy.py``, a stdlib server that crashes
or serves depending on its flags: backends ``c`` and ``d`` crash (no kernel), and ``x * y > 5``
crashes (too large), which is about 55% of the space; among the rest, throughput rises with
``x * y``, so the best configurations sit at the crashing edge. No rule blames a flag, so the
dead-end memory only ever blocks exact repeats: what is measured is the sampler's steering.

For each seed and method (random search, TPE told crashes as infeasible, the search's
sampler and crash model, ``autotune.search``) it launches ``--trials`` configurations and
reports the share of launched trials after the first 10 that crashed, and the best value.

    .venv/bin/python bench/steering.py --seeds 5 --trials 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is on the path, not the root

# The toy study is a test fixture; the benchmark runs it at scale.
from tests.study.study_helpers import TOY, make_driver, toy_space  # noqa: E402

__all__ = ["TOY", "crash_share", "launched_outcomes", "make_driver", "toy_space"]
METHODS = ("random", "tpe", "search")


@dataclass(frozen=True)
class Run:
    method: str
    seed: int
    share: float  # crashed / launched, over the launched trials after the first 10
    best: float | None
    skipped: int
    seconds: float


def launched_outcomes(study: optuna.Study) -> list[str]:
    """Outcomes of the launched trials, in launch order."""
    from autotune.study.ledger import Ledger

    return [str(t.outcome) for t in Ledger(study).trials() if t.launched]


def crash_share(outcomes: list[str], after: int = 10) -> float:
    late = outcomes[after:]
    return sum(o in ("crashed", "timeout") for o in late) / max(1, len(late))


def run_one(method: str, seed: int, trials: int, work: Path) -> Run:
    from autotune.study.ledger import Ledger

    folder = work / f"{method}-{seed}"
    folder.mkdir(parents=True)
    space = toy_space(folder / "toy.yaml", trials=trials)
    start = time.monotonic()
    driver = make_driver(
        space,
        folder / "study",
        seed=seed,
        sampler="random" if method == "random" else "tpe" if method == "tpe" else "search",
        steer=method == "search",
    )
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    outcomes = launched_outcomes(driver.study)
    ok = [
        t.value
        for t in driver.study.get_trials(deepcopy=False)
        if t.user_attrs.get("outcome") == "ok" and t.value is not None
    ]
    skipped = sum(1 for t in Ledger(driver.study).trials() if t.skip is not None)
    return Run(
        method,
        seed,
        crash_share(outcomes),
        max(ok, default=None),
        skipped,
        time.monotonic() - start,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--methods", default=",".join(METHODS))
    a = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="autotune-steering-") as tmp:
        for seed in range(a.seeds):
            for method in a.methods.split(","):
                r = run_one(method, seed, a.trials, Path(tmp))
                runs.append(r)
                print(
                    f"seed {seed} {method:13s} crash share {r.share:.2f}  best "
                    f"{r.best or 0:7.1f} tok/s  skipped {r.skipped:3d}  {r.seconds:5.1f} s",
                    flush=True,
                )
    print(f"\ncrash share of launched trials 11..{a.trials}, mean over {a.seeds} seeds")
    print("| method | crash share | best tok/s (mean) | skipped (mean) |")
    print("| --- | --- | --- | --- |")
    for method in a.methods.split(","):
        mine = [r for r in runs if r.method == method]
        print(
            f"| {method} | {statistics.mean(r.share for r in mine):.2f} | "
            f"{statistics.mean(r.best or 0 for r in mine):.1f} | "
            f"{statistics.mean(r.skipped for r in mine):.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
