"""What a study found, read from Optuna storage: rows, best, baseline, summary, tables, plots.

Optuna's own state is not enough to tell results apart (a crashed trial is told COMPLETE
with a penalty so that the sampler learns), so every reader here goes by the trial's
``outcome`` user attribute (see ``study/attrs.py``) and only ``ok`` trials count as results.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from autotune import fmt
from autotune.models import Outcome
from autotune.study import attrs

SIMULATED_LABEL = "(simulated)"


@dataclass(frozen=True)
class TrialRow:
    """One trial as people see it.

    ``value`` is the objective metric the trial measured (``ok`` and ``slo_violated`` only),
    never the penalty a crashed trial was told.
    """

    number: int
    state: str  # Optuna state name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    outcome: str | None  # models.Outcome value; None while running or for a bug (FAIL)
    value: float | None
    cause: str | None = None
    phase: str | None = None
    hint: str = ""
    message: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    baseline: bool = False
    simulated: bool = False
    duration_s: float | None = None
    skipped: str | None = None
    node: str = ""
    log_path: str | None = None

    @property
    def label(self) -> str:
        """Outcome for tables: ``ok``, ``crashed``, ``running``, ``error`` (driver bug)."""
        if self.outcome:
            return self.outcome
        return {"RUNNING": "running", "WAITING": "waiting", "FAIL": "error"}.get(
            self.state, self.state.lower()
        )


def objective(study: optuna.Study) -> tuple[str, str]:
    """The study's objective ``(metric, direction)``; from the driver's attribute if present."""
    obj = study.user_attrs.get(attrs.OBJECTIVE) or {}
    metric = str(obj.get("metric") or "value")
    direction = obj.get("direction")
    if direction not in ("maximize", "minimize"):
        direction = "minimize" if study.directions[0].name == "MINIMIZE" else "maximize"
    return metric, str(direction)


def is_simulated(study: optuna.Study) -> bool:
    """Whether the study ran against the stand-in server."""
    return bool(study.user_attrs.get(attrs.STUDY_SIMULATED, False))


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _duration(trial: FrozenTrial) -> float | None:
    timings = trial.user_attrs.get(attrs.TIMINGS) or {}
    total = _finite(timings.get("total_s")) if isinstance(timings, dict) else None
    if total:
        return total
    if trial.duration is not None:
        return trial.duration.total_seconds()
    return None


def row(trial: FrozenTrial, metric: str, *, study_simulated: bool = False) -> TrialRow:
    """One ``FrozenTrial`` as a ``TrialRow`` (``metric``: the objective's name)."""
    ua = trial.user_attrs
    outcome = ua.get(attrs.OUTCOME)
    if outcome is None and trial.state == TrialState.PRUNED:
        outcome = Outcome.PRUNED.value
    raw = ua.get(attrs.METRICS) or {}
    metrics = {k: float(v) for k, v in raw.items() if _finite(v) is not None}
    value: float | None = None
    if outcome in (Outcome.OK, Outcome.SLO_VIOLATED):
        value = metrics.get(metric)
        if value is None and trial.values is not None and len(trial.values) == 1:
            value = _finite(trial.values[0])
    return TrialRow(
        number=trial.number,
        state=trial.state.name,
        outcome=str(outcome) if outcome is not None else None,
        value=value,
        cause=ua.get(attrs.CAUSE),
        phase=ua.get(attrs.PHASE),
        hint=str(ua.get(attrs.HINT) or ""),
        message=str(ua.get(attrs.MESSAGE) or ""),
        config=dict(ua.get(attrs.CONFIG) or trial.params),
        metrics=metrics,
        baseline=bool(ua.get(attrs.BASELINE, False)),
        simulated=bool(ua.get(attrs.SIMULATED, study_simulated)),
        duration_s=_duration(trial),
        skipped=ua.get(attrs.SKIPPED),
        node=str(ua.get(attrs.NODE) or ""),
        log_path=ua.get(attrs.LOG_PATH),
    )


def rows(study: optuna.Study) -> list[TrialRow]:
    """Every trial of the study, in trial-number order."""
    metric, _ = objective(study)
    sim = is_simulated(study)
    trials = study.get_trials(deepcopy=False)
    return [row(t, metric, study_simulated=sim) for t in sorted(trials, key=lambda t: t.number)]


def _best_of(all_rows: list[TrialRow], direction: str) -> TrialRow | None:
    ok = [r for r in all_rows if r.outcome == Outcome.OK and r.value is not None]
    if not ok:
        return None
    sign = -1.0 if direction == "maximize" else 1.0
    # Ties go to the earlier trial: it was found first and has been seen to work longest.
    return min(ok, key=lambda r: (sign * (r.value or 0.0), r.number))


def best(study: optuna.Study) -> TrialRow | None:
    """The best ``ok`` trial by the objective (ties: lower number), or None."""
    return _best_of(rows(study), objective(study)[1])


def _baseline_of(all_rows: list[TrialRow]) -> TrialRow | None:
    marked = [r for r in all_rows if r.baseline]
    if not marked:
        return None
    ok = [r for r in marked if r.outcome == Outcome.OK]
    return (ok or marked)[0]


def baseline(study: optuna.Study) -> TrialRow | None:
    """The baseline trial (the first ``ok`` one if it was run more than once), or None."""
    return _baseline_of(rows(study))


def gain_pct(best_value: float | None, base_value: float | None, direction: str) -> float | None:
    """Improvement of ``best_value`` over ``base_value`` in percent; positive is better."""
    if best_value is None or base_value is None or base_value == 0:
        return None
    change = (best_value - base_value) / abs(base_value) * 100.0
    return change if direction == "maximize" else -change


def summary(study: optuna.Study) -> dict[str, Any]:
    """Counts and headline numbers of a study (also what ``Tracker.finish`` receives).

    Keys: study, metric, direction, trials, outcomes {outcome: n}, causes {cause: n},
    best_trial, best_value, best_config, baseline_trial, baseline_value, gain_pct, simulated.
    """
    metric, direction = objective(study)
    all_rows = rows(study)
    top = _best_of(all_rows, direction)
    base = _baseline_of(all_rows)
    base_value = base.value if base is not None and base.outcome == Outcome.OK else None
    return {
        "study": study.study_name,
        "metric": metric,
        "direction": direction,
        "trials": len(all_rows),
        "outcomes": dict(Counter(r.label for r in all_rows)),
        "causes": dict(Counter(r.cause for r in all_rows if r.cause)),
        "best_trial": top.number if top else None,
        "best_value": top.value if top else None,
        "best_config": dict(top.config) if top else None,
        "baseline_trial": base.number if base else None,
        "baseline_value": base_value,
        "gain_pct": gain_pct(top.value if top else None, base_value, direction),
        "simulated": is_simulated(study),
    }


def status_data(study: optuna.Study) -> dict[str, Any]:
    """``{"summary": ..., "trials": [row as a dict, ...]}``, JSON-safe (``status --json``)."""
    return {"summary": summary(study), "trials": [asdict(r) for r in rows(study)]}


def _fmt(value: float | None) -> str:
    return fmt.metric(value)


def headline(study: optuna.Study) -> str:
    """One line: best value vs baseline, trial counts, and the simulated warning."""
    s = summary(study)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(s["outcomes"].items(), key=lambda kv: -kv[1]))
    if s["best_trial"] is None:
        text = f"{s['study']}: no successful trial yet"
    else:
        text = f"{s['study']}: best {s['metric']} {_fmt(s['best_value'])} (trial {s['best_trial']})"
        if s["baseline_value"] is not None:
            text += f" vs baseline {_fmt(s['baseline_value'])}"
            if s["gain_pct"] is not None:
                text += f" ({s['gain_pct']:+.1f}%)"
    text += f"; {s['trials']} trials" + (f": {counts}" if counts else "")
    if s["simulated"]:
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
    # Whole, folded at spaces by the table: a configuration is never cut off.
    return fmt.config_text(config)


# Below this width the configuration gets its own indented line under each trial.
NARROW = 110


def status_table(study: optuna.Study, width: int | None = None) -> RenderableType:
    """Every trial with its outcome, value and cause; the best one is marked with ``*``.

    Configurations are shown whole, wrapped at spaces; on a terminal narrower than
    ``NARROW`` columns each goes on its own indented line under its trial.
    """
    metric, direction = objective(study)
    all_rows = rows(study)
    top = _best_of(all_rows, direction)
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
        # A skip's reason is long: "skipped" here, the reason in `status --trial N`.
        cause = r.cause or ("skipped" if r.skipped else "")
        duration = fmt.seconds(r.duration_s)
        config = Text(_config_text(r.config))
        table.add_row(number, outcome, _fmt(r.value), cause, duration, config)
    return table


def _narrow(
    all_rows: list[TrialRow], top: TrialRow | None, title: str, metric: str
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
        cause = r.cause or ("skipped" if r.skipped else "")
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
    groups: dict[tuple[str, str], list[TrialRow]] = {}
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


def ok_study(study: optuna.Study) -> optuna.Study:
    """An in-memory copy of the study holding only its ``ok`` trials, valued by the metric.

    Importances and the optimization history must not see the penalties of crashed trials.
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
        r = row(trial, metric, study_simulated=sim)
        if r.outcome != Outcome.OK or r.value is None:
            continue
        copy.add_trial(
            optuna.trial.create_trial(
                value=r.value,
                params=trial.params,
                distributions=trial.distributions,
                user_attrs=dict(trial.user_attrs),
            )
        )
    return copy


def plots(study: optuna.Study, out_dir: str | Path) -> list[Path]:
    """Save the study's PNG plots into ``out_dir`` (see ``report_plots.py``); the files written."""
    from autotune.report_plots import write_plots

    return write_plots(study, Path(out_dir))


def importances(study: optuna.Study) -> dict[str, float]:
    """Parameter importances of the objective over ``ok`` trials (``{}`` if not computable)."""
    from autotune.insights import importances as _importances

    return _importances(study)
