"""What the trials say about the parameters: marginal effects and importances.

Why not Optuna's importances alone: fANOVA fits a random forest, which on a dozen trials fits
noise and can credit an inert parameter over the switch that matters (``bench/importances.py``,
figures in docs/benchmarks.md); and conditional parameters (``when:`` in the space) are absent
from part of the trials, which Optuna handles by dropping trials. So importances here are
computed over the parameters every ``ok`` trial holds, flagged as untrustworthy below
``MIN_TRUSTED_TRIALS``, and shown beside a plain per-parameter marginal effect (the spread of
mean values between a parameter's settings, over the trials where it is set): it needs no
model and says in the metric's own units what a setting is worth.

Both read single search launches (one value per trial): they say where to look, not what a
change is worth. What each change of the winner is worth, with an interval, is the ablation
(``study/ablation.py``), which the summary carries.
"""

from __future__ import annotations

import statistics
import warnings
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.core import fmt
from autotune.core.records import CRASHES, TrialRecord, gain_pct
from autotune.core.summary import StudyView
from autotune.models import Outcome

# Below this many ok trials, importances are shown with a warning not to trust them.
MIN_TRUSTED_TRIALS = 20
_NUMERIC_BINS = 3


@dataclass(frozen=True)
class Effect:
    """One parameter's marginal effect: mean value per setting, and the spread between them."""

    param: str
    means: dict[str, float]  # setting (or value range) -> mean of the metric over ok trials
    counts: dict[str, int]
    spread: float  # best mean - worst mean, in the metric's units (>= 0)
    best_setting: str


def _ok(view: StudyView) -> list[TrialRecord]:
    """The search's ok trials with a value (confirmation and ablation launches are not)."""
    return [
        r for r in view.trials if r.outcome == Outcome.OK and r.value is not None and r.searched
    ]


def _settings(values: list[Any]) -> list[tuple[str, set[Any]]]:
    """Groups of a parameter's values: each distinct value, or for many distinct numbers
    ``_NUMERIC_BINS`` runs of neighbouring values (labelled ``lo–hi``)."""
    distinct = sorted(set(values), key=lambda v: (str(type(v)), v))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    if not numeric or len(distinct) <= 4:
        return [(fmt.short(v), {v}) for v in distinct]
    size = -(-len(distinct) // _NUMERIC_BINS)  # ceiling division
    runs = [distinct[i : i + size] for i in range(0, len(distinct), size)]
    return [(f"{fmt.short(run[0])}–{fmt.short(run[-1])}", set(run)) for run in runs]


def marginal_effects(view: StudyView) -> list[Effect]:
    """Per parameter, the mean metric of ok trials for each setting; largest spread first.

    The sign of "best" follows the objective's direction. A parameter absent from a trial
    (conditional) is left out of that parameter's groups: its absence is the effect of the
    parameter that switched it off, not its own.
    """
    ok = _ok(view)
    if len(ok) < 2:
        return []
    names = sorted({k for r in ok for k in r.config})
    effects = []
    for name in names:
        settings = _settings([r.config[name] for r in ok if name in r.config])
        groups: dict[str, list[float]] = {}
        for r in ok:
            if name in r.config:
                key = next(label for label, members in settings if r.config[name] in members)
                groups.setdefault(key, []).append(float(r.value or 0.0))
        if len(groups) < 2:
            continue
        means = {k: statistics.fmean(v) for k, v in groups.items()}
        pick = max if view.record.direction == "maximize" else min
        effects.append(
            Effect(
                param=name,
                means=means,
                counts={k: len(v) for k, v in groups.items()},
                spread=max(means.values()) - min(means.values()),
                best_setting=pick(means, key=lambda k: means[k]),
            )
        )
    return sorted(effects, key=lambda e: -e.spread)


@dataclass(frozen=True)
class Move:
    """A search launch that changed one setting of the baseline and nothing else."""

    param: str
    before: Any  # the baseline's value, the engine's own choice included (None: unset)
    after: Any
    trial: int
    outcome: str
    value: float | None  # what it measured; a pruned launch: the mean of the windows it ran
    windows: int
    # against the baseline's median launch, positive is better: an order, never stated as a
    # gain (gains are stated between confirmed figures only)
    gain_pct: float | None
    cause: str | None
    along: dict[str, Any]  # settings that came with the change (``when``), as launched


def baseline_median(view: StudyView) -> tuple[float | None, int]:
    """The median of the baseline's search launches and how many it rests on (what the one-
    change moves are ordered against)."""
    values = [r.value for r in view.trials if r.baseline and r.searched and r.value is not None]
    return (statistics.median(values) if values else None), len(values)


_MOVED = frozenset({Outcome.OK, Outcome.SLO_VIOLATED, Outcome.PRUNED, *CRASHES})


def one_change_moves(view: StudyView) -> list[Move]:
    """What each one-setting change of the baseline did, best first, crashes last.

    A screen moves one setting at a time from the baseline: these launches answer "what does
    this knob do here" directly, pruned ones included (the largest harms are stopped after a
    window, and the marginal effects, which read whole launches, never show them). The
    baseline is its configuration plus what the engine chose for the settings it left unset
    (``TrialRecord.chosen``); a setting that comes or goes with the change (``when`` in the
    space) is part of it. Single launches: the baseline's launch-to-launch noise applies.
    """
    base = [r for r in view.trials if r.baseline and r.searched]
    if not base:
        return []
    ref = {**next((r.chosen for r in base if r.chosen), {}), **base[0].config}
    median, _ = baseline_median(view)
    conditional = {p.get("name") for p in view.record.space.get("parameters", []) if p.get("when")}
    metric, direction = view.record.metric, view.record.direction
    moves = []
    for r in view.trials:
        if r.baseline or not r.searched or r.skip is not None or r.outcome not in _MOVED:
            continue
        changed = [k for k in {*ref, *r.config} if ref.get(k) != r.config.get(k)]
        own = [k for k in changed if (k in ref and k in r.config) or k not in conditional]
        if len(own) != 1:
            continue
        window = [w[metric] for w in r.windows if metric in w]
        value = r.value
        if value is None and r.outcome is Outcome.PRUNED and window:
            value = statistics.fmean(window)
        moves.append(
            Move(
                param=own[0],
                before=ref.get(own[0]),
                after=r.config.get(own[0]),
                trial=r.number,
                outcome=r.label,
                value=value,
                windows=len(window),
                gain_pct=gain_pct(value, median, direction),
                cause=r.cause,
                along={k: r.config[k] for k in sorted(changed) if k != own[0] and k in r.config},
            )
        )
    return sorted(moves, key=lambda m: (m.gain_pct is None, -(m.gain_pct or 0.0), m.trial))


def ok_study(study: optuna.Study, view: StudyView) -> optuna.Study:
    """An in-memory copy of the study holding only its ok search trials, valued by the metric.

    Importances see measured values only: no crashed, skipped or infeasible trial, and no
    confirmation or ablation launch.
    """
    keep = {r.number: r.value for r in _ok(view)}
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line
    try:
        copy = optuna.create_study(
            direction="minimize" if view.record.direction == "minimize" else "maximize",
            study_name=f"{view.name}-ok",
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        value = keep.get(trial.number)
        if value is None:
            continue
        copy.add_trial(
            optuna.trial.create_trial(
                value=value, params=trial.params, distributions=trial.distributions
            )
        )
    return copy


def importances(study: optuna.Study, view: StudyView) -> dict[str, float]:
    """fANOVA importances over the parameters every ok trial holds (``{}`` if not computable)."""
    good = ok_study(study, view)
    trials = good.trials
    if len(trials) < 2:
        return {}
    shared = set.intersection(*(set(t.params) for t in trials))
    varying = sorted(n for n in shared if len({repr(t.params[n]) for t in trials}) > 1)
    if not varying:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optuna.importance.get_param_importances(good, params=varying)
    except (ValueError, RuntimeError, ZeroDivisionError):  # too few distinct points: none
        return {}


def trust_note(view: StudyView) -> str | None:
    """A warning when there are too few ok trials to trust importances, else None."""
    n = len(_ok(view))
    if n >= MIN_TRUSTED_TRIALS:
        return None
    return (
        f"only {n} successful trial(s): importances are rough at best below "
        f"{MIN_TRUSTED_TRIALS}; read the marginal effects (mean per setting) instead"
    )


__all__ = [
    "MIN_TRUSTED_TRIALS",
    "Effect",
    "Move",
    "baseline_median",
    "importances",
    "marginal_effects",
    "ok_study",
    "one_change_moves",
    "trust_note",
]
