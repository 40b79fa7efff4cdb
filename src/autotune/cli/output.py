"""What the commands print about a study's answer, and the files they leave beside it.

``start`` and ``status`` end with the same lines (the answer, whether it beats the baseline
beyond noise, the noise, the confirmation); ``start`` writes the report files beside the
study and says where, and ``start`` and ``sync`` attach the same files to the study's MLflow
run.
"""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Any

from rich.markup import escape

from autotune.cli.app import console, err
from autotune.cli.options import StudyRef
from autotune.core import fmt
from autotune.core.summary import Configuration, StudySummary, StudyView
from autotune.errors import AutotuneError, StudyError


def objective_text(spec: Any) -> str:
    """``maximize output_tok_s`` (with several objectives: each, joined by ``and``)."""
    return " and ".join(f"{d} {m}" for m, d in spec.objective.objectives)


def sync_command(name: str, mlflow_uri: str | None) -> str:
    return (
        "autotune sync --study "
        + shlex.quote(name)
        + (f" --mlflow-uri {shlex.quote(mlflow_uri)}" if mlflow_uri else "")
    )


def final_report(view: StudyView, ref: StudyRef) -> None:
    """The table of every trial, the failures and the answer, as ``start`` ends."""
    from autotune.report import tables

    console.print(tables.status_table(view, console.width), soft_wrap=False)
    failures = tables.failure_table(view)
    if failures is not None:
        console.print(failures)
    if view.summary.answer is None:
        console.print("[red]no configuration completed successfully[/]")
        return
    gain_lines(view.summary)
    console.print(f"  export: autotune export{ref.flags(view.name)} --format sh")


def gain_lines(s: StudySummary) -> None:
    """The answer: what to run, its figure and the baseline's (of the same kind), whether it
    beats the baseline beyond noise (95% CI), the noise, the confirmation, the ablation."""
    answer = s.answer
    if answer is None:
        return
    # Wrapped at spaces to the terminal's width (the console soft-wraps: a terminal cuts words).
    print_ = partial(console.print, soft_wrap=False)
    what = "baseline (kept)" if answer.baseline and s.gain is not None else "best"
    figure = _figure(s.best_value, answer, s)
    line = f"[bold green]{what}[/] trial #{answer.trial}: {s.metric} = {figure}"
    if s.simulated:
        line += "  [bold magenta](simulated)[/]"
    print_(line)
    if s.baseline is not None and not answer.baseline:
        print_(
            f"  vs baseline trial #{s.baseline.trial}: {_figure(s.baseline_value, s.baseline, s)}"
        )
    searched = next((c for c in s.configurations if c.trial == s.search_best_trial), None)
    if answer.baseline and searched is not None and not searched.baseline:
        # The verdict's gain is about the search's best: say which, and its figure.
        f = (searched.confirmed if s.confirmed else searched.search) or searched.figure
        said = f"{fmt.metric(f.value)} ({f.describe()})" if f is not None else "-"
        print_(f"  the best candidate, trial #{searched.trial}: {said}")
    style = "bold green" if s.beats_baseline else "bold yellow"
    print_(f"  [{style}]{escape(s.verdict)}[/]")
    if s.noise.launch_cv is not None:
        window = s.noise.window_cv
        within = f", within a launch {window:.1%}" if window is not None else ""
        print_(
            f"  noise: launch to launch {s.noise.launch_cv:.1%}{within} "
            f"({s.noise.launches} launches, {s.noise.windows} windows)"
        )
    if s.confirmation is not None:
        c = s.confirmation
        print_(
            f"  confirmation: {c.rounds} round(s), {c.launches} launches, "
            f"{c.server_s:,.0f} server-seconds"
            + (f" ({escape(c.stop_reason)})" if c.stop_reason else "")
        )
        if c.tied and c.winner not in (None, "baseline"):
            print_(
                f"  tied with the winner within noise: {', '.join(c.tied)} "
                "(the best median is exported; any of them would do as well)"
            )
    for text in ablation_lines(s):
        print_(f"  {escape(text)}")
    if s.pruned_saved_s:
        print_(f"  early stopping saved {s.pruned_saved_s:,.0f} server-seconds")
    print_(f"  config: {fmt.config_text(answer.config) or '(defaults)'}", markup=False)


def _figure(value: float | None, c: Configuration, s: StudySummary) -> str:
    """``1,330.2 (median of 3 confirmation launches)``: the headline figure and its kind."""
    f = c.confirmed if s.confirmed else c.search
    said = f" ({f.describe()})" if f is not None and f.value == value else ""
    return fmt.metric(value) + said


def ablation_lines(s: StudySummary) -> list[str]:
    """What each change of the answer contributes, or the one line saying why it did not run."""
    a = s.ablation
    if a is None:
        return []
    if a.skipped:
        return [f"ablation: {a.skipped}"]
    out = [f"ablation: each change reverted, {a.rounds} round(s) interleaved with the answer:"]
    for st in a.steps:
        what = st.contribution.interval_text() if st.contribution else (st.failed or "no value")
        out.append(f"  {st.param}: {what}")
    return out


def report_files(study: Any, study_dir: Path, *, say: bool = True) -> list[Path]:
    """Write the HTML report, its plots and the best launch script; say where the report is.

    Returns the files written (none, with a warning, when they could not be).
    """
    from autotune.export import export
    from autotune.report import write_report

    folder = study_dir / "report"
    try:
        written = write_report(study, folder)
        files = [written.page, *written.plots]
        try:
            script = export(study, "sh")
        except StudyError:  # no successful configuration: nothing to export
            script = None
        if script is not None:
            best = study_dir / "best.sh"
            best.write_text(script)
            files.append(best)
    except (OSError, ValueError, AutotuneError) as exc:  # the study's result stands without them
        err.print(f"autotune: warning: report files not written: {exc}", markup=False)
        return []
    if say:
        console.print(f"  report: {written.page}", markup=False)
    return files


def attach_files(study: Any, study_dir: Path, tracker: Any) -> None:
    """The HTML report, its plots and the best launch script, on the study's MLflow run."""
    files = report_files(study, study_dir, say=False)
    if files:
        tracker.log_artifacts(files)


def mlflow_lines(tracker: Any, name: str, mlflow_uri: str | None) -> None:
    """Where the runs are, or what is pending when MLflow was unreachable."""
    inner = getattr(tracker, "inner", tracker)
    if getattr(tracker, "down", False):
        console.print(
            f"  MLflow: unreachable during the study ({tracker.missed} record(s) pending); "
            f"when it is back: {sync_command(name, mlflow_uri)}",
            markup=False,
        )
    elif hasattr(inner, "runs_url") and inner.experiment_id is not None:
        console.print(f"  MLflow runs: {inner.runs_url()}", markup=False)


__all__ = [
    "attach_files",
    "ablation_lines",
    "final_report",
    "gain_lines",
    "mlflow_lines",
    "objective_text",
    "report_files",
    "sync_command",
]
