"""The search defaults against a black-box server they were never tuned on, with real launches.

``tests/study/servers/blackbox.py`` (``--server blackbox``: 5 settings as flags and environment
variables, 3 crash regions with real-looking errors) or any other ``blackboxN.py`` there
(``--server blackboxN``: independent guesses at issue 13's hidden server; each file's docstring
says what it is, docs/benchmarks.md which are tuning material and which are held out) is
started by the ``command`` engine for every trial, with the driver's real defaults (the
baseline launched three times, proposals made again relaunched, confirmation rounds at the
end). The real driver, local executor and node runner launch it, benchmark it over HTTP and
classify its crashes. Reported per seed: the noise-free rate of the configuration the study
reports (``Ledger.best``, what ``status --json`` and ``export`` give) as % of the optimum
(enumerated from the server's own rate function), and crashes launched in the search's 30
launches.

    .venv/bin/python bench/search_blackbox.py --seeds 5 --trials 30
    .venv/bin/python bench/search_blackbox.py --server blackbox2 --seeds 5 --trials 30
    .venv/bin/python bench/search_blackbox.py --server blackbox3 --seeds 5 --trials 30
    .venv/bin/python bench/search_blackbox.py --seeds 10 --in-process tpe-nosteer   # seconds
    .venv/bin/python bench/search_blackbox.py --seeds 60 --prune \
        --in-process autotune --against before-swap   # paired, in-process
    .venv/bin/python bench/search_blackbox.py --server blackbox3 --seeds 120 --prune \
        --noise 0.01 --in-process crash-budget --against autotune --check   # real launches' noise
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

import importlib  # noqa: E402

from bench.search.harness import check_passes  # noqa: E402
from bench.steering import make_driver  # noqa: E402
from blackbox import crash_of, rate  # noqa: E402

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


def space_file(path: Path, trials: int, server: str = "blackbox") -> Path:
    parameters, baseline, _, _, _ = SERVER[server]
    space = {
        "name": server,
        "engine": {
            "name": "command",
            "command": [sys.executable, str(SERVERS / f"{server}.py"), "--port", "{port}"],
            "startup_timeout_s": 30,
        },
        "model": server,
        "parameters": parameters,
        "baseline": baseline,
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


def crash_lines(c: dict[str, Any]) -> list[str] | None:
    return crash_of(c["backend"], c["max_batch"], c["mem"], c["threads"], c["fusion"])


def truth(c: dict[str, Any]) -> float | None:
    if crash_lines(c) is not None:
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


# name -> (parameters, baseline, truth, optimum, the error lines a configuration dies with):
# ``blackbox`` is this file's; every other ``blackboxN.py`` under tests/study/servers names its
# own (PARAMETERS, BASELINE, truth, optimum, crash_of)
SERVER: dict[str, tuple[list[dict[str, Any]], dict[str, Any], Any, Any, Any]] = {
    "blackbox": (PARAMETERS, BASELINE, truth, optimum, crash_lines),
}
for _path in sorted(SERVERS.glob("blackbox[0-9]*.py")):
    _box = importlib.import_module(_path.stem)
    SERVER[_path.stem] = (_box.PARAMETERS, _box.BASELINE, _box.truth, _box.optimum, _box.crash_of)


# The variants of run() a seed may also run (--NAME), in the order they run, and what each is.
VARIANTS: dict[str, str] = {
    "previous": "the previous search defaults",
    "before-swap": "the defaults without swaps or the combined crash probability",
    "no-novel": "the defaults without the fewest untried pairs among the model's best candidates",
    "crash-budget": "the defaults with a crash budget of a tenth of the trials",
    "no-retry": "the defaults without a crashed repair's swap made again",
    "no-mid": "the defaults without the design's half-way launches",
    "no-edge-step": "the defaults without edge steps",
    "no-edge-stop": "the defaults with edge steps past a run of that number that read no better",
    "ridge-0.3": "the defaults with the additive model's ridge at 0.3 (before it was measured)",
    "coarse": "the defaults with the additive model's three bends only",
    "no-pairs": "the defaults with a crash that one value explains kept to that explanation alone",
    "no-endgame": "the defaults with TPE's share kept to the budget's last launches",
    "no-swap-choices": "the defaults with a swap's repair moving numbers only",
    "kin-1": "the defaults with no crash's explanation weighed by what caused one alike",
    "no-retest": "the defaults without the retest of a choice that crashed at the baseline",
    "centred": "the defaults with the additive model's features centred",
    "edge-risk-0.5": "the defaults with edge steps as far as a crash probability of 0.5",
    "no-joint": "the defaults with a two-number explanation read through each threshold alone",
    "no-square": "the defaults without square terms for numbers that peak inside their range",
}

# Variants of run(): the default sampler with these settings (bench/search strategies alike).
ONE_CHANGE: dict[str, dict[str, Any]] = {
    "before-swap": {"swap": 0, "novel": 0.0},
    "no-novel": {"novel": 0.0},
    "no-retry": {"retry": False},
    "no-mid": {"mid": "off"},
    "no-edge-step": {"edge_step": False},
    "no-edge-stop": {"edge_stop": False},
    "ridge-0.3": {"ridge": 0.3},
    "coarse": {"fine": False},
    "no-endgame": {"endgame": 0},
    "no-swap-choices": {"swap_choices": 0.0},
    "no-retest": {"retest": False},
    "centred": {"centred": True},
    "edge-risk-0.5": {"edge_risk": 0.5},
    "no-square": {"square": "off"},
}

# Variants of run() whose crash model's options differ from the defaults (``crash-budget``'s
# depends on the trials).
STEERING_CHANGE: dict[str, dict[str, Any]] = {
    "previous": {"soft": False, "combine": False},
    "before-swap": {"combine": False},
    "no-pairs": {"pairs": False},
    "kin-1": {"kin": 1.0},
    "no-joint": {"joint": False},
}


def run(
    seed: int,
    trials: int,
    work: Path,
    server: str = "blackbox",
    variant: str = "defaults",
    **options: Any,
) -> tuple[float, int, int, int]:
    """(% of optimum of the configuration the study reports, crashes launched, launches of
    the search, launches on top of it: the baseline's extra ones and confirmation).
    ``variant``: one of ``VARIANTS`` (each the bench/search strategy of that name;
    ``previous`` is bench/search ``last``)."""
    from bench.search.harness import driver_sampler

    from autotune.core.records import budget_launches
    from autotune.study.ledger import Ledger
    from autotune.study.sampler import LocalTPESampler
    from autotune.study.steering import SteeringOptions, crash_allowance

    _, _, truth_of, optimum_of, _ = SERVER[server]
    folder = work / f"{variant}-seed{seed}"
    folder.mkdir(parents=True)

    def sampler(default: Any, s: int | None) -> Any:
        if variant in ONE_CHANGE:  # the defaults with one setting of the sampler changed
            return LocalTPESampler(default._tpe, seed=s, **ONE_CHANGE[variant])
        if variant != "previous":  # the defaults, or only the crash model's options changed
            return default
        return LocalTPESampler(
            default._tpe,
            design=5,
            ei=False,
            risky=1.0,
            unset=False,
            early=False,
            swap=0,
            novel=0.0,
            seed=s,
        )

    if variant == "crash-budget":
        options["steering"] = SteeringOptions(budget=crash_allowance(0.1, trials))
    elif variant in STEERING_CHANGE:
        options["steering"] = SteeringOptions(**STEERING_CHANGE[variant])
    with driver_sampler(sampler):
        driver = make_driver(
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
    crashed = sum(t.crashed for t in launched)
    best = ledger.best(trials_)
    pct = 100.0 * (truth_of(best.config) or 0.0) / optimum_of() if best is not None else 0.0
    search = budget_launches(trials_)
    return pct, crashed, search, len(launched) - search


def in_process(
    seeds: int,
    trials: int,
    strategy: str,
    server: str = "blackbox",
    empty: bool = False,
    noise: float = 0.03,
    first: int = 0,
) -> list[tuple[float, int]]:
    """The same study with the server's rate function answered in-process (``noise``: the
    launch-to-launch spread, log scale), for
    many seeds in seconds; ``strategy`` is a bench.search strategy name. A crash is the
    server's own error lines, classified by the command engine's rules as a launch's log is.
    ``empty``: the space's baseline is ``{}``, and a setting left unset takes the server's
    own default (its usual baseline's value)."""
    import random

    from bench.search.__main__ import STRATEGIES
    from bench.search.landscapes import CRASH_S, Landscape, Point, crash, ok

    from autotune.engines import get_engine
    from autotune.models import Phase
    from autotune.node.failures import classify
    from autotune.space.schema import EngineSpec

    parameters, baseline, truth_of, optimum_of, crash_of_ = SERVER[server]
    rules = get_engine(
        EngineSpec(name="command", command=["server", "--port", "{port}"])
    ).failure_rules()

    defaults = dict(baseline)

    def evaluate(c: dict[str, Any], rng: random.Random) -> Point:
        c = {**defaults, **c}
        lines = crash_of_(c)
        if lines is None:
            return ok(truth_of(c), rng, noise)
        f = classify(lines, rules, phase=Phase.LOAD, exit_code=1, argv=[], env={})
        phase = f.phase.value if f.phase.value in CRASH_S else "load"
        return crash(f.cause.value, phase, f.message or "".join(f.evidence[:1]))

    land = Landscape(
        server, f"tests/study/servers/{server}.py", parameters, evaluate, {} if empty else baseline
    )
    land._optimum = optimum_of()
    out = []
    for seed in range(first, first + seeds):
        launches = STRATEGIES[strategy](land, seed, trials)
        # autotune reports its confirmed winner; a competitor its best measured launch.
        answer = [la for la in launches if la.kind == "answer"] or [
            max((la for la in launches if la.value is not None), key=lambda la: la.value or 0.0)
        ]
        out.append(
            (100.0 * (answer[0].truth or 0.0) / land._optimum, sum(la.crashed for la in launches))
        )
    return out


def _mean_se(xs: list[float]) -> str:
    se = statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):+.1f} (SE {se:.1f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0, help="the first seed")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument(
        "--in-process",
        metavar="STRATEGY",
        default=None,
        help="answer launches in-process instead (a bench.search strategy name)",
    )
    ap.add_argument("--server", choices=sorted(SERVER), default="blackbox")
    ap.add_argument(
        "--prune",
        action="store_true",
        help="with --in-process: 3 windows per launch, handed to the driver's pruner",
    )
    ap.add_argument(
        "--noise",
        type=float,
        default=0.03,
        help="with --in-process: launch-to-launch noise (log spread; real launches of the boxes "
        "measure about 0.01); with --prune the windows' spread is two thirds of it",
    )
    ap.add_argument(
        "--empty-baseline",
        action="store_true",
        help="with --in-process: the space's baseline is {} (the server's own defaults)",
    )
    ap.add_argument(
        "--against",
        metavar="STRATEGY",
        default=None,
        help="with --in-process: also run this strategy on the same seeds, with the paired "
        "difference in %% of optimum and crashes (standard errors)",
    )
    for name, what in VARIANTS.items():
        ap.add_argument(
            f"--{name}",
            action="store_true",
            help=f"also run {what} on each seed, alternating with these",
        )
    ap.add_argument(
        "--check",
        action="store_true",
        help="with --in-process: how often the issue's check would pass (5 seeds drawn from "
        "these with replacement: >= 95%% of the optimum in 4 of 5, <= 4 crashes per 30 on "
        "average)",
    )
    a = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if a.in_process:
        if a.prune:
            from bench.search import harness

            harness.WINDOWS = 3
            harness.WINDOW_NOISE = a.noise * 2 / 3
        runs = {}
        for name in [a.in_process] + ([a.against] if a.against else []):
            rows = runs[name] = in_process(
                a.seeds, a.trials, name, a.server, a.empty_baseline, a.noise, a.first_seed
            )
            print(
                f"{a.server} in-process, {name}: mean "
                f"{statistics.mean(r[0] for r in rows):.1f}% of optimum; "
                f"{sum(r[0] >= 95 for r in rows)}/{len(rows)} seeds >= 95%; "
                f"{statistics.mean(r[1] for r in rows):.2f} crashes per {a.trials} launches"
                + (f"; the check passes {check_passes(rows):.0%} of the time" if a.check else "")
            )
        if a.against:
            pairs = list(zip(runs[a.in_process], runs[a.against], strict=True))
            reach = [x[0] - y[0] for x, y in pairs]
            crashes = [x[1] - y[1] for x, y in pairs]
            print(
                f"{a.in_process} - {a.against}, paired over {len(pairs)} seeds: "
                f"{_mean_se(reach)} points of the optimum, {_mean_se(crashes)} crashes"
            )
        return 0
    sides = ["defaults"] + [n for n in VARIANTS if getattr(a, n.replace("-", "_"))]
    rows: dict[str, list[tuple[float, int]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="autotune-blackbox-") as tmp:
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            for side in sides:  # alternating: each seed's pair runs under the same load
                pct, crashes, search, extra = run(seed, a.trials, Path(tmp), a.server, side)
                rows[side].append((pct, crashes))
                print(
                    f"seed {seed} ({side}): answer {pct:5.1f}% "
                    f"of optimum, {crashes} crashes in {search} launches of the search "
                    f"(+{extra} baseline repeats and confirmation)",
                    flush=True,
                )
    for side in sides:
        mine = rows[side]
        print(
            f"{a.server} ({side}): mean "
            f"{statistics.mean(r[0] for r in mine):.1f}% of optimum; "
            f"{sum(r[0] >= 95 for r in mine)}/{len(mine)} seeds >= 95%; "
            f"{statistics.mean(r[1] for r in mine):.1f} crashes per {a.trials} launches"
        )
    for side in sides[1:]:
        pairs = list(zip(rows["defaults"], rows[side], strict=True))
        print(
            f"defaults - {side}, paired over {len(pairs)} seeds: "
            f"{_mean_se([x[0] - y[0] for x, y in pairs])} points of the optimum, "
            f"{_mean_se([float(x[1] - y[1]) for x, y in pairs])} crashes"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
