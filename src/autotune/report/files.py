"""The report's files for one study: the study read once, then its plots and its page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autotune.core.summary import StudyView
from autotune.report.html import write_html
from autotune.report.insights import importances
from autotune.report.plots import write_plots
from autotune.study.ledger import Ledger

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Report:
    """What ``write_report`` wrote, and the view it read."""

    view: StudyView
    page: Path
    plots: list[Path]


def write_report(study: optuna.Study, out: Path) -> Report:
    """Write ``report.html`` and its PNG plots into ``out``.

    The study is read once (``Ledger.view``) and fANOVA fitted once; the page and the plots
    read the same figures.
    """
    view = Ledger(study).view()
    fanova = importances(study, view)
    pngs = write_plots(view, fanova, out)
    return Report(view, write_html(view, fanova, out, pngs), pngs)


__all__ = ["Report", "write_report"]
