"""The evidence a winner stands on: every launch of every configuration, grouped.

A configuration may be launched several times (the baseline at the start, a repeated
proposal, confirmation rounds); each launch is one sample. The search's best is the
configuration with the best *median* over its launches, never one lucky launch; a
configuration that ever failed under the workload (crash, failed requests at peak load, a
missed SLO) cannot win. The gain of the winner and whether it beats the baseline beyond noise
come from study/noise.py: from the confirmation rounds when there were any (fresh launches,
free of the search's selection), else from the search's launches with the interval widened
for every configuration the best was picked from.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from autotune.core.records import TrialRecord
from autotune.models import Direction, Outcome
from autotune.space.schema import ConfigKey, config_key
from autotune.study.confirm import BASELINE, Confirmation
from autotune.study.noise import Gain, NoiseModel, gain

# Outcomes of a launch that disqualify its configuration from winning.
DISQUALIFYING = frozenset({Outcome.CRASHED, Outcome.TIMEOUT, Outcome.SLO_VIOLATED})


@dataclass
class Launches:
    """Every launch of one configuration (confirmation launches kept apart)."""

    config: dict[str, Any]
    baseline: bool = False
    trials: list[int] = field(default_factory=list)  # search launches that measured a value
    values: list[float] = field(default_factory=list)
    windows: list[list[float]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # trials that disqualify it
    confirm_values: list[float] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return float(statistics.median(self.values)) if self.values else None

    @property
    def eligible(self) -> bool:
        """Measured at least once and never failed under the workload."""
        return bool(self.values) and not self.failures

    @property
    def first_trial(self) -> int | None:
        return self.trials[0] if self.trials else None


def gather(trials: Iterable[TrialRecord], metric: str) -> dict[ConfigKey, Launches]:
    """Group launched trials by configuration, in trial order."""
    out: dict[ConfigKey, Launches] = {}
    for t in sorted(trials, key=lambda t: t.number):
        if t.outcome not in (*DISQUALIFYING, Outcome.OK) or t.ablation_round is not None:
            continue  # not launched, or an ablation launch: a reverted winner, not a candidate
        entry = out.setdefault(config_key(t.config), Launches(dict(t.config)))
        entry.baseline = entry.baseline or t.baseline
        if t.outcome in DISQUALIFYING or not t.survived_peak:
            entry.failures.append(t.number)
        value = t.metrics.get(metric)
        if t.outcome is not Outcome.OK or value is None or value <= 0:
            continue
        if t.confirm_round is not None:
            entry.confirm_values.append(float(value))
            continue
        entry.trials.append(t.number)
        entry.values.append(float(value))
        windows = [float(w[metric]) for w in t.windows if w.get(metric) is not None]
        if windows:
            entry.windows.append(windows)
    return out


def ranked(groups: dict[ConfigKey, Launches], direction: Direction) -> list[Launches]:
    """Eligible configurations, best median first (ties: the one launched first)."""
    sign = -1.0 if direction == "maximize" else 1.0
    ok = [g for g in groups.values() if g.eligible]
    return sorted(ok, key=lambda g: (sign * (g.median or 0.0), g.first_trial or 0))


def baseline_of(groups: dict[ConfigKey, Launches]) -> Launches | None:
    return next((g for g in groups.values() if g.baseline), None)


def noise_model(groups: dict[ConfigKey, Launches]) -> NoiseModel:
    """Launch and window spread over every configuration of the study."""
    per_config = []
    for g in groups.values():
        launches = g.windows if len(g.windows) == len(g.values) else [[v] for v in g.values]
        per_config.append(launches)
    return NoiseModel.from_launches(per_config)


@dataclass(frozen=True)
class Verdict:
    """What the study found: the configuration to export and how sure that is.

    ``winner``: the configuration to recommend (the baseline when nothing beat it beyond
    noise); ``best``: the best median of the search (may be a noise winner); ``gain`` of
    ``best`` over the baseline; ``confirmed``: the gain comes from confirmation rounds.
    """

    winner: Launches | None
    best: Launches | None
    baseline: Launches | None
    gain: Gain | None
    confirmed: bool
    noise: NoiseModel

    @property
    def beats_baseline(self) -> bool:
        return self.gain is not None and self.gain.significant

    def text(self) -> str:
        """One plain sentence about the gain."""
        if self.baseline is None:
            return "no baseline ran: no gain can be claimed"
        if not self.baseline.values:
            # It ran but gave no eligible value: a crash, failed requests, or an SLO missed
            # at every load a sweep tried (max_rate_under_slo = 0).
            return (
                "the baseline gave no valid measurement (it failed or missed the SLO): the "
                "best configuration stands, with no gain figure"
            )
        if self.gain is None:
            return "no configuration beat the baseline beyond noise (no other configuration ran)"
        how = "confirmed" if self.confirmed else "unconfirmed: from the search's launches"
        return f"{self.gain.sentence()} ({how})"


def verdict(
    trials: Iterable[TrialRecord],
    metric: str,
    direction: Direction,
    confirmation: Confirmation | None = None,
) -> Verdict:
    """Decide the winner of a study from its launches and its confirmation, if any."""
    groups = gather(trials, metric)
    order = ranked(groups, direction)
    base = baseline_of(groups)
    noise = noise_model(groups)
    others = [g for g in order if g is not base]
    best = others[0] if others else None
    if confirmation is not None and confirmation.best is not None:
        key = next((c for c in confirmation.candidates if c.key == confirmation.best), None)
        if key is not None:
            best = groups.get(config_key(key.config), best)
        g = confirmation.gain
        winner = best if confirmation.winner != BASELINE else base
        return Verdict(winner, best, base, g, True, noise)
    if confirmation is not None:  # every candidate failed its confirmation
        return Verdict(base, best, base, confirmation.gain, True, noise)
    if base is None or not base.values:  # nothing to compare with: the search's best stands
        return Verdict(best, best, base, None, False, noise)
    if best is None:
        return Verdict(base, best, base, None, False, noise)
    # The best was picked from every eligible configuration: widen the interval for all.
    g = gain(base.values, best.values, direction, candidates=max(1, len(others)))
    return Verdict(best if g.significant else base, best, base, g, False, noise)


__all__ = [
    "DISQUALIFYING",
    "Launches",
    "Verdict",
    "baseline_of",
    "gather",
    "noise_model",
    "ranked",
    "verdict",
]
