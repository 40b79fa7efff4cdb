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
    s = open_study(StudyRef(study, study_root, storage))
    if trial is not None:
        show_trial(s, trial, as_json)
    elif as_json:
        sys.stdout.write(json.dumps(status_json(s, pareto), indent=2, default=str) + "\n")
    else:
        show_study(s, pareto)


def status_json(s: Any, pareto: str | None) -> dict[str, Any]:
    """The study as ``status --json`` prints it: summary, best and every trial."""
    from autotune.report import tables as report

    best = report.best(s)
    out: dict[str, Any] = {
        "study": s.study_name,
        "summary": report.summary(s).model_dump(mode="json"),
        "best": best.number if best else None,
        "trials": [r.to_json() for r in report.rows(s)],
    }
    if pareto:
        from dataclasses import asdict

        from autotune.study.ledger import Ledger
        from autotune.study.pareto import front

        stored = Ledger(s).study_record()
        objectives = [(stored.metric, stored.direction), (pareto, "minimize")]
        out["pareto"] = [asdict(p) for p in front(report.rows(s), objectives)]
    return out


def show_study(s: Any, pareto: str | None) -> None:
    """Every trial, the failures, the front when there is one, and the answer."""
    from autotune.report import tables as report
    from autotune.report.sweep import scenario_lines

    console.print(report.status_table(s, console.width), soft_wrap=False)
    failures = report.failure_table(s)
    if failures is not None:
        console.print(failures)
    summary = report.summary(s)
    if pareto or summary.pareto is not None:  # asked for, or a multi-objective study
        table = report.pareto_table(s, pareto or None)
        what = pareto or " and ".join(o["metric"] for o in summary.objectives)
        console.print(
            table if table is not None else f"no Pareto front: no ok trial measured {what}"
        )
    best = report.best(s)
    if best is not None and best.value is not None:
        gain_lines(summary, best)
    if best is not None and best.scenarios:
        for line in scenario_lines(best):
            console.print(f"  {line}", markup=False)


def show_trial(s: Any, number: int, as_json: bool) -> None:
    """One trial whole: nothing cut, for when a table had to shorten it."""
    from autotune.core import fmt
    from autotune.report import tables as report
    from autotune.report.sweep import scenario_lines

    found = [r for r in report.rows(s) if r.number == number]
    if not found:
        raise StudyError(f"study {s.study_name!r} has no trial {number} (0..{len(s.trials) - 1})")
    r = found[0]
    if as_json:
        sys.stdout.write(json.dumps(r.to_json(), indent=2, default=str) + "\n")
        return
    value = f"  {report.objective(s)[0]} = {fmt.metric(r.value)}" if r.value is not None else ""
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
