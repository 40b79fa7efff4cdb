"""``autotune status``: a study's trials (state, value, cause) and its answer so far."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Annotated, Any

import typer

from autotune.cli.app import app, console
from autotune.cli.options import ROOT, ReadStudyOpt, RootOpt, StorageOpt, StudyRef
from autotune.cli.output import gain_lines
from autotune.cli.studies import open_study
from autotune.core.summary import StudyView
from autotune.errors import StudyError

TrialOpt = Annotated[
    int | None,
    typer.Option("--trial", min=0, help="Show one trial whole: configuration, command, why."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
ParetoOpt = Annotated[
    str | None,
    typer.Option(
        "--pareto",
        help="Also show the Pareto front of the objective against this latency metric "
        "(e.g. ttft_p99_ms); export one with `autotune export --trial N`.",
    ),
]


@app.command()
def status(
    study: ReadStudyOpt = None,
    trial: TrialOpt = None,
    as_json: JsonOpt = False,
    pareto: ParetoOpt = None,
    study_root: RootOpt = ROOT,
    storage: StorageOpt = None,
) -> None:
    """Show a study's trials (state, value, cause) and the best so far."""
    from autotune.study.ledger import Ledger

    view = Ledger(open_study(StudyRef(study, study_root, storage))).view()
    if trial is not None:
        show_trial(view, trial, as_json)
    elif as_json:
        sys.stdout.write(json.dumps(status_json(view, pareto), indent=2, default=str) + "\n")
    else:
        show_study(view, pareto)


def status_json(view: StudyView, pareto: str | None) -> dict[str, Any]:
    """The study as ``status --json`` prints it: summary, best and every trial."""
    from autotune.report.tables import status_data

    out = status_data(view)
    if pareto:
        from dataclasses import asdict

        from autotune.models import Direction
        from autotune.study.pareto import front

        objectives = [(view.record.metric, view.record.direction), (pareto, Direction.MINIMIZE)]
        out["pareto"] = [asdict(p) for p in front(view.trials, objectives)]
    return out


def show_study(view: StudyView, pareto: str | None) -> None:
    """Every trial, the failures, the front when there is one, and the answer."""
    from autotune.report import tables
    from autotune.report.sweep import scenario_lines

    console.print(tables.status_table(view, console.width), soft_wrap=False)
    failures = tables.failure_table(view)
    if failures is not None:
        console.print(failures)
    summary = view.summary
    if pareto or summary.pareto is not None:  # asked for, or a multi-objective study
        table = tables.pareto_table(view, pareto or None)
        what = pareto or " and ".join(o["metric"] for o in summary.objectives)
        console.print(
            table if table is not None else f"no Pareto front: no ok trial measured {what}"
        )
    gain_lines(summary)
    best = tables.trial(view, summary.best_trial) if summary.best_trial is not None else None
    if best is not None and best.scenarios:
        for line in scenario_lines(best):
            console.print(f"  {line}", markup=False)


def show_trial(view: StudyView, number: int, as_json: bool) -> None:
    """One trial whole: nothing cut, for when a table had to shorten it."""
    from autotune.core import fmt
    from autotune.report.sweep import scenario_lines
    from autotune.report.tables import trial

    r = trial(view, number)
    if r is None:
        last = len(view.trials) - 1
        raise StudyError(f"study {view.name!r} has no trial {number} (0..{last})")
    if as_json:
        sys.stdout.write(json.dumps(r.to_json(), indent=2, default=str) + "\n")
        return
    value = f"  {view.record.metric} = {fmt.metric(r.value)}" if r.value is not None else ""
    p = console.print
    p(f"[bold]trial #{r.number}[/]  {r.label}{value}" + ("  (baseline)" if r.baseline else ""))
    for key, val in r.config.items():
        p(f"  {key} = {fmt.short(val)}", markup=False)
    for label, text in (
        ("skipped", r.skipped),
        ("cause", f"{r.cause} at {r.phase}" if r.cause else None),
        ("message", r.message),
        ("hint", r.hint),
        ("log", r.log_path),
    ):
        if text:
            p(f"{label}: {text}", markup=False)
    for line in scenario_lines(r):
        p(line, markup=False)
    if r.env or r.argv:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in r.env.items())
        p("command: " + env + (" " if env else "") + shlex.join(r.argv), markup=False)


__all__ = ["show_study", "show_trial", "status", "status_json"]
