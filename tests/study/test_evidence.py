"""The winner from a study's launches: medians, disqualification, unconfirmed gains."""

from __future__ import annotations

from typing import Any

from autotune.core.records import TrialRecord
from autotune.models import Outcome
from autotune.study.confirm import BASELINE, Candidate, Confirmation, Launch, decide
from autotune.study.evidence import gather, noise_model, ranked, verdict

BASE = {"bs": 8}
A = {"bs": 16}
B = {"bs": 32}


def _t(
    number: int,
    config: dict[str, Any],
    value: float | None,
    *,
    baseline: bool = False,
    outcome: Outcome = Outcome.OK,
    **extra: Any,
) -> TrialRecord:
    metrics = {"tok_s": value} if value is not None else {}
    return TrialRecord(
        number=number,
        state="COMPLETE",
        outcome=outcome,
        config=config,
        metrics=metrics,
        baseline=baseline,
        **extra,
    )


def _study(a_values: list[float], base_values: list[float]) -> list[TrialRecord]:
    out = [_t(i, BASE, v, baseline=True) for i, v in enumerate(base_values)]
    n = len(out)
    out += [_t(n + i, A, v) for i, v in enumerate(a_values)]
    return out


def test_a_clear_winner_over_three_baseline_launches_is_claimed_unconfirmed() -> None:
    v = verdict(_study([300.0], [100.0, 104.0, 97.0]), "tok_s", "maximize")
    assert v.winner is not None and v.winner.config == A and v.beats_baseline
    assert not v.confirmed and "unconfirmed" in v.text()


def test_a_small_gain_within_launch_noise_keeps_the_baseline() -> None:
    v = verdict(_study([106.0], [100.0, 108.0, 93.0]), "tok_s", "maximize")
    assert v.winner is not None and v.winner.config == BASE
    assert v.best is not None and v.best.config == A and not v.beats_baseline
    assert v.text().startswith("no configuration beat the baseline beyond noise")


def test_failed_peak_load_or_a_crash_disqualifies_a_configuration() -> None:
    trials = _study([300.0], [100.0, 101.0, 99.0])
    trials.append(_t(9, B, 500.0, peak={"survived": False, "failed": 3}))
    trials.append(_t(10, A, None, outcome=Outcome.CRASHED))
    groups = gather(trials, "tok_s")
    assert [g.config for g in ranked(groups, "maximize")] == [BASE]
    v = verdict(trials, "tok_s", "maximize")
    assert v.winner is not None and v.winner.config == BASE and v.gain is None


def test_confirmation_launches_are_kept_apart_from_the_search() -> None:
    trials = _study([300.0], [100.0, 101.0, 99.0])
    trials.append(_t(9, A, 120.0, confirm_round=1, confirm_key="trial 3"))
    groups = gather(trials, "tok_s")
    a = next(g for g in groups.values() if g.config == A)
    assert a.values == [300.0] and a.confirm_values == [120.0]


def test_a_confirmation_record_decides_the_winner() -> None:
    trials = _study([300.0], [100.0, 101.0, 99.0])
    candidates = [Candidate(key="trial 3", config=A, trial=3)]
    record = Confirmation(direction="maximize", candidates=candidates)
    for r, (b, a) in enumerate([(100.0, 101.0), (99.0, 98.0), (101.0, 102.0)], start=1):
        record.launches += [
            Launch(round=r, key=BASELINE, value=b, server_s=1.0),
            Launch(round=r, key="trial 3", value=a, server_s=1.0),
        ]
    decide(record, ["trial 3"], 1, 0.95)
    v = verdict(trials, "tok_s", "maximize", record)
    assert v.confirmed and v.winner is not None and v.winner.config == BASE  # 300 was luck
    assert v.gain is not None and not v.gain.significant


def test_noise_model_pools_repeated_configurations() -> None:
    model = noise_model(gather(_study([300.0, 310.0], [100.0, 104.0, 97.0]), "tok_s"))
    assert model.launches == 5 and model.launch_cv is not None and 0.01 < model.launch_cv < 0.06


def test_a_baseline_that_ran_but_missed_the_slo_is_not_called_unmeasured() -> None:
    """The H200 load sweep: the defaults met the TTFT bound at no rate tried (slo_violated),
    and the verdict said "no measured baseline", as if it had never run."""
    trials = [_t(0, BASE, 0.0, baseline=True, outcome=Outcome.SLO_VIOLATED), _t(1, A, 45.3)]
    v = verdict(trials, "tok_s", "maximize")
    assert v.winner is not None and v.winner.config == A and v.gain is None
    assert v.text().startswith("the baseline gave no valid measurement")
    assert verdict([_t(1, A, 45.3)], "tok_s", "maximize").text().startswith("no baseline ran")
