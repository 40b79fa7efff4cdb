from __future__ import annotations

import optuna

from autotune.models import Cause, Failure, Metrics, Outcome, Phase, Stats, TrialResult
from autotune.study.outcome import CRASH, SLO, verdict

S = Stats(mean=10, p50=9, p90=15, p99=20)


def _ok(tok_s: float) -> TrialResult:
    m = Metrics(
        output_tok_s=tok_s,
        request_s=1,
        ttft_ms=S,
        itl_ms=S,
        e2e_ms=S,
        completed=8,
        output_tokens=512,
        duration_s=4,
    )
    return TrialResult(study="s", number=0, outcome=Outcome.OK, metrics=m)


def test_ok_is_complete_with_value_and_met_slo() -> None:
    v = verdict(_ok(90.0), "output_tok_s", {"ttft_p99_ms": 100})
    assert v.state == optuna.trial.TrialState.COMPLETE and v.value == 90.0
    assert v.outcome is Outcome.OK and v.constraints[SLO] <= 0


def test_missed_slo_keeps_value_but_is_infeasible() -> None:
    v = verdict(_ok(90.0), "output_tok_s", {"ttft_p99_ms": 10})
    assert v.outcome is Outcome.SLO_VIOLATED and v.value == 90.0 and v.constraints[SLO] == 1.0


def test_crash_is_pruned_and_infeasible_so_the_sampler_learns() -> None:
    r = TrialResult(
        study="s",
        number=1,
        outcome=Outcome.CRASHED,
        failure=Failure(cause=Cause.CUDA_OOM, phase=Phase.LOAD),
    )
    v = verdict(r, "output_tok_s", {})
    assert v.state == optuna.trial.TrialState.PRUNED and v.value is None
    assert v.constraints == {CRASH: 1.0} and v.outcome is Outcome.CRASHED


def _crash_share_after_10(sampler: optuna.samplers.BaseSampler) -> float:
    """Half the space crashes (two of four backends); tell crashes the way the driver does."""
    from autotune.study.outcome import CRASH as C

    study = optuna.create_study(direction="maximize", sampler=sampler)
    late = 0
    for i in range(40):
        t = study.ask()
        backend = t.suggest_categorical("backend", ["a", "b", "c", "d"])
        x = t.suggest_float("x", 0, 1)
        y = t.suggest_int("y", 1, 8)
        if backend in ("c", "d"):
            t.set_constraint(C, 1.0)
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
            late += i >= 10
        else:
            t.set_constraint(C, 0.0)
            study.tell(t, 1 + x * y + (backend == "b"))
    return late / 30


def test_crashed_trials_steer_tpe_away_from_the_crashing_region() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seeds = range(3)
    tpe = sum(
        _crash_share_after_10(optuna.samplers.TPESampler(seed=s, n_startup_trials=5)) for s in seeds
    ) / len(seeds)
    rnd = sum(_crash_share_after_10(optuna.samplers.RandomSampler(seed=s)) for s in seeds) / len(
        seeds
    )
    assert rnd > 0.4 and tpe < 0.6 * rnd, (tpe, rnd)
