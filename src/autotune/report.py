"""What a study found, read through the study's ledger: rows, best, baseline, summary, plots.

Optuna's own state is not enough to tell results apart (a crashed trial is told PRUNED with
a violated constraint so that the sampler learns), so every reader here goes by the trial's
outcome as the ledger (``study/ledger.py``) records it, and only ``ok`` trials count as
results.
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState
from rich.table import Table
from rich.text import Text

from autotune.models import Outcome
from autotune.records import StudySummary, TrialRecord, gain_pct
from autotune.study.ledger import Ledger, decode_trial

SIMULATED_LABEL = "(simulated)"

__all__ = [
    "SIMULATED_LABEL",
    "TrialRow",
    "baseline",
    "best",
    "failure_table",
    "gain_pct",
    "headline",
    "importances",
    "is_simulated",
    "objective",
    "ok_study",
    "plots",
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
    if value is None:
        return "-"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"


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
            if s.gain_pct is not None:
                text += f" ({s.gain_pct:+.1f}%)"
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


def _config_text(config: dict[str, Any], limit: int = 120) -> str:
    text = " ".join(f"{k}={v}" for k, v in config.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_table(study: optuna.Study) -> Table:
    """Every trial with its outcome, value and cause; the best one is marked with ``*``."""
    metric, direction = objective(study)
    ledger = Ledger(study)
    all_rows = ledger.trials()
    top = ledger.best(all_rows)
    title = f"{study.study_name}: {metric} ({direction})"
    if is_simulated(study):
        title += f" {SIMULATED_LABEL.upper()}"
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("outcome")
    table.add_column(metric, justify="right")
    table.add_column("cause")
    table.add_column("time", justify="right")
    table.add_column("config", overflow="fold", min_width=24)
    for r in all_rows:
        mark = "*" if top is not None and r.number == top.number else ""
        mark += " (baseline)" if r.baseline else ""
        number = Text(f"{r.number}{mark}", style="bold" if mark.startswith("*") else "")
        outcome = Text(r.label, style=_OUTCOME_STYLE.get(r.label, ""))
        cause = r.cause or (r.skip.kind.value if r.skip is not None else "")
        duration = f"{r.duration_s:.0f}s" if r.duration_s is not None else "-"
        table.add_row(number, outcome, _fmt(r.value), cause, duration, _config_text(r.config))
    return table


def failure_table(study: optuna.Study) -> Table | None:
    """Failures grouped by cause: count, phase, hint and one example trial (None: no failures)."""
    groups: dict[str, list[TrialRecord]] = {}
    for r in rows(study):
        if r.cause:
            groups.setdefault(r.cause, []).append(r)
    if not groups:
        return None
    title = f"{study.study_name}: failures"
    if is_simulated(study):
        title += f" {SIMULATED_LABEL.upper()}"
    table = Table(title=title, title_justify="left")
    table.add_column("cause")
    table.add_column("count", justify="right")
    table.add_column("phase")
    table.add_column("hint", overflow="fold")
    table.add_column("example")
    for cause, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        phases = Counter(m.phase for m in members if m.phase)
        phase = phases.most_common(1)[0][0] if phases else "-"
        hint = next((m.hint for m in members if m.hint), "")
        first = members[0]
        example = f"#{first.number}" + (f": {first.message}" if first.message else "")
        table.add_row(cause, str(len(members)), phase, hint, example)
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
        r = decode_trial(trial, metric, study_simulated=sim)
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
    """Save PNG plots of the study into ``out_dir``; returns the files written.

    Optimization history and parameter importances (ok trials only; skipped when there is
    too little to show) and a bar chart of outcomes and failure causes.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    from optuna.visualization import matplotlib as ovm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metric, direction = objective(study)
    suffix = f" {SIMULATED_LABEL}" if is_simulated(study) else ""
    good = ok_study(study)
    written: list[Path] = []

    def save(ax: Any, name: str, title: str) -> None:
        for loc in ("left", "right"):
            ax.set_title("", loc=loc)  # Optuna's own title would overlap ours
        ax.set_title(title + suffix)
        fig = ax.figure
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    with warnings.catch_warnings():
        # Optuna marks its matplotlib plots experimental; that is not the user's concern.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if good.trials:
            ax = ovm.plot_optimization_history(good, target_name=metric)
            ax.set_xlabel("successful trial, in order")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            save(ax, "optimization_history.png", f"{study.study_name}: {metric} ({direction})")
        importances = _importances(good)
        if importances:
            ax = ovm.plot_param_importances(good, target_name=metric)
            ax.set_xlabel(f"importance for {metric} (ok trials)")
            ax.set_ylabel("parameter")
            save(ax, "param_importances.png", f"{study.study_name}: parameter importances")

    counts = summary(study)
    if counts.trials:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        outcomes = sorted(counts.outcomes.items(), key=lambda kv: -kv[1])
        left.bar([k for k, _ in outcomes], [n for _, n in outcomes],
                 color=[_BAR_COLOR.get(k, "grey") for k, _ in outcomes])
        left.set_title("outcomes")
        left.yaxis.set_major_locator(MaxNLocator(integer=True))
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
        causes = sorted(counts.causes.items(), key=lambda kv: -kv[1])
        right.barh([k for k, _ in causes][::-1], [n for _, n in causes][::-1], color="tab:red")
        right.set_title("failure causes" if causes else "failure causes (none)")
        fig.suptitle(f"{study.study_name}: {counts.trials} trials{suffix}")
        fig.tight_layout()
        path = out / "outcomes.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


_BAR_COLOR = {
    "ok": "tab:green",
    "slo_violated": "gold",
    "crashed": "tab:red",
    "timeout": "tab:orange",
    "pruned": "silver",
    "infra": "tab:purple",
}


def _importances(good: optuna.Study) -> dict[str, float]:
    """Parameter importances over ok trials, or ``{}`` when they cannot be computed."""
    trials = good.trials
    if len(trials) < 2:
        return {}
    varying = {
        name for name in {n for t in trials for n in t.params}
        if len({repr(t.params.get(name)) for t in trials}) > 1
    }
    if not varying:
        return {}
    try:
        return optuna.importance.get_param_importances(good)
    except (ValueError, RuntimeError, ZeroDivisionError):
        # Too few distinct points or conditional params absent from some trials.
        return {}


def importances(study: optuna.Study) -> dict[str, float]:
    """Parameter importances of the objective over ``ok`` trials (``{}`` if not computable)."""
    return _importances(ok_study(study))
