"""Does the ablation find what each change of the winner is worth? Against a known truth.

Runs the real driver (SQLite Optuna storage, the local executor, the node's ``run_trial``) on
the toy server of ``tests/study/servers/toy.py``, which streams at ``100 * (1 + x*y/5)`` tok/s,
x1.1 for backend ``b``: real launches of a real process, measured over HTTP. The baseline is
(a, 0.1, 1), about 102 tok/s; the winner (b, 1.0, 5), about 220, is queued so that the search
finds it. After confirmation, the ablation reverts each of its three changes alone:

- backend back to ``a``: 200 tok/s, the winner is +10.0% over it;
- x back to 0.1: 121 tok/s, +81.8%;
- y back to 1: 132 tok/s, +66.7%.

For each seed it prints each change's contribution with its interval, and whether the interval
holds the true contribution. (The request overheads of a 12-token answer shave the measured
figures a little, alike for all; the ratios are what is compared.)

    .venv/bin/python bench/ablation.py --seeds 3 --rounds 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

# The toy study is a test fixture (tests/study/test_ablation.py runs it once).
from tests.study.study_helpers import make_driver, toy_space  # noqa: E402

TRUTH = {"backend": 220 / 200 - 1, "x": 220 / 121 - 1, "y": 220 / 132 - 1}
PARAMS = [
    {"name": "backend", "type": "categorical", "choices": ["a", "b"], "flag": "--backend"},
    {"name": "x", "type": "float", "low": 0.1, "high": 1.0, "step": 0.1, "flag": "--x"},
    {"name": "y", "type": "int", "low": 1, "high": 5, "flag": "--y"},
]
WINNER = {"backend": "b", "x": 1.0, "y": 5}
BASELINE = {"backend": "a", "x": 0.1, "y": 1}


def run(seed: int, rounds: int, root: Path) -> list[str]:
    from autotune.study.ledger import Ledger

    space = toy_space(root / "toy.yaml", parameters=PARAMS, baseline=BASELINE)
    driver = make_driver(
        space,
        root / "study",
        n_trials=3,
        seed=seed,
        sampler="random",
        baseline_launches=3,
        confirm=1,
        confirm_rounds=(3, 3),
        ablation_rounds=rounds,
        ablation_launches=rounds * 4,
    )
    driver.study.enqueue_trial(WINNER)
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    a = Ledger(driver.study).summary().ablation
    if a is None or a.skipped:
        return [f"| {seed} | - | {a.skipped if a else 'no ablation'} | | |"]
    rows = []
    for step in a.steps:
        c = step.contribution
        if c is None:
            rows.append(f"| {seed} | {step.param} | {step.failed} | | |")
            continue
        lo, hi = c.ci95_pct
        held = lo <= TRUTH[step.param] * 100 <= hi
        rows.append(
            f"| {seed} | {step.param} | {c.interval_text()} | {TRUTH[step.param] * 100:+.1f}% "
            f"| {'yes' if held else 'no'} |"
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    print("| seed | change | contribution (95% CI) | truth | interval holds it |")
    print("| ---: | --- | --- | ---: | --- |")
    start = time.monotonic()
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as tmp:
            for row in run(seed, args.rounds, Path(tmp)):
                print(row, flush=True)
    print(f"\n{args.seeds} studies, {args.rounds} rounds each, {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
