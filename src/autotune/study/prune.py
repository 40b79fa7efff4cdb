"""Early stopping: a trial whose first windows cannot beat the incumbent stops there.

Every launched server is measured in several windows (node/runner.py); each window's value is
reported to Optuna as an intermediate value as soon as it is measured. ``IncumbentPruner``
stops the trial when the median of its windows so far is worse than the incumbent (the best
median of the study's eligible configurations) by more than launch noise could explain, so
the rest of its windows and its peak window are not paid for. The margin is wide on purpose:
pruning a configuration that was only unlucky loses it for good, while letting a bad one run
two more windows costs seconds. Without a launch-noise estimate (no configuration launched
twice yet; the baseline's repeated launches give one) nothing is pruned: "cannot beat" needs
to know how far a launch can stray.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import optuna

from autotune.models import Direction

# This many standard deviations of the difference of two launches.
SIGMAS = 3.0
# Never prune what is less than this much worse than the incumbent.
MIN_MARGIN = 0.15


def margin_for(launch_cv: float | None) -> float | None:
    """How much worse than the incumbent (relative) a window median must be to prune.

    None (never prune) while the launch noise is unknown.
    """
    if launch_cv is None:
        return None
    return max(MIN_MARGIN, -math.expm1(-SIGMAS * math.sqrt(2.0) * launch_cv))


class IncumbentPruner(optuna.pruners.BasePruner):
    """Prunes a trial whose windows so far are clearly worse than the incumbent.

    Args:
        incumbent: returns the incumbent's value (None: nothing to compare with yet).
        direction: the objective's direction.
        margin: returns the relative margin (see ``margin_for``); None: do not prune.
        min_windows: windows a trial measures before it can be pruned.
    """

    def __init__(
        self,
        incumbent: Callable[[], float | None],
        direction: Direction,
        margin: Callable[[], float | None],
        min_windows: int = 1,
    ) -> None:
        self.incumbent = incumbent
        self.direction = direction
        self.margin = margin
        self.min_windows = min_windows

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        values = list(trial.intermediate_values.values())
        if len(values) < self.min_windows:
            return False
        best = self.incumbent()
        if best is None or best <= 0:
            return False
        m = self.margin()
        if m is None:
            return False
        median = statistics.median(values)
        if self.direction == "maximize":
            return median < best * (1.0 - m)
        return median > best / (1.0 - m)


def saved_seconds(windows: list[dict[str, float]], planned: int, peak_window: bool) -> float:
    """Server time a pruned trial did not spend: its unmeasured windows at their mean length."""
    durations = [w["duration_s"] for w in windows if "duration_s" in w]
    if not durations:
        return 0.0
    left = max(0, planned - len(windows)) + (1 if peak_window else 0)
    return left * statistics.fmean(durations)


__all__ = ["IncumbentPruner", "margin_for", "saved_seconds"]
