"""A study read for people: terminal tables, the HTML page and its plots.

Everything here reads a ``StudyView`` (``Ledger.view()``: the study read once, its summary
built once) and computes no figure of its own.

files.py     ``write_report``: the study read once, then its plots and its page
tables.py    the terminal tables of ``status``, ``start`` and ``report``
html.py      ``report.html``, one self-contained page
plots.py     the PNG plots the page embeds
sweep.py     scenarios and load sweeps: their table, lines and curve
insights.py  what the search's launches say about the parameters: effects, importances
"""

from autotune.report.files import Report, write_report
from autotune.report.tables import failure_table, headline, pareto_table, status_table

__all__ = [
    "Report",
    "failure_table",
    "headline",
    "pareto_table",
    "status_table",
    "write_report",
]
