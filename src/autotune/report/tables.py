"""The terminal tables of a study: every trial, the failures, the Pareto front, one headline.

Each reads a ``StudyView`` (``Ledger.view()``: the study read once) and computes no figure of
its own: values come from the trials' records and the summary's figures. Optuna's own state is
not enough to tell results apart (a crashed trial is told PRUNED with a violated constraint so
that the sampler learns), so every table goes by the trial's outcome as the ledger records it,
and only ``ok`` trials count as results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from autotune.core import fmt
from autotune.core.records import TrialRecord
from autotune.core.summary import StudyView
from autotune.models import Direction

SIMULATED_LABEL = "(simulated)"

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
# Below this width the configuration gets its own indented line under each trial.
NARROW = 110


def _title(view: StudyView, what: str) -> str:
    title = f"{view.name}: {what}"
    return title + (f" {SIMULATED_LABEL.upper()}" if view.simulated else "")


def headline(view: StudyView) -> str:
    """One line: the answer's figure vs the baseline's, the verdict, counts, simulated."""
    s = view.summary
    counts = ", ".join(f"{n} {k}" for k, n in sorted(s.outcomes.items(), key=lambda kv: -kv[1]))
    if s.best_trial is None:
        text = f"{s.study}: no successful trial yet"
    else:
        text = f"{s.study}: best {s.metric} {fmt.metric(s.best_value)} (trial {s.best_trial})"
        if s.baseline_value is not None:
            text += f" vs baseline {fmt.metric(s.baseline_value)}"
        text += f" ({s.figure_kind.value} figures); {s.verdict}"
    text += f"; {s.trials} trials" + (f": {counts}" if counts else "")
    if s.simulated:
        text += " [SIMULATED: stand-in server, not real hardware]"
    return text


def status_table(view: StudyView, width: int | None = None) -> RenderableType:
    """Every trial with its outcome, value and cause; the answer is marked with ``*``.

    Configurations are shown whole, wrapped at spaces; on a terminal narrower than
    ``NARROW`` columns each goes on its own indented line under its trial. A value is what
    that one launch measured.
    """
    metric, direction = view.record.metric, view.record.direction
    answer = view.summary.best_trial
    title = _title(view, f"{metric} ({direction}), each trial's own launch")
    if width is not None and width < NARROW:
        return _narrow(view.trials, answer, title, metric)
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column(metric, justify="right", no_wrap=True)
    table.add_column("cause", overflow="fold")
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("config", min_width=24, ratio=1)
    for r in view.trials:
        mark = "*" if r.number == answer else ""
        mark += " (baseline)" if r.baseline else ""
        number = Text(f"{r.number}{mark}", style="bold" if mark.startswith("*") else "")
        outcome = Text(r.label, style=_OUTCOME_STYLE.get(r.label, ""))
        # A skip's reason is long: its kind here, the reason in `status --trial N`.
        cause = r.cause or (r.skip.kind.value if r.skip is not None else "")
        config = Text(fmt.config_text(r.config))
        table.add_row(
            number, outcome, fmt.metric(r.value), cause, fmt.seconds(r.duration_s), config
        )
    return table


def _narrow(
    trials: list[TrialRecord], answer: int | None, title: str, metric: str
) -> RenderableType:
    """One block per trial: a short line, then its whole configuration, indented."""
    lines: list[RenderableType] = [Text(title, style="bold")]
    lines.append(
        Text(f"{'#':>4}{'':6} {'outcome':<12} {metric:>14} {'time':>6}  cause", style="bold")
    )
    for r in trials:
        mark = "*" if r.number == answer else " "
        base = " base" if r.baseline else ""
        head = Text(f"{r.number:>4}{mark}{base:<5} ")
        head.append(f"{r.label:<12}", style=_OUTCOME_STYLE.get(r.label, ""))
        cause = r.cause or (r.skip.kind.value if r.skip is not None else "")
        head.append(f" {fmt.metric(r.value):>14} {fmt.seconds(r.duration_s):>6}  {cause}")
        lines.append(head)
        if r.config:
            lines.append(Padding(Text(fmt.config_text(r.config), style="dim"), (0, 0, 0, 6)))
    return Group(*lines)


def pareto_table(view: StudyView, latency: str | None = None) -> Table | None:
    """The Pareto front: the configurations no other one beats on every objective.

    ``latency``: a metric (smaller is better) to weigh the objective against; None: the
    study's own objectives (a multi-objective study, whose front the summary holds). None
    when no eligible configuration measured them all.
    """
    from autotune.study.pareto import front

    objectives = view.record.objective_pairs()
    if latency is not None:
        objectives = [objectives[0], (latency, Direction.MINIMIZE)]
    points = front(view.trials, objectives)
    if not points:
        return None
    vs = " vs ".join(f"{m} ({d})" for m, d in objectives)
    table = Table(title=_title(view, f"Pareto front, {vs}"), title_justify="left")
    table.add_column("#", justify="right")
    for m, _ in objectives:
        table.add_column(m, justify="right")
    table.add_column("launches", justify="right")
    table.add_column("config", overflow="fold", min_width=24)
    for p in points:
        mark = " (baseline)" if p.baseline else ""
        table.add_row(
            f"{p.trial}{mark}",
            *(fmt.metric(p.values[m]) for m, _ in objectives),
            str(p.launches),
            fmt.config_text(dict(p.config)),
        )
    return table


@dataclass(frozen=True)
class FailureGroup:
    """Failures of one cause in one phase: how many, which trials, every distinct hint."""

    cause: str
    phase: str
    trials: list[int]
    hints: list[str]
    example: str


def failure_groups(view: StudyView) -> list[FailureGroup]:
    """Launched-trial failures grouped by cause and phase, most frequent first.

    Skipped proposals (dead ends, constraints) are not failures: nothing was launched.
    """
    groups: dict[tuple[str, str], list[TrialRecord]] = {}
    for r in view.trials:
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


def failure_table(view: StudyView) -> Table | None:
    """Failures by cause and phase: count, trials, every hint, an example (None: no failures)."""
    groups = failure_groups(view)
    if not groups:
        return None
    table = Table(title=_title(view, "failures"), title_justify="left")
    table.add_column("cause", overflow="fold")
    table.add_column("phase", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column("trials", overflow="fold")
    table.add_column("hint", overflow="fold", ratio=2)
    for g in groups:
        hint = " / ".join(g.hints) or g.example
        table.add_row(g.cause, g.phase, str(len(g.trials)), _trial_list(g.trials), hint)
    return table


def trial(view: StudyView, number: int) -> TrialRecord | None:
    """One trial of the view by number."""
    return next((r for r in view.trials if r.number == number), None)


def status_data(view: StudyView) -> dict[str, Any]:
    """``{"study", "summary", "best", "trials"}``, JSON-safe (``status --json``)."""
    return {
        "study": view.name,
        "summary": view.summary.model_dump(mode="json"),
        "best": view.summary.best_trial,
        "trials": [r.to_json() for r in view.trials],
    }


__all__ = [
    "NARROW",
    "SIMULATED_LABEL",
    "FailureGroup",
    "failure_groups",
    "failure_table",
    "headline",
    "pareto_table",
    "status_data",
    "status_table",
    "trial",
]
