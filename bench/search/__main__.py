"""The search suite: strategies against landscape families, judged by the worst family.

Each study runs ``--trials`` launches of the search on one landscape instance and one seed
(autotune's driver launches more: the baseline again and its confirmation rounds; every other
strategy is then given as many launches as the driver made on the same landscape and seed,
unless ``--launches trials``); it is scored by the noise-free value of the configuration it
reports (autotune: the winner its confirmation rounds settle on; random search and TPE: their
best measured launch) as % of the instance's optimum, and by the crashes it launched (the
search's and any on top of it).
Per family: the mean and the lowest study, the studies at 95% or more, crashes per study,
each mean with its standard error over the family's studies. A strategy is judged by its
worst family. Families are in ``families.MANIFEST`` (tuning or held out, fixed before any
default was tuned); ``hand`` is the hand-made landscapes, ``boxes`` the black boxes of
tests/study/servers answered in-process, ``verify`` the stand-in's verify space, ``gen:A:B``
the generated landscapes A..B-1 (``generated.py``).

    .venv/bin/python -m bench.search --quick        # CI: a minute
    .venv/bin/python -m bench.search --families tuning --seeds 2 --instances 0:4 --prune
    .venv/bin/python -m bench.search --families held_out,boxes,hand,verify --prune
    .venv/bin/python -m bench.search --families mixed7 --strategies "autotune[pairs=0]"
    .venv/bin/python -m bench.search --families mixed7 --parallel 4 --strategies autotune

A strategy ``autotune[knob=value,...]`` is the search's sampler with those constructor
arguments (``plain[...]``: the same in a plain Optuna loop, crashes told through ``CRASH``).
Peers (``cmaes``, ``botorch``, ``smac``, ``hebo``, ``ngopt``) are strategies where their
packages are installed: ``peers.py`` gives the pip line.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import optuna
import yaml
from bench.search import families as fam
from bench.search import peers
from bench.search.harness import run_driver
from bench.search.landscapes import LANDSCAPES, Landscape, by_name
from tests.search.inprocess import Launch

Strategy = Callable[[Landscape, int, int], list[Launch]]


def _plain(
    sampler: Callable[[int], optuna.samplers.BaseSampler], attrs: bool = False, worst: bool = False
) -> Strategy:
    """A plain Optuna loop (as a user without autotune would run it): the baseline first,
    then every proposal launched; a crash told as FAIL (``attrs``: with its cause in the
    search's crash attribute; ``worst``: told as complete, at the worst value measured yet,
    and as breaking a constraint, ``CRASHED``)."""

    def run(land: Landscape, seed: int, trials: int) -> list[Launch]:
        from autotune.space.load import load_text
        from autotune.space.suggest import suggest

        spec = load_text(yaml.safe_dump(land.space(trials), sort_keys=False), f"<{land.name}>")
        rng = random.Random(seed * 7919 + 1)
        study = optuna.create_study(direction="maximize", sampler=sampler(seed))
        study.enqueue_trial(dict(land.baseline))
        out: list[Launch] = []
        while len(out) < trials:
            trial = study.ask()
            fixed = dict(land.baseline) if trial.number == 0 else None
            config = suggest(trial, spec, fixed=fixed)
            p = land.evaluate(config, rng)
            clock = (out[-1].end if out else 0.0) + p.seconds  # one launch at a time
            out.append(Launch(config, p.value, p.truth, p.value is None, p.seconds, end=clock))
            if p.value is None and worst:
                trial.set_user_attr(CRASHED, True)
                study.tell(trial, min(la.value for la in out if la.value is not None))
            elif p.value is None:
                if attrs:
                    from autotune.search import CRASH

                    trial.set_user_attr(CRASH, p.cause)
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, p.value)
        return out

    return run


STRATEGIES: dict[str, Strategy] = {
    "autotune": lambda land, s, n: run_driver(land, s, n),
    "random": _plain(lambda s: optuna.samplers.RandomSampler(seed=s)),
    "tpe": _plain(lambda s: optuna.samplers.TPESampler(seed=s)),
    # Optuna's own Gaussian-process sampler (needs torch: the quickstart extra's); gpc: told
    # of crashes as a constraint (its feasibility model), at the worst value measured
    "gp": _plain(lambda s: optuna.samplers.GPSampler(seed=s, warn_independent_sampling=False)),
    "gpc": _plain(
        lambda s: optuna.samplers.GPSampler(
            seed=s, warn_independent_sampling=False, constraints_func=_crashed
        ),
        worst=True,
    ),
    "plain": _plain(lambda s: _search(seed=s), attrs=True),
}


CRASHED = "bench:crashed"  # user attribute of a crash a plain loop told as complete


def _crashed(trial: optuna.trial.FrozenTrial) -> list[float]:
    return [1.0 if trial.user_attrs.get(CRASHED) else -1.0]


def _search(**kw: object) -> optuna.samplers.BaseSampler:
    from autotune.search import Sampler

    return Sampler(**kw)


# other optimizers, where their packages are installed (``peers.py``: cmaes, botorch, ...)
STRATEGIES.update(peers.strategies(_plain, _crashed))


@dataclass(frozen=True)
class Score:
    landscape: str
    family: str
    strategy: str
    seed: int
    answer: float  # % of the optimum of the configuration the study reports
    crashes: int  # launched crashes (the search's and any on top of it)
    launches: int  # launches in all
    seconds: float
    wall: float = 0.0  # the study's wall time in server-seconds, its workers together


def score(
    land: Landscape, family: str, strategy: str, seed: int, launches: list[Launch], secs: float
) -> Score:
    opt = land.optimum()
    ran = [la for la in launches if la.kind != "answer"]
    reported = [la for la in launches if la.kind == "answer"] or [
        max(ran, key=lambda la: -1.0 if la.value is None else la.value)
    ]
    return Score(
        land.name,
        family,
        strategy,
        seed,
        100.0 * (reported[0].truth or 0.0) / opt,
        sum(la.crashed for la in ran),
        len(ran),
        secs,
        max((la.end for la in ran), default=0.0),
    )


def trace(land: Landscape, s: Score, launches: list[Launch]) -> dict[str, object]:
    """One study's launches in order, for ``allocation.py``: each launch's kind (search,
    extra, answer), source (the proposal's kind), crash, measured value, % of the optimum
    (noise-free) and configuration."""
    opt = land.optimum()
    return {
        **asdict(s),
        "launches": [
            {
                "kind": la.kind,
                "source": la.source,
                "crashed": la.crashed,
                "value": la.value,
                "pct": None if la.truth is None else 100.0 * la.truth / opt,
                "config": la.config,
            }
            for la in launches
        ],
    }


def landscapes(name: str, instances: range) -> list[tuple[str, Landscape]]:
    """(family, landscape) pairs of a family name, a manifest set or an old set."""
    if name in fam.MANIFEST:
        return [pair for n in fam.MANIFEST[name] for pair in landscapes(n, instances)]
    if name in fam.FAMILIES:
        return [(name, fam.family(name, i)) for i in instances]
    if name == "hand":
        return [("hand", land) for land in LANDSCAPES]
    if name == "quick":
        return [
            ("box", by_name("box")),
            ("five", by_name("five")),
            ("mixed7", fam.family("mixed7", 0)),
        ]
    if name == "verify":
        from tests.search.verify_space import VERIFY

        return [("verify", VERIFY)]
    if name.startswith("gen:"):
        from bench.search.generated import generated

        lo, hi = (int(x) for x in name.split(":")[1:])
        return [("generated", generated(i)) for i in range(lo, hi)]
    if name == "boxes":
        from tests.search.blackboxes import SERVER, landscape

        return [(f"box:{server}", landscape(server, noise=0.01)) for server in SERVER]
    raise SystemExit(f"unknown family or set {name!r}")


def _driven(strategy: str) -> bool:
    """Whether ``strategy`` is autotune's driver (which adds launches to the search's)."""
    return strategy == "autotune" or strategy.startswith("autotune[")


def _se(xs: list[float]) -> float:
    return statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0


def report(scores: list[Score], strategies: list[str]) -> str:
    rows = [
        "| family | strategy | studies | % of optimum: mean (SE) | lowest | at 95% | "
        "crashes per study (SE) | launches per study | wall (server-h) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    worst: dict[str, tuple[float, str]] = {}
    for family in dict.fromkeys(s.family for s in scores):
        for strat in strategies:
            mine = [s for s in scores if s.family == family and s.strategy == strat]
            if not mine:
                continue
            pct = [s.answer for s in mine]
            crashes = [float(s.crashes) for s in mine]
            mean = statistics.mean(pct)
            if strat not in worst or mean < worst[strat][0]:
                worst[strat] = (mean, family)
            rows.append(
                f"| {family} | {strat} | {len(mine)} | {mean:.1f} ({_se(pct):.1f}) | "
                f"{min(pct):.1f} | {sum(p >= 95 for p in pct)}/{len(mine)} | "
                f"{statistics.mean(crashes):.1f} ({_se(crashes):.1f}) | "
                f"{statistics.mean(s.launches for s in mine):.1f} | "
                f"{statistics.mean(s.wall for s in mine) / 3600:.1f} |"
            )
    rows.append("")
    for strat, (mean, family) in worst.items():
        rows.append(f"worst family for {strat}: {family} ({mean:.1f}%)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--families",
        default="tuning",
        help="comma list: family names, tuning, held_out, hand, boxes, verify",
    )
    ap.add_argument("--instances", default=f"0:{fam.INSTANCES}", help="A:B instances per family")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--strategies", default="autotune,random,tpe")
    ap.add_argument(
        "--launches",
        choices=("equal", "trials"),
        default="equal",
        help="equal: plain loops get as many launches as autotune's driver made on the same "
        "landscape and seed (its confirmation included); trials: --trials each",
    )
    ap.add_argument("--prune", action="store_true", help="3 windows per launch, to the pruner")
    ap.add_argument("--parallel", type=int, default=1, help="trials in flight (driver's)")
    ap.add_argument("--out", default=None, help="also append every study's score (JSON lines)")
    ap.add_argument("--read", default=None, help="report scores --out wrote instead of running")
    ap.add_argument("--trace", default=None, help="also append every study's launches (JSON lines)")
    ap.add_argument("--quick", action="store_true", help="CI: box, five, mixed7 x 2 seeds")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    from bench.search import harness

    if a.quick:
        a.families, a.instances, a.seeds, a.strategies = "quick", "0:1", 2, "autotune,random"
    if a.prune:
        harness.WINDOWS = 3
    harness.PARALLEL = a.parallel
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # commas inside brackets part knobs, not strategies: autotune[design=6,pairs=3],random
    strategies = re.split(r",(?![^\[]*\])", a.strategies)
    if a.read:
        scores = [
            Score(**json.loads(line)) for f in a.read.split(",") for line in open(f) if line.strip()
        ]
        print(report(scores, [s for s in strategies if any(x.strategy == s for x in scores)]))
        return 0
    for s in strategies:  # autotune[risk=4,design=8]: the search's sampler with these knobs
        if "[" in s and s not in STRATEGIES:
            kw = {
                k: float(v) if "." in v else int(v) if v.lstrip("-").isdigit() else v
                for k, v in (x.split("=") for x in s[s.index("[") + 1 : -1].split(","))
            }
            if s.startswith("plain["):
                STRATEGIES[s] = _plain(lambda seed, kw=kw: _search(seed=seed, **kw), attrs=True)
            else:
                STRATEGIES[s] = lambda land, seed, n, kw=kw: run_driver(land, seed, n, **kw)
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        print(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}", file=sys.stderr)
        return 2
    lo, hi = (int(x) for x in a.instances.split(":"))
    lands = [pair for name in a.families.split(",") for pair in landscapes(name, range(lo, hi))]
    # the driver's strategies first: the others are given as many launches as it made
    strategies.sort(key=lambda s: not _driven(s))
    scores: list[Score] = []
    start = time.monotonic()
    for family, land in lands:
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            made: int | None = None  # launches the first driver strategy made here
            for strat in strategies:  # alternating: each seed's studies run under one load
                n = a.trials
                if a.launches == "equal" and made is not None and not _driven(strat):
                    n = made
                t = time.monotonic()
                launches = STRATEGIES[strat](land, seed, n)
                s = score(land, family, strat, seed, launches, time.monotonic() - t)
                scores.append(s)
                if made is None and _driven(strat):
                    made = s.launches
                if a.trace:
                    with open(a.trace, "a") as f:
                        f.write(json.dumps(trace(land, s, launches), default=str) + "\n")
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(asdict(s)) + "\n")
                if a.verbose:
                    print(
                        f"{land.name:14s} {strat:10s} seed {seed}: {s.answer:5.1f}% "
                        f"{s.crashes} crashes ({s.seconds:.1f} s)",
                        flush=True,
                    )
    print(
        f"{len(lands)} landscapes x {a.seeds} seeds x {a.trials} launches of the search"
        f"{' (the others: as many as autotune made)' if a.launches == 'equal' else ''}"
        f"{', pruned' if a.prune else ''}{f', {a.parallel} in flight' if a.parallel > 1 else ''}"
        f"; in-process, simulated; {time.monotonic() - start:.0f} s"
    )
    print(report(scores, strategies))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
