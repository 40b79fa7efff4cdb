"""What the trials say about the parameters: importances, marginal effects, the ablation path.

Why not Optuna's importances alone: fANOVA fits a random forest, which on a dozen trials fits
noise. On a quickstart-shaped study of 12 ok trials where ``continuous_batching`` alone makes
the 4x difference, fANOVA rated it 0.07 and gave 0.59 to ``mem``, which does nothing; and
conditional parameters (``when:`` in the space) are absent from part of the trials, which
Optuna handles by dropping trials. So importances here are computed over the parameters every
``ok`` trial holds, flagged as untrustworthy below ``MIN_TRUSTED_TRIALS``, and shown beside a
plain per-parameter marginal effect (the spread of mean values between a parameter's
settings, over the trials where it is set): it needs no model, says in the metric's own units
what a setting is worth, and rated the same switch first.
"""

from __future__ import annotations

import statistics
import warnings
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.core.records import TrialRecord as TrialRow
from autotune.core.records import gain_pct
from autotune.models import Outcome
from autotune.report.tables import is_simulated, objective, rows
from autotune.study.ledger import Ledger, decode_trial

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


@dataclass(frozen=True)
class Step:
    """One change on the path from the baseline to the best configuration."""

    param: str
    before: Any
    after: Any
    effect: float | None  # estimated change of the metric (positive: better), None unknown
    measured: float | None  # value of a trial that is the baseline with only this change
    measured_trial: int | None
    conditional: bool = False  # set on one side only: it comes with another change


def _ok(study: optuna.Study) -> list[TrialRow]:
    return [r for r in rows(study) if r.outcome == "ok" and r.value is not None]


def _label(value: Any) -> str:
    from autotune.core.fmt import short

    return short(value)


def _settings(values: list[Any]) -> list[tuple[str, set[Any]]]:
    """Groups of a parameter's values: each distinct value, or for many distinct numbers
    ``_NUMERIC_BINS`` runs of neighbouring values (labelled ``lo–hi``)."""
    distinct = sorted(set(values), key=lambda v: (str(type(v)), v))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    if not numeric or len(distinct) <= 4:
        return [(_label(v), {v}) for v in distinct]
    size = -(-len(distinct) // _NUMERIC_BINS)  # ceiling division
    runs = [distinct[i : i + size] for i in range(0, len(distinct), size)]
    return [(f"{_label(run[0])}–{_label(run[-1])}", set(run)) for run in runs]


def marginal_effects(study: optuna.Study) -> list[Effect]:
    """Per parameter, the mean metric of ok trials for each setting; largest spread first.

    The sign of "best" follows the objective's direction. A parameter absent from a trial
    (conditional) is left out of that parameter's groups: its absence is the effect of the
    parameter that switched it off, not its own.
    """
    _metric, direction = objective(study)
    ok = _ok(study)
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
        pick = max if direction == "maximize" else min
        best_setting = pick(means, key=lambda k: means[k])
        effects.append(
            Effect(
                param=name,
                means=means,
                counts={k: len(v) for k, v in groups.items()},
                spread=max(means.values()) - min(means.values()),
                best_setting=best_setting,
            )
        )
    return sorted(effects, key=lambda e: -e.spread)


def importances(study: optuna.Study) -> dict[str, float]:
    """fANOVA importances over the parameters every ok trial holds (``{}`` if not computable)."""
    good = ok_study(study)
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


def trust_note(study: optuna.Study) -> str | None:
    """A warning when there are too few ok trials to trust importances, else None."""
    n = len(_ok(study))
    if n >= MIN_TRUSTED_TRIALS:
        return None
    return (
        f"only {n} successful trial(s): importances are rough at best below "
        f"{MIN_TRUSTED_TRIALS}; read the marginal effects (mean per setting) instead"
    )


def top_configurations(study: optuna.Study, k: int = 10) -> list[TrialRow]:
    """The ``k`` best configurations by the median of their launches, best first
    (``Ledger.ranked``: a configuration launched again is one row, its ``value`` that median;
    whether the best beats the baseline beyond noise is the study's verdict)."""
    return Ledger(study).ranked(k, answer_first=False)


def ablation_path(study: optuna.Study) -> list[Step]:
    """The changes from the baseline to the best configuration, the most useful first.

    No new trial is run: a change's effect is what was measured for the baseline with only
    that change when such a trial exists, else estimated from the marginal effect (mean of
    ok trials with the best's setting minus mean with the baseline's). Empty when there is no
    ok baseline or best.
    """
    _metric, direction = objective(study)
    ok = _ok(study)
    base = next((r for r in ok if r.baseline), None)
    best = top_configurations(study, 1)
    if base is None or not best or best[0].number == base.number:
        return []
    top = best[0]
    effects = {e.param: e for e in marginal_effects(study)}
    sign = 1.0 if direction == "maximize" else -1.0
    steps = []
    for name in sorted(set(base.config) | set(top.config)):
        before, after = base.config.get(name), top.config.get(name)
        if before == after:
            continue
        follows = _followers(ok, name)
        single = next(
            (r for r in ok if _only_change(base.config, r.config, name, after, follows)), None
        )
        measured = single.value if single is not None else None
        effect: float | None = None
        if measured is not None and base.value is not None:
            effect = sign * (measured - base.value)
        elif name in effects:
            e = effects[name]
            key_after = _key_of(e, after)
            key_before = _key_of(e, before)
            if key_after in e.means and key_before in e.means:
                effect = sign * (e.means[key_after] - e.means[key_before])
        conditional = before is None or after is None
        if conditional and single is None:
            effect = None  # set on one side only: no like-for-like comparison
        number = single.number if single is not None else None
        steps.append(Step(name, before, after, effect, measured, number, conditional))
    return sorted(steps, key=lambda s: -(s.effect if s.effect is not None else float("-inf")))


def _followers(ok: list[TrialRow], name: str) -> set[str]:
    """Parameters whose presence is decided by ``name``'s value in every ok trial that
    holds it (``cb_block_size`` follows ``continuous_batching``): its conditional ones."""
    out: set[str] = set()
    values = [repr(r.config[name]) for r in ok if name in r.config]
    if len(set(values)) > 4 or len(values) <= len(set(values)):
        return out  # a switch has few settings, each seen more than once overall
    others = {k for r in ok for k in r.config} - {name}
    for other in others:
        seen: dict[str, set[bool]] = {}
        for r in ok:
            if name in r.config:
                seen.setdefault(repr(r.config[name]), set()).add(other in r.config)
        presence = list(seen.values())
        if len(seen) > 1 and all(len(p) == 1 for p in presence) and len(set().union(*presence)) > 1:
            out.add(other)
    return out


def _only_change(
    base: dict[str, Any], other: dict[str, Any], name: str, value: Any, follows: set[str]
) -> bool:
    """Whether ``other`` is ``base`` with only ``name`` set to ``value`` (and the parameters
    that follow ``name`` switched on or off with it)."""
    if other.get(name) != value or base.get(name) == value:
        return False
    keys = (set(base) | set(other)) - {name} - follows
    return all(base.get(k) == other.get(k) for k in keys)


def _key_of(effect: Effect, value: Any) -> str:
    if value is None:
        return "(unset)"
    label = _label(value)
    if label in effect.means:
        return label
    for key in effect.means:  # a value range "lo–hi"
        lo, sep, hi = key.partition("–")
        if sep:
            try:
                if float(lo) <= float(value) <= float(hi):
                    return key
            except (TypeError, ValueError):  # a categorical label, not a numeric range
                continue
    return label


def ok_study(study: optuna.Study) -> optuna.Study:
    """An in-memory copy of the study holding only its ``ok`` trials, valued by the metric.

    Importances and the optimization history see measured values only: no crashed, skipped
    or infeasible trial, and no repeat of an earlier measurement.
    """
    metric, direction = objective(study)
    sim = is_simulated(study)
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line
    try:
        copy = optuna.create_study(
            direction="minimize" if direction == "minimize" else "maximize",
            study_name=f"{study.study_name}-ok",
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        r = decode_trial(trial, metric, study_simulated=sim)
        if r.outcome != Outcome.OK or r.value is None:
            continue
        copy.add_trial(
            optuna.trial.create_trial(
                value=r.value,
                params=trial.params,
                distributions=trial.distributions,
            )
        )
    return copy


def gain_of(value: float | None, study: optuna.Study) -> float | None:
    """``value``'s gain over the baseline in percent (positive is better), or None."""
    _metric, direction = objective(study)
    # Against the median of the baseline's launches, as the study's own gain is.
    return gain_pct(value, Ledger(study).summary().baseline_value, direction)
