"""The search against a black-box server it was never tuned on, with real launches.

``tests/study/servers/blackbox.py`` (``--server blackbox``: 5 settings as flags and environment
variables, 3 crash regions with real-looking errors) or any other ``blackboxN.py`` there is
started by the ``command`` engine for every trial, with the driver's real defaults (the
baseline launched three times, proposals made again relaunched, confirmation rounds at the
end). The real driver, local executor and node runner launch it, benchmark it over HTTP and
classify its crashes. Reported per seed: the noise-free rate of the configuration the study
reports (``Ledger.best``, what ``status --json`` and ``export`` give) as % of the optimum, and
crashes launched. The same boxes answered in-process (seconds a study) are the suite's
``boxes`` set: ``python -m bench.search --families boxes``.

    .venv/bin/python bench/search_blackbox.py --seeds 5 --trials 30
    .venv/bin/python bench/search_blackbox.py --server blackbox2 --seeds 5 --sampler tpe
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.search.blackboxes import SERVER, space_file  # noqa: E402
from tests.search.drivers import command_driver  # noqa: E402


def run(
    seed: int, trials: int, work: Path, server: str = "blackbox", **options: Any
) -> tuple[float, int, int, int]:
    """(% of optimum of the configuration the study reports, crashes launched, launches of
    the search, launches on top of it: the baseline's extra ones and confirmation)."""
    from autotune.core.records import budget_launches
    from autotune.study.ledger import Ledger

    _, _, truth_of, optimum_of, _ = SERVER[server]
    folder = work / f"seed{seed}"
    folder.mkdir(parents=True)
    driver = command_driver(
        space_file(folder / "space.yaml", trials, server),
        folder / "study",
        study=f"bb{seed}",
        seed=seed,
        **options,
    )
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    ledger = Ledger(driver.study)
    trials_ = ledger.trials()
    launched = [t for t in trials_ if t.launched]
    best = ledger.best(trials_)
    pct = 100.0 * (truth_of(best.config) or 0.0) / optimum_of() if best is not None else 0.0
    search = budget_launches(trials_)
    return pct, sum(t.crashed for t in launched), search, len(launched) - search


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0, help="the first seed")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--server", choices=sorted(SERVER), default="blackbox")
    ap.add_argument("--sampler", choices=("search", "tpe", "random"), default="search")
    a = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    rows: list[tuple[float, int]] = []
    with tempfile.TemporaryDirectory(prefix="autotune-blackbox-") as tmp:
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            pct, crashes, search, extra = run(
                seed, a.trials, Path(tmp), a.server, sampler=a.sampler
            )
            rows.append((pct, crashes))
            print(
                f"seed {seed}: answer {pct:5.1f}% of optimum, {crashes} crashes in {search} "
                f"launches of the search (+{extra} baseline repeats and confirmation)",
                flush=True,
            )
    print(
        f"{a.server} ({a.sampler}): mean {statistics.mean(r[0] for r in rows):.1f}% of "
        f"optimum; {sum(r[0] >= 95 for r in rows)}/{len(rows)} seeds >= 95%; "
        f"{statistics.mean(r[1] for r in rows):.1f} crashes per study"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
