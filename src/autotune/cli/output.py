"""What the commands print about a study's answer, and the files they leave beside it.

``start`` and ``status`` end with the same lines (the answer, whether it beats the baseline
beyond noise, the noise, the confirmation); ``start`` and ``sync`` attach the same files to
the study's MLflow run.
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
from autotune.errors import AutotuneError


def objective_text(spec: Any) -> str:
    """``maximize output_tok_s`` (with several objectives: each, joined by ``and``)."""
    return " and ".join(f"{d} {m}" for m, d in spec.objective.objectives)


def sync_command(name: str, mlflow_uri: str | None) -> str:
    return (
        "autotune sync --study "
        + shlex.quote(name)
        + (f" --mlflow-uri {shlex.quote(mlflow_uri)}" if mlflow_uri else "")
    )


def final_report(study: Any, ref: StudyRef) -> None:
    """The table of every trial, the failures and the answer, as ``start`` ends."""
    from autotune.report import tables as report

    console.print(report.status_table(study, console.width), soft_wrap=False)
    failures = report.failure_table(study)
    if failures is not None:
        console.print(failures)
    s = report.summary(study)
    best = report.best(study)
    if best is None:
        console.print("[red]no configuration completed successfully[/]")
        return
    gain_lines(s, best)
    console.print(f"  export: autotune export{ref.flags(study.study_name)} --format sh")


def gain_lines(s: Any, best: Any) -> None:
    """The answer: what to run, and whether it beats the baseline beyond noise (95% CI)."""
    # Wrapped at spaces to the terminal's width (the console soft-wraps: a terminal cuts words).
    print_ = partial(console.print, soft_wrap=False)

    what = "baseline (kept)" if best.baseline and s.gain is not None else "best"
    line = f"[bold green]{what}[/] trial #{best.number}: {s.metric} = {fmt.metric(best.value)}"
    if s.baseline_value is not None and not best.baseline:
        line += f"  vs baseline {fmt.metric(s.baseline_value)}"
    if s.simulated:
        line += "  [bold magenta](simulated)[/]"
    print_(line)
    style = "bold green" if s.beats_baseline else "bold yellow"
    print_(f"  [{style}]{escape(s.verdict)}[/]")
    noise = s.noise or {}
    if noise.get("launch_cv") is not None:
        window = noise.get("window_cv")
        within = f", within a launch {window:.1%}" if window is not None else ""
        print_(
            f"  noise: launch to launch {noise['launch_cv']:.1%}{within} "
            f"({noise.get('launches')} launches, {noise.get('windows')} windows)"
        )
    if s.confirmation:
        c = s.confirmation
        print_(
            f"  confirmation: {c.get('rounds')} round(s), {c.get('launches')} launches, "
            f"{c.get('server_s', 0):,.0f} server-seconds ({c.get('stop_reason')})"
        )
        if c.get("tied") and c.get("winner") not in (None, "baseline"):
            print_(
                f"  tied with the winner within noise: {', '.join(c['tied'])} "
                "(the best median is exported; any of them would do as well)"
            )
    if s.pruned_saved_s:
        print_(f"  early stopping saved {s.pruned_saved_s:,.0f} server-seconds")
    print_(f"  config: {fmt.config_text(best.config) or '(defaults)'}", markup=False)


def attach_files(study: Any, study_dir: Path, tracker: Any) -> None:
    """The HTML report, its plots and the best launch script, on the study's MLflow run."""
    from autotune.export import export
    from autotune.report import tables as report
    from autotune.report.html import write_html
    from autotune.report.plots import write_plots

    folder = study_dir / "report"
    try:
        pngs = write_plots(study, folder)
        files = [write_html(study, folder, pngs), *pngs]
        if report.best(study) is not None:
            best = study_dir / "best.sh"
            best.write_text(export(study, "sh"))
            files.append(best)
    except (OSError, ValueError, AutotuneError) as exc:  # the study's result stands without them
        err.print(f"autotune: warning: report files not written: {exc}", markup=False)
        return
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
    "final_report",
    "gain_lines",
    "mlflow_lines",
    "objective_text",
    "sync_command",
]
