"""The stand-in's verify space (search_spaces/verify.yaml) as a landscape, in-process.

Each configuration is rendered and turned into the stand-in server's command exactly as a
simulated study would launch it; instead of starting ``python -m autotune.sim``, the same
argument parser, start-up plan and performance model are called here. A crash is classified
by the node's own classifier over the log lines the plan would print, with the SGLang rules;
start-up seconds are the plan's realistic ones. The optimum is estimated (no grid fits 13
parameters): the best of 3000 random configurations, polished one parameter at a time.
"""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path
from typing import Any

from tests.search.landscapes import OK_S, Landscape, Point

ROOT = Path(__file__).resolve().parents[2]
SPACE = ROOT / "search_spaces" / "verify.yaml"


@cache
def _setup() -> tuple[Any, Any]:
    from autotune.engines import get_engine
    from autotune.space.load import load

    spec = load(SPACE)
    return spec, get_engine(spec.engine, simulate=True)


def evaluate(config: dict[str, Any], rng: random.Random | None) -> Point:
    from autotune.models import Phase
    from autotune.node.failures import classify
    from autotune.sim.args import build_parser, to_launch
    from autotune.sim.model import aggregate_tok_s
    from autotune.sim.nccl import read_nccl_env
    from autotune.sim.plan import plan_startup
    from autotune.sim.profiles import profile_from_env
    from autotune.space.render import render

    spec, engine = _setup()
    args, env = render(spec, config)
    argv, env = engine.command(spec.model, args, env)
    sim_args = argv[argv.index("autotune.sim") + 1 :]
    sim_args = [a.replace("{port}", "30000").replace("{host}", "127.0.0.1") for a in sim_args]
    rules = engine.failure_rules()

    def crashed(lines: list[str], phase: Phase, seconds: float) -> Point:
        f = classify(lines, rules, phase=phase, exit_code=-9, argv=argv, env=env)
        return Point(None, None, f.cause.value, f.phase.value, f.message, seconds)

    try:
        ns = build_parser().parse_args(sim_args)
    except SystemExit:
        return crashed(["error: unrecognized arguments"], Phase.LAUNCH, 20.0)
    prof = profile_from_env(env)
    nccl, nccl_error = read_nccl_env(env)
    try:
        launch = to_launch(ns, env, nccl)
    except (AssertionError, ValueError) as exc:
        kind = "AssertionError" if isinstance(exc, AssertionError) else "ValueError"
        return crashed([f"{kind}: {exc}"], Phase.LAUNCH, 20.0)
    plan = plan_startup(launch, prof, scale=1.0, nccl_error=nccl_error)
    seconds = sum(e.wait_s for e in plan.events)
    if plan.crash is not None:
        return crashed([e.text for e in plan.events], Phase(plan.crash.phase), seconds)
    truth = aggregate_tok_s(spec.workload.concurrency, launch.config, prof)
    noise = 1.0 if rng is None else min(max(math.exp(rng.gauss(0.0, 0.02)), 0.95), 1.05)
    return Point(truth * noise, truth, seconds=seconds + OK_S)


def _landscape() -> Landscape:
    import yaml

    data = yaml.safe_load(SPACE.read_text())
    land = Landscape(
        "verify",
        "search_spaces/verify.yaml through the stand-in's model",
        data["parameters"],
        evaluate,
        data["baseline"],
        held_out=True,
    )
    land.space = lambda trials: {**data, "budget": {"trials": trials}}  # type: ignore[method-assign]
    land.optimum = lambda: _optimum()  # type: ignore[method-assign]
    return land


@cache
def _optimum() -> float:
    import optuna

    from autotune.space.suggest import suggest

    spec, _ = _setup()
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))
    best, best_cfg = 0.0, None
    for _ in range(3000):
        trial = study.ask()
        config = suggest(trial, spec)
        v = evaluate(config, None).truth
        study.tell(trial, v or 0.0)
        if v is not None and v > best:
            best, best_cfg = v, config
    assert best_cfg is not None
    from tests.search.landscapes import levels

    for _ in range(2):  # polish: one parameter at a time over its levels
        for p in data_parameters():
            if p["name"] not in best_cfg:
                continue
            for v in levels(p, 9):
                c = {**best_cfg, p["name"]: v}
                t = evaluate(c, None).truth
                if t is not None and t > best:
                    best, best_cfg = t, c
    return best


def data_parameters() -> list[dict[str, Any]]:
    import yaml

    return list(yaml.safe_load(SPACE.read_text())["parameters"])


VERIFY = _landscape()
