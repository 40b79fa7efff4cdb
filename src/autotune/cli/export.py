"""``autotune export``: the best configuration(s) as a script, env file, JSON, YAML, Docker, k8s."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from autotune.cli.app import app
from autotune.cli.options import ROOT, ExportFormat, ReadStudyOpt, RootOpt, StorageOpt, StudyRef
from autotune.cli.studies import open_study

FormatOpt = Annotated[ExportFormat, typer.Option("--format", help="Output format.")]
TopOpt = Annotated[int, typer.Option("--top", min=1, help="How many configurations, best first.")]
PortOpt = Annotated[int, typer.Option("--port", help="Port in the exported command.")]
TrialOpt = Annotated[
    int | None,
    typer.Option("--trial", help="Export this trial's configuration (e.g. from the Pareto front)."),
]
ParetoOpt = Annotated[
    bool,
    typer.Option(
        "--pareto",
        help="Export every member of a multi-objective study's Pareto front "
        "(json/yaml: a list; sh/docker: one function each; k8s: one Deployment each).",
    ),
]


@app.command()
def export(
    study: ReadStudyOpt = None,
    fmt: FormatOpt = ExportFormat.sh,
    top: TopOpt = 1,
    port: PortOpt = 30000,
    trial: TrialOpt = None,
    pareto: ParetoOpt = False,
    study_root: RootOpt = ROOT,
    storage: StorageOpt = None,
) -> None:
    """Print the best configuration(s): a launch script, env file, JSON, YAML, Docker or k8s."""
    from autotune.export import export as render

    s = open_study(StudyRef(study, study_root, storage))
    text = render(s, fmt.value, port=port, trial=trial, top=top, pareto=pareto)
    sys.stdout.write(text.rstrip("\n") + "\n")


__all__ = ["export"]
