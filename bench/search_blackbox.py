"""The search defaults against a black-box server they were never tuned on, with real launches.

``tests/study/servers/blackbox.py`` is started by the ``command`` engine for every trial (5
settings as flags and environment variables, 3 crash regions with real-looking errors; see its
docstring). The real driver, local executor and node runner launch it, benchmark it over HTTP
and classify its crashes. Reported per seed: the best measured configuration's noise-free rate
as % of the optimum (enumerated from the server's own rate function), and crashes launched.

    .venv/bin/python bench/search_blackbox.py --seeds 5 --trials 30
    .venv/bin/python bench/search_blackbox.py --seeds 10 --in-process tpe-nosteer   # seconds
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import optuna
import yaml

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "study" / "servers"
sys.path.insert(0, str(SERVERS))
sys.path.insert(0, str(ROOT))

from bench.steering import make_driver  # noqa: E402
from blackbox import rate  # noqa: E402

PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "backend",
        "type": "categorical",
        "choices": ["triton", "flashinfer", "trtllm"],
        "flag": "--attention-backend",
    },
    {
        "name": "max_batch",
        "type": "int",
        "low": 8,
        "high": 1024,
        "log": True,
        "flag": "--max-batch",
    },
    {
        "name": "mem",
        "type": "float",
        "low": 0.6,
        "high": 0.95,
        "step": 0.01,
        "flag": "--mem-fraction",
    },
    {
        "name": "threads",
        "type": "int",
        "low": 64,
        "high": 2048,
        "log": True,
        "env": "BB_KERNEL_THREADS",
    },
    {"name": "fusion", "type": "bool", "env": "BB_FUSION"},
]
BASELINE = {"backend": "triton", "max_batch": 16, "mem": 0.7, "threads": 128, "fusion": False}


def space_file(path: Path, trials: int) -> Path:
    space = {
        "name": "blackbox",
        "engine": {
            "name": "command",
            "command": [sys.executable, str(SERVERS / "blackbox.py"), "--port", "{port}"],
            "startup_timeout_s": 30,
        },
        "model": "blackbox",
        "parameters": PARAMETERS,
        "baseline": BASELINE,
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {
            "concurrency": 1,
            "num_requests": 2,
            "prompt_len": 4,
            "output_len": 24,
            "warmup_requests": 0,
        },
        "budget": {"trials": trials},
    }
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def truth(c: dict[str, Any]) -> float | None:
    if c["backend"] == "flashinfer" and c["max_batch"] > 128:
        return None
    if c["mem"] > 0.88 and c["fusion"]:
        return None
    if c["backend"] == "trtllm" and c["threads"] >= 1024:
        return None
    return rate(c["backend"], c["max_batch"], c["mem"], c["threads"], c["fusion"])


def optimum() -> float:
    """The best noise-free rate: its factors are monotone up to the crash edges, so the grid
    of range ends and edge values holds it."""
    best = 0.0
    for b, bt, m, t, f in itertools.product(
        ["triton", "flashinfer", "trtllm"],
        [8, 16, 64, 128, 129, 1024],
        [0.6, 0.7, 0.88, 0.89, 0.95],
        [64, 128, 1023, 1024, 2048],
        [False, True],
    ):
        v = truth({"backend": b, "max_batch": bt, "mem": m, "threads": t, "fusion": f})
        best = max(best, v or 0.0)
    return best


def run(seed: int, trials: int, work: Path, **options: Any) -> tuple[float, int, int]:
    """(% of optimum of the best measured configuration, crashes launched, launched)."""
    folder = work / f"seed{seed}"
    folder.mkdir(parents=True)
    driver = make_driver(
        space_file(folder / "space.yaml", trials),
        folder / "study",
        study=f"bb{seed}",
        seed=seed,
        **options,
    )
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    launched = [
        t
        for t in driver.study.get_trials(deepcopy=False)
        if t.user_attrs.get("outcome") in ("ok", "crashed", "timeout")
    ]
    crashed = sum(t.user_attrs["outcome"] != "ok" for t in launched)
    ok = [t for t in launched if t.user_attrs["outcome"] == "ok" and t.value is not None]
    best = max(ok, key=lambda t: t.value or 0.0)
    return 100.0 * (truth(best.user_attrs["config"]) or 0.0) / optimum(), crashed, len(launched)


def in_process(seeds: int, trials: int, strategy: str) -> list[tuple[float, int]]:
    """The same study with the server's rate function answered in-process (3% noise), for
    many seeds in seconds; ``strategy`` is a bench.search strategy name."""
    import random

    from bench.search.__main__ import STRATEGIES
    from bench.search.landscapes import Landscape, Point, crash, ok

    def evaluate(c: dict[str, Any], rng: random.Random) -> Point:
        t = truth(c)
        return crash("unknown", "load", "crashed") if t is None else ok(t, rng, 0.03)

    land = Landscape("blackbox", "tests/study/servers/blackbox.py", PARAMETERS, evaluate, BASELINE)
    land._optimum = optimum()
    out = []
    for seed in range(seeds):
        launches = STRATEGIES[strategy](land, seed, trials)
        best = max((la for la in launches if la.value is not None), key=lambda la: la.value or 0.0)
        out.append(
            (100.0 * (best.truth or 0.0) / land._optimum, sum(la.crashed for la in launches))
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument(
        "--in-process",
        metavar="STRATEGY",
        default=None,
        help="answer launches in-process instead (a bench.search strategy name)",
    )
    a = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if a.in_process:
        rows = in_process(a.seeds, a.trials, a.in_process)
        print(
            f"in-process, {a.in_process}: mean {statistics.mean(r[0] for r in rows):.1f}% of "
            f"optimum; {sum(r[0] >= 95 for r in rows)}/{len(rows)} seeds >= 95%; "
            f"{statistics.mean(r[1] for r in rows):.1f} crashes per {a.trials} launches"
        )
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="autotune-blackbox-") as tmp:
        for seed in range(a.seeds):
            pct, crashes, launched = run(seed, a.trials, Path(tmp))
            rows.append((pct, crashes))
            print(
                f"seed {seed}: best {pct:5.1f}% of optimum, {crashes} crashes in {launched} "
                "launches",
                flush=True,
            )
    print(
        f"mean {statistics.mean(r[0] for r in rows):.1f}% of optimum; "
        f"{sum(r[0] >= 95 for r in rows)}/{len(rows)} seeds >= 95%; "
        f"{statistics.mean(r[1] for r in rows):.1f} crashes per {a.trials} launches"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
