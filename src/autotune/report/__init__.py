"""A study read for people: terminal tables, the HTML page and its plots.

tables.py    the terminal tables of ``status``, ``start`` and ``report``
html.py      ``report.html``, one self-contained page
plots.py     the PNG plots the page embeds
sweep.py     scenarios and load sweeps: their table, lines and curve
insights.py  what the trials say about the parameters: effects, importances, ablation
"""

from autotune.report.html import write_html
from autotune.report.plots import write_plots
from autotune.report.tables import failure_table, headline, pareto_table, status_table

__all__ = ["failure_table", "headline", "pareto_table", "status_table", "write_html", "write_plots"]
