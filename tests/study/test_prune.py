"""The incumbent pruner on a real in-memory Optuna study."""

from __future__ import annotations

import optuna
import pytest

from autotune.study.prune import IncumbentPruner, margin_for, saved_seconds


def _trial_with(values: list[float], pruner: optuna.pruners.BasePruner) -> bool:
    study = optuna.create_study(direction="maximize", pruner=pruner)
    trial = study.ask()
    for i, v in enumerate(values):
        trial.report(v, step=i)
    return bool(trial.should_prune())


def test_prunes_only_what_is_clearly_worse_than_the_incumbent() -> None:
    pruner = IncumbentPruner(lambda: 1000.0, "maximize", lambda: 0.3)
    assert _trial_with([600.0], pruner)
    assert not _trial_with([800.0], pruner)  # within launch noise of the incumbent
    assert not _trial_with([], pruner)  # no window yet


def test_nothing_is_pruned_without_a_noise_estimate_or_an_incumbent() -> None:
    assert not _trial_with([1.0], IncumbentPruner(lambda: 1000.0, "maximize", lambda: None))
    assert not _trial_with([1.0], IncumbentPruner(lambda: None, "maximize", lambda: 0.3))


def test_minimize_prunes_what_is_clearly_slower() -> None:
    pruner = IncumbentPruner(lambda: 100.0, "minimize", lambda: 0.3)
    study = optuna.create_study(direction="minimize", pruner=pruner)
    trial = study.ask()
    trial.report(160.0, step=0)
    assert trial.should_prune()


def test_margin_grows_with_launch_noise_and_has_a_floor() -> None:
    assert margin_for(None) is None
    assert margin_for(0.01) == pytest.approx(0.15)
    m8 = margin_for(0.08)
    assert m8 is not None and 0.25 < m8 < 0.35


def test_saved_seconds_counts_the_windows_not_measured() -> None:
    windows = [{"duration_s": 2.0}]
    assert saved_seconds(windows, planned=3, peak_window=False) == pytest.approx(4.0)
    assert saved_seconds(windows, planned=3, peak_window=True) == pytest.approx(6.0)
    assert saved_seconds([], planned=3, peak_window=True) == 0.0
