"""What a study found, read through the study's ledger: rows, best, baseline, summary, plots.

Optuna's own state is not enough to tell results apart (a crashed trial is told PRUNED with
a violated constraint so that the sampler learns), so every reader here goes by the trial's
outcome as the ledger (``study/ledger.py``) records it, and only ``ok`` trials count as
results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from autotune.core import fmt
from autotune.core.records import StudySummary, TrialRecord, gain_pct
from autotune.study.ledger import Ledger

SIMULATED_LABEL = "(simulated)"

__all__ = [
    "SIMULATED_LABEL",
    "TrialRow",
    "baseline",
    "best",
    "FailureGroup",
    "failure_groups",
    "failure_table",
    "gain_pct",
    "headline",
    "is_simulated",
    "objective",
    "pareto_table",
    "rows",
    "status_data",
    "status_table",
    "summary",
]

# One trial as people see it: the ledger's record (the name earlier versions used).
TrialRow = TrialRecord


def objective(study: optuna.Study) -> tuple[str, str]:
    """The study's objective ``(metric, direction)``."""
    record = Ledger(study).study_record()
    return record.metric, record.direction


def is_simulated(study: optuna.Study) -> bool:
    """Whether the study ran against the stand-in server."""
    return Ledger(study).study_record().simulated


def rows(study: optuna.Study) -> list[TrialRecord]:
    """Every trial of the study, in trial-number order."""
    return Ledger(study).trials()


def best(study: optuna.Study) -> TrialRecord | None:
    """The best ``ok`` trial by the objective (ties: lower number), or None."""
    return Ledger(study).best()


def baseline(study: optuna.Study) -> TrialRecord | None:
    """The baseline trial (the first ``ok`` one if it was run more than once), or None."""
    return Ledger(study).baseline()


def summary(study: optuna.Study) -> StudySummary:
    """Counts and headline numbers of a study (also what ``Tracker.finish`` receives)."""
    return Ledger(study).summary()


def status_data(study: optuna.Study) -> dict[str, Any]:
    """``{"summary": ..., "trials": [record as a dict, ...]}``, JSON-safe (``status --json``)."""
    ledger = Ledger(study)
    trials = ledger.trials()
    return {
        "summary": ledger.summary(trials).model_dump(mode="json"),
        "trials": [r.to_json() for r in trials],
    }


def _fmt(value: float | None) -> str:
    return fmt.metric(value)


def headline(study: optuna.Study) -> str:
    """One line: best value vs baseline, trial counts, and the simulated warning."""
    s = summary(study)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(s.outcomes.items(), key=lambda kv: -kv[1]))
    if s.best_trial is None:
        text = f"{s.study}: no successful trial yet"
    else:
        text = f"{s.study}: best {s.metric} {_fmt(s.best_value)} (trial {s.best_trial})"
        if s.baseline_value is not None:
            text += f" vs baseline {_fmt(s.baseline_value)}"
        text += f"; {s.verdict}"
    text += f"; {s.trials} trials" + (f": {counts}" if counts else "")
    if s.simulated:
        text += " [SIMULATED: stand-in server, not real hardware]"
    return text


_OUTCOME_STYLE = {
    "ok": "green",
    "slo_violated": "yellow",
    "crashed": "red",
    "timeout": "red",
    "pruned": "dim",
    "infra": "magenta",
    "running": "cyan",
    "error": "bold red",
}


def _config_text(config: dict[str, Any]) -> str:
    # Whole, wrapped at spaces: a configuration is never cut off.
    return fmt.config_text(config)


# Below this width the configuration gets its own indented line under each trial.
NARROW = 110


def status_table(study: optuna.Study, width: int | None = None) -> RenderableType:
    """Every trial with its outcome, value and cause; the best one is marked with ``*``.

    Configurations are shown whole, wrapped at spaces; on a terminal narrower than
    ``NARROW`` columns each goes on its own indented line under its trial.
    """
    metric, direction = objective(study)
    ledger = Ledger(study)
    all_rows = ledger.trials()
    top = ledger.best(all_rows)
    title = f"{study.study_name}: {metric} ({direction})"
    if is_simulated(study):
        title += f" {SIMULATED_LABEL.upper()}"
    if width is not None and width < NARROW:
        return _narrow(all_rows, top, title, metric)
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column(metric, justify="right", no_wrap=True)
    table.add_column("cause", overflow="fold")
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("config", min_width=24, ratio=1)
    for r in all_rows:
        mark = "*" if top is not None and r.number == top.number else ""
        mark += " (baseline)" if r.baseline else ""
        number = Text(f"{r.number}{mark}", style="bold" if mark.startswith("*") else "")
        outcome = Text(r.label, style=_OUTCOME_STYLE.get(r.label, ""))
        # A skip's reason is long: its kind here, the reason in `status --trial N`.
        cause = r.cause or (r.skip.kind.value if r.skip is not None else "")
        duration = fmt.seconds(r.duration_s)
        config = Text(_config_text(r.config))
        table.add_row(number, outcome, _fmt(r.value), cause, duration, config)
    return table


def pareto_table(study: optuna.Study, latency: str | None = None) -> Table | None:
    """The Pareto front: the configurations no other one beats on every objective.

    ``latency``: a metric (smaller is better) to weigh the objective against; None: the
    study's own objectives (a multi-objective study). None when no eligible configuration
    measured them all.
    """
    from autotune.study.pareto import front

    ledger = Ledger(study)
    record = ledger.study_record()
    objectives = record.objective_pairs()
    if latency is not None:
        objectives = [objectives[0], (latency, "minimize")]
    points = front(ledger.trials(), objectives)
    if not points:
        return None
    title = f"{study.study_name}: Pareto front, " + " vs ".join(f"{m} ({d})" for m, d in objectives)
    if is_simulated(study):
        title += f" {SIMULATED_LABEL.upper()}"
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    for m, _ in objectives:
        table.add_column(m, justify="right")
    table.add_column("launches", justify="right")
    table.add_column("config", overflow="fold", min_width=24)
    for p in points:
        mark = " (baseline)" if p.baseline else ""
        table.add_row(
            f"{p.trial}{mark}",
            *(_fmt(p.values[m]) for m, _ in objectives),
            str(p.launches),
            _config_text(dict(p.config)),
        )
    return table


def _narrow(
    all_rows: list[TrialRecord], top: TrialRecord | None, title: str, metric: str
) -> RenderableType:
    """One block per trial: a short line, then its whole configuration, indented."""
    lines: list[RenderableType] = [Text(title, style="bold")]
    lines.append(
        Text(f"{'#':>4}{'':6} {'outcome':<12} {metric:>14} {'time':>6}  cause", style="bold")
    )
    for r in all_rows:
        mark = "*" if top is not None and r.number == top.number else " "
        base = " base" if r.baseline else ""
        head = Text(f"{r.number:>4}{mark}{base:<5} ")
        head.append(f"{r.label:<12}", style=_OUTCOME_STYLE.get(r.label, ""))
        cause = r.cause or (r.skip.kind.value if r.skip is not None else "")
        head.append(f" {_fmt(r.value):>14} {fmt.seconds(r.duration_s):>6}  {cause}")
        lines.append(head)
        if r.config:
            lines.append(Padding(Text(_config_text(r.config), style="dim"), (0, 0, 0, 6)))
    return Group(*lines)


@dataclass(frozen=True)
class FailureGroup:
    """Failures of one cause in one phase: how many, which trials, every distinct hint."""

    cause: str
    phase: str
    trials: list[int]
    hints: list[str]
    example: str


def failure_groups(study: optuna.Study) -> list[FailureGroup]:
    """Launched-trial failures grouped by cause and phase, most frequent first.

    Skipped proposals (dead ends, constraints) are not failures: nothing was launched.
    """
    groups: dict[tuple[str, str], list[TrialRecord]] = {}
    for r in rows(study):
        if r.cause and not r.skipped:
            groups.setdefault((r.cause, r.phase or "-"), []).append(r)
    out = []
    for (cause, phase), members in groups.items():
        hints = list(dict.fromkeys(m.hint for m in members if m.hint))
        first = next((m for m in members if m.message), members[0])
        example = f"#{first.number}" + (f": {first.message}" if first.message else "")
        out.append(FailureGroup(cause, phase, [m.number for m in members], hints, example))
    return sorted(out, key=lambda g: (-len(g.trials), g.cause, g.phase))


def _trial_list(numbers: list[int], limit: int = 8) -> str:
    shown = ", ".join(f"#{n}" for n in numbers[:limit])
    return shown + (f" (+{len(numbers) - limit} more)" if len(numbers) > limit else "")


def failure_table(study: optuna.Study) -> Table | None:
    """Failures by cause and phase: count, trials, every hint, an example (None: no failures)."""
    groups = failure_groups(study)
    if not groups:
        return None
    title = f"{study.study_name}: failures"
    if is_simulated(study):
        title += f" {SIMULATED_LABEL.upper()}"
    table = Table(title=title, title_justify="left")
    table.add_column("cause", overflow="fold")
    table.add_column("phase", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column("trials", overflow="fold")
    table.add_column("hint", overflow="fold", ratio=2)
    for g in groups:
        hint = " / ".join(g.hints) or g.example
        table.add_row(g.cause, g.phase, str(len(g.trials)), _trial_list(g.trials), hint)
    return table
