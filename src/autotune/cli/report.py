"""``autotune report``: ``report.html`` (self-contained, opens offline) and its PNG plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autotune.cli.app import app, console
from autotune.cli.options import ROOT, ReadStudyOpt, RootOpt, StorageOpt, StudyRef
from autotune.cli.studies import open_study

OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Folder for report.html and the PNG plots.")
]


@app.command()
def report(
    study: ReadStudyOpt = None,
    out: OutOpt = None,
    study_root: RootOpt = ROOT,
    storage: StorageOpt = None,
) -> None:
    """Write report.html (self-contained, opens offline) and its PNG plots."""
    from autotune.report import tables
    from autotune.report.html import write_html
    from autotune.report.plots import write_plots

    s = open_study(StudyRef(study, study_root, storage))
    folder = out or (study_root / s.study_name / "report")
    paths = write_plots(s, folder)
    page = write_html(s, folder, paths)
    console.print(tables.headline(s), markup=False)
    failures = tables.failure_table(s)
    if failures is not None:
        console.print(failures)
    console.print(f"wrote {page}")
    for p in paths:
        console.print(f"wrote {p}")


__all__ = ["report"]
