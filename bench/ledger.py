"""What reading a study through the ledger costs the driver, per finished trial.

The driver reads every trial record after each result (best and baseline for the progress
line) and once per proposal looks for an earlier measurement of the same configuration, so
these reads grow with the study. This builds a SQLite study of ``--trials`` stored trials
(shaped like the driver's: half ok, a quarter crashed, a quarter skipped) and times
``Ledger.trials()``, ``Ledger.summary()`` and ``Ledger.measured()`` (and Optuna's own
``get_trials()``, which every read starts with), median of ``--repeat``.

    .venv/bin/python bench/ledger.py --trials 200 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from autotune.core.records import SkipKind, SkipRecord, StudyRecord, TrialRecord
from autotune.models import Cleanup, Outcome, Timings
from autotune.study.ledger import Ledger, trial_attrs

DISTS = {"bs": IntDistribution(1, 4096), "backend": CategoricalDistribution(["a", "b", "c"])}


def _record(i: int) -> tuple[TrialRecord, TrialState, float | None]:
    config = {"bs": i + 1, "backend": "abc"[i % 3]}
    base = {
        "number": i,
        "state": "COMPLETE",
        "config": config,
        "node": "node-1",
        "argv": ["python", "-m", "sglang.launch_server", "--bs", str(i + 1)] * 4,
        "timings": Timings(total_s=60.0),
        "cleanup": Cleanup(gpu_mem_after_mib=[600.0] * 8),
    }
    kind = i % 4
    if kind in (0, 1):
        metrics = {f"m{k}": float(k) for k in range(24)} | {"output_tok_s": 100.0 + i}
        record = TrialRecord(outcome=Outcome.OK, metrics=metrics, **base)
        return record, TrialState.COMPLETE, 100.0 + i
    if kind == 2:
        record = TrialRecord(
            outcome=Outcome.CRASHED,
            cause="kv_pool_oom",
            phase="memory_pool",
            evidence=["Not enough memory"] * 20,
            message="oom",
            **base,
        )
        return record, TrialState.PRUNED, None
    skip = SkipRecord(kind=SkipKind.DEAD_END, reason=f"bs={i} caused kv_pool_oom in trial 2")
    return TrialRecord(outcome=Outcome.PRUNED, skip=skip, **base), TrialState.PRUNED, None


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def run(n: int, repeat: int, folder: Path) -> tuple[float, float, float, float]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        storage=f"sqlite:///{folder / f'study-{n}.db'}", study_name="bench", direction="maximize"
    )
    ledger = Ledger(study)
    ledger.write_study(StudyRecord(name="bench", metric="output_tok_s", engine="sglang"))
    for i in range(n):
        record, state, value = _record(i)
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params=record.config,
                distributions=DISTS,
                user_attrs=trial_attrs(record),
            )
        )
    absent = {"bs": 0, "backend": "a"}  # the worst case: no earlier measurement matches
    return (
        _median_ms(lambda: study.get_trials(deepcopy=False), repeat),
        _median_ms(ledger.trials, repeat),
        _median_ms(ledger.summary, repeat),
        _median_ms(lambda: ledger.measured(absent), repeat),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trials", type=int, nargs="+", default=[200, 1000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(
        "| stored trials | Optuna get_trials() ms | Ledger.trials() ms | Ledger.summary() ms "
        "| Ledger.measured() ms |"
    )
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="autotune-bench-ledger-") as tmp:
        for n in args.trials:
            raw, rows, summary, measured = run(n, args.repeat, Path(tmp))
            print(f"| {n} | {raw:.0f} | {rows:.0f} | {summary:.0f} | {measured:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
