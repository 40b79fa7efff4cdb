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
    from autotune.report import tables, write_report

    s = open_study(StudyRef(study, study_root, storage))
    written = write_report(s, out or (study_root / s.study_name / "report"))
    console.print(tables.headline(written.view), markup=False)
    failures = tables.failure_table(written.view)
    if failures is not None:
        console.print(failures)
    for path in (written.page, *written.plots):
        console.print(f"wrote {path}")


__all__ = ["report"]
