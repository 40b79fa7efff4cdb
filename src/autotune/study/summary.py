"""The study's summary, built once from what it keeps: every figure a reader will show.

``summarize`` turns the study's record, its trials and its confirmation into one
``core.summary.StudySummary``. Each configuration gets its *search* figure (the median of the
search's launches of it) and, when it was confirmed, its *confirmed* figure (the median of its
interleaved confirmation launches) with its gain over the baseline's confirmed figure and the
interval of that gain. A search figure is never set against a confirmed one: the report,
``autotune status`` and MLflow read these figures and compute none of their own.
"""

from __future__ import annotations

import statistics
from collections import Counter

from autotune.core.records import Direction, StudyRecord, TrialRecord
from autotune.core.summary import (
    Ablation,
    Configuration,
    Figure,
    FigureKind,
    ParetoPoint,
    StudySummary,
)
from autotune.space.schema import config_key
from autotune.study import evidence
from autotune.study.confirm import BASELINE, Confirmation
from autotune.study.noise import gain
from autotune.study.pareto import front

# Configurations a summary lists, the answer first.
TOP = 10


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _search_figure(group: evidence.Launches) -> Figure | None:
    if not group.values:
        return None
    return Figure(value=_median(group.values), kind=FigureKind.SEARCH, launches=len(group.values))


def _confirmed(
    group: evidence.Launches, confirmation: Confirmation | None
) -> tuple[str | None, list[float]]:
    """The confirmation's key for ``group`` and the values its launches measured."""
    if confirmation is None:
        return None, []
    if group.baseline:
        return BASELINE, confirmation.values(BASELINE)
    key = config_key(group.config)
    for c in confirmation.candidates:
        if config_key(c.config) == key:
            return c.key, confirmation.values(c.key)
    return None, []


def _status(confirmation: Confirmation | None, key: str | None) -> str:
    if confirmation is None or key is None:
        return ""
    for row_key, _n, _median_value, status in confirmation.table_rows():
        if row_key == key:
            if not status and key == confirmation.best:
                return "the best confirmed median, not beyond noise"
            return status
    return ""


def configuration(
    group: evidence.Launches, confirmation: Confirmation | None, direction: Direction
) -> Configuration:
    """One configuration's figures, and its confirmed gain over the confirmed baseline."""
    key, values = _confirmed(group, confirmation)
    confirmed = (
        Figure(value=_median(values), kind=FigureKind.CONFIRMED, launches=len(values))
        if values
        else None
    )
    g = None
    base = confirmation.values(BASELINE) if confirmation is not None else []
    if confirmation is not None and key is not None and key != BASELINE and values and base:
        if key == confirmation.best and confirmation.gain is not None:
            g = confirmation.gain  # the verdict's own figure, not computed twice
        else:  # at the level the candidates were compared at (Bonferroni over them)
            k = max(1, len(confirmation.candidates))
            g = gain(base, values, direction, candidates=k)
    return Configuration(
        trial=group.first_trial if group.first_trial is not None else -1,
        config=dict(group.config),
        baseline=group.baseline,
        search=_search_figure(group),
        confirmed=confirmed,
        gain=g,
        status=_status(confirmation, key),
    )


def summarize(
    record: StudyRecord, trials: list[TrialRecord], confirmation: Confirmation | None
) -> StudySummary:
    """Counts and every headline figure of the study, with the gain and its interval."""
    v = evidence.verdict(trials, record.metric, record.direction, confirmation)
    groups = evidence.gather(trials, record.metric)

    made: dict[int, Configuration] = {}  # by first trial: each configuration built once

    def figures(group: evidence.Launches | None) -> Configuration | None:
        if group is None or group.first_trial is None:
            return None
        if group.first_trial not in made:
            made[group.first_trial] = configuration(group, confirmation, record.direction)
        return made[group.first_trial]

    answer = figures(v.winner)
    baseline = figures(v.baseline)
    listed = [answer] if answer is not None else []
    for g in evidence.ranked(groups, record.direction):
        if len(listed) >= TOP:
            break
        c = figures(g)
        if c is not None and all(x.trial != c.trial for x in listed):
            listed.append(c)
    kind = FigureKind.CONFIRMED if v.confirmed else FigureKind.SEARCH

    def headline(c: Configuration | None) -> float | None:
        """The figure of the verdict's kind (the other kind only where that one is missing)."""
        if c is None:
            return None
        f = (c.confirmed if kind is FigureKind.CONFIRMED else c.search) or c.figure
        return f.value if f is not None else None

    marked = [t for t in trials if t.baseline]
    first_baseline = next((t for t in marked if t.outcome == "ok"), marked[0] if marked else None)
    return StudySummary(
        study=record.name,
        metric=record.metric,
        direction=record.direction,
        trials=len(trials),
        outcomes=dict(Counter(t.label for t in trials)),
        causes=dict(Counter(t.cause for t in trials if t.cause)),
        simulated=record.simulated,
        answer=answer,
        baseline=baseline,
        configurations=listed,
        best_trial=answer.trial if answer else None,
        best_value=headline(answer) if answer else None,
        best_config=dict(answer.config) if answer else None,
        baseline_trial=first_baseline.number if first_baseline is not None else None,
        baseline_value=headline(baseline),
        gain_pct=v.gain.pct if v.gain is not None else None,
        gain=v.gain,
        beats_baseline=v.beats_baseline,
        verdict=v.text(),
        confirmed=v.confirmed,
        confirmation=confirmation.summary() if confirmation is not None else None,
        search_best_trial=v.best.first_trial if v.best is not None else None,
        noise=v.noise.record(),
        ablation=Ablation.model_validate(record.ablation) if record.ablation else None,
        pruned_saved_s=round(sum(t.pruned_saved_s or 0.0 for t in trials), 3),
        objectives=list(record.objectives),
        pareto=pareto(record, trials) if len(record.objectives) > 1 else None,
    )


def pareto(record: StudyRecord, trials: list[TrialRecord]) -> list[ParetoPoint]:
    """The Pareto front over the study's objectives (study/pareto.py)."""
    return [
        ParetoPoint(trial=p.trial, values=p.values, launches=p.launches, baseline=p.baseline)
        for p in front(trials, record.objective_pairs())
    ]


__all__ = ["TOP", "configuration", "pareto", "summarize"]
