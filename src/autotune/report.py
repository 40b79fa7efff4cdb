"""What a study found, read from Optuna storage: rows, best, baseline, summary, tables, plots.

Optuna's own state is not enough to tell results apart (a crashed trial is told COMPLETE
with a penalty so that the sampler learns), so every reader here goes by the trial's
``outcome`` user attribute (see ``study/attrs.py``) and only ``ok`` trials count as results.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from rich.table import Table
from rich.text import Text

from autotune.models import Outcome
from autotune.study import attrs, evidence
from autotune.study.confirm import Confirmation

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


def verdict(study: optuna.Study) -> evidence.Verdict:
    """The study's answer: winner, gain with its interval, noise (study/evidence.py)."""
    metric, direction = objective(study)
    raw = study.user_attrs.get(attrs.CONFIRMATION)
    record = Confirmation.from_json(raw) if isinstance(raw, dict) else None
    return evidence.verdict(
        study.get_trials(deepcopy=False),
        metric,
        "minimize" if direction == "minimize" else "maximize",
        record,
    )


def _winner_row(all_rows: list[TrialRow], v: evidence.Verdict) -> TrialRow | None:
    """The row of the winner's first launch, valued by the median of its launches."""
    if v.winner is None or v.winner.first_trial is None:
        return None
    first = next((r for r in all_rows if r.number == v.winner.first_trial), None)
    if first is None:
        return None
    values = v.winner.confirm_values or v.winner.values
    median = float(statistics.median(values)) if values else first.value
    return TrialRow(**{**asdict(first), "value": median})


def best(study: optuna.Study) -> TrialRow | None:
    """The configuration to recommend, or None: the winner by the median of its launches.

    When a baseline ran and nothing beat it beyond noise, that is the baseline. Its ``value``
    is the median of the confirmation launches when there were any, else of its launches.
    """
    return _winner_row(rows(study), verdict(study))


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
    v = verdict(study)
    top = _winner_row(all_rows, v)
    base = _baseline_of(all_rows)
    base_value = v.baseline.median if v.baseline is not None else None
    raw = study.user_attrs.get(attrs.CONFIRMATION)
    confirmation = None
    if isinstance(raw, dict):
        confirmation = {
            "rounds": raw.get("rounds"),
            "stop_reason": raw.get("stop_reason"),
            "winner": raw.get("winner"),
            **(raw.get("cost") or {}),
        }
    saved = sum(
        float(t.user_attrs.get(attrs.PRUNED_SAVED_S) or 0.0)
        for t in study.get_trials(deepcopy=False)
    )
    gain_value = v.gain.pct if v.gain is not None else None
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
        "gain_pct": gain_value,
        "gain": v.gain.to_json() if v.gain is not None else None,
        "beats_baseline": v.beats_baseline,
        "verdict": v.text(),
        "confirmed": v.confirmed,
        "confirmation": confirmation,
        "search_best_trial": v.best.first_trial if v.best is not None else None,
        "noise": v.noise.to_json(),
        "pruned_saved_s": round(saved, 3),
        "simulated": is_simulated(study),
    }


def status_data(study: optuna.Study) -> dict[str, Any]:
    """``{"summary": ..., "trials": [row as a dict, ...]}``, JSON-safe (``status --json``)."""
    return {"summary": summary(study), "trials": [asdict(r) for r in rows(study)]}


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"


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
        text += f"; {s['verdict']}"
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


def _config_text(config: dict[str, Any], limit: int = 120) -> str:
    text = " ".join(f"{k}={v}" for k, v in config.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_table(study: optuna.Study) -> Table:
    """Every trial with its outcome, value and cause; the best one is marked with ``*``."""
    metric, direction = objective(study)
    all_rows = rows(study)
    top = _winner_row(all_rows, verdict(study))
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
        cause = r.cause or (r.skipped or "")
        duration = f"{r.duration_s:.0f}s" if r.duration_s is not None else "-"
        table.add_row(number, outcome, _fmt(r.value), cause, duration, _config_text(r.config))
    return table


def failure_table(study: optuna.Study) -> Table | None:
    """Failures grouped by cause: count, phase, hint and one example trial (None: no failures)."""
    groups: dict[str, list[TrialRow]] = {}
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
    if counts["trials"]:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        outcomes = sorted(counts["outcomes"].items(), key=lambda kv: -kv[1])
        left.bar([k for k, _ in outcomes], [n for _, n in outcomes],
                 color=[_BAR_COLOR.get(k, "grey") for k, _ in outcomes])
        left.set_title("outcomes")
        left.yaxis.set_major_locator(MaxNLocator(integer=True))
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
        causes = sorted(counts["causes"].items(), key=lambda kv: -kv[1])
        right.barh([k for k, _ in causes][::-1], [n for _, n in causes][::-1], color="tab:red")
        right.set_title("failure causes" if causes else "failure causes (none)")
        fig.suptitle(f"{study.study_name}: {counts['trials']} trials{suffix}")
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
