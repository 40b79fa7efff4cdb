"""The study's plots as PNG files: history by trial number, importances, outcomes.

Drawn with matplotlib directly (Optuna's plots number only the trials they keep and mark
themselves experimental on stderr). Every plot of a simulated study says so in its title.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from autotune.core.summary import StudyView
from autotune.report.insights import marginal_effects, trust_note
from autotune.report.sweep import sweep_figure
from autotune.report.tables import SIMULATED_LABEL

_COLOR = {
    "ok": "tab:green",
    "slo_violated": "gold",
    "crashed": "tab:red",
    "timeout": "tab:orange",
    "pruned": "silver",
    "infra": "tab:purple",
}
_DPI = 110


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib.pyplot as plt

    return plt


def write_plots(view: StudyView, importances: dict[str, float], out: Path) -> list[Path]:
    """Write ``optimization_history.png``, ``param_importances.png`` (two ok trials or more,
    and a varying parameter), ``outcomes.png``, ``sweep_curve.png`` (a space that sweeps
    load) and, for a multi-objective study, ``pareto_front.png``; returns the files written.

    ``importances``: fANOVA's, computed once by the caller (``insights.importances``).
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    draws: tuple[tuple[str, Callable[[StudyView], Any]], ...] = (
        ("optimization_history.png", _history),
        ("param_importances.png", partial(_importances, importances=importances)),
        ("outcomes.png", _outcomes),
        ("sweep_curve.png", sweep_figure),
        ("pareto_front.png", _pareto),
    )
    for name, draw in draws:
        fig = draw(view)
        if fig is None:
            continue
        path = out / name
        fig.savefig(path, dpi=_DPI)
        _plt().close(fig)
        written.append(path)
    return written


def _suffix(view: StudyView) -> str:
    return f" {SIMULATED_LABEL}" if view.simulated else ""


def _history(view: StudyView) -> Any:
    """Each search launch by its trial number: its value, the best single launch so far,
    failures along the base; the baseline's median over its search launches as a line."""
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    metric, direction = view.record.metric, view.record.direction
    all_rows = [r for r in view.trials if r.label not in ("running", "waiting") and r.searched]
    ok = [r for r in all_rows if r.outcome == "ok" and r.value is not None]
    if not ok:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.scatter(
        [r.number for r in ok], [r.value for r in ok], color="tab:blue", label=metric, zorder=3
    )
    best_x, best_y, best = [], [], None
    for r in ok:
        value = r.value or 0.0
        if best is None or (value > best if direction == "maximize" else value < best):
            best = value
        best_x.append(r.number)
        best_y.append(best)
    ax.step(best_x, best_y, where="post", color="tab:red", label="best single launch so far")
    base = view.summary.baseline
    if base is not None and base.search is not None:
        ax.axhline(
            base.search.value,
            color="grey",
            linestyle="--",
            linewidth=1,
            label=f"baseline ({base.search.describe()})",
        )
    failed = [r for r in all_rows if r.outcome in ("crashed", "timeout", "slo_violated")]
    if failed:
        low = min(r.value or 0.0 for r in ok)
        ax.scatter(
            [r.number for r in failed],
            [low * 0.98] * len(failed),
            marker="x",
            color=[_COLOR.get(r.label, "grey") for r in failed],
            label="failed (no value)",
            zorder=3,
        )
    ax.set_xlabel("trial number")
    ax.set_ylabel(metric)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"{view.name}: {metric} ({direction}), search launches{_suffix(view)}")
    fig.tight_layout()
    return fig


def _importances(view: StudyView, importances: dict[str, float]) -> Any:
    """fANOVA importances beside each parameter's marginal effect (spread of mean values)."""
    effects = marginal_effects(view)
    if not effects:
        return None
    plt = _plt()
    metric = view.record.metric
    imp = importances
    names = [e.param for e in effects][::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.5 * len(names) + 2), sharey=True)
    right.barh(
        names, [next(e.spread for e in effects if e.param == n) for n in names], color="tab:blue"
    )
    right.set_xlabel(f"marginal effect: spread of mean {metric}")
    left.barh(names, [imp.get(n, 0.0) for n in names], color="tab:grey")
    left.set_xlabel("fANOVA importance (0 or absent: not assessable)")
    note = trust_note(view)
    title = f"{view.name}: what the parameters are worth{_suffix(view)}"
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=10)
    fig.tight_layout()
    return fig


def _outcomes(view: StudyView) -> Any:
    """Outcome counts; a failure-cause panel only when something failed."""
    counts = view.summary
    if not counts.trials:
        return None
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    causes = sorted(counts.causes.items(), key=lambda kv: -kv[1])
    if causes:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    else:
        fig, left = plt.subplots(figsize=(6, 4))
        right = None
    outcomes = sorted(counts.outcomes.items(), key=lambda kv: -kv[1])
    left.bar(
        [k for k, _ in outcomes],
        [n for _, n in outcomes],
        color=[_COLOR.get(k, "grey") for k, _ in outcomes],
    )
    left.set_title("outcomes")
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    if right is not None:
        right.barh([k for k, _ in causes][::-1], [n for _, n in causes][::-1], color="tab:red")
        right.set_title("failure and skip causes")
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"{view.name}: {counts.trials} trials{_suffix(view)}")
    fig.tight_layout()
    return fig


def _pareto(view: StudyView) -> Any:
    """A multi-objective study's first two objectives: every eligible configuration (median
    of its launches), the front joined by a line, the baseline marked; better is up/right."""
    from autotune.study.evidence import gather
    from autotune.study.pareto import front

    objectives = view.record.objective_pairs()
    if len(objectives) < 2:
        return None
    trials = view.trials
    (mx, dx), (my, dy) = objectives[0], objectives[1]
    points = front(trials, objectives)
    if not points:
        return None
    by_number = {t.number: t for t in trials}
    every = []  # (x, y) of each eligible configuration measured on both
    for g in gather(trials, mx).values():
        if not g.eligible:
            continue
        xs = [by_number[n].metrics.get(mx) for n in g.trials]
        ys = [by_number[n].metrics.get(my) for n in g.trials]
        xv, yv = [v for v in xs if v is not None], [v for v in ys if v is not None]
        if xv and yv:
            every.append((sorted(xv)[len(xv) // 2], sorted(yv)[len(yv) // 2]))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    ax.scatter([x for x, _ in every], [y for _, y in every], color="silver", label="measured")
    line = sorted(points, key=lambda p: p.values[mx])
    ax.plot(
        [p.values[mx] for p in line],
        [p.values[my] for p in line],
        "o-",
        color="tab:blue",
        label="Pareto front",
        zorder=3,
    )
    for p in points:
        ax.annotate(
            f"#{p.trial}",
            (p.values[mx], p.values[my]),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    base = next((p for p in points if p.baseline), None)
    if base is None:
        base_group = next((g for g in gather(trials, mx).values() if g.baseline), None)
        if base_group is not None and base_group.values:
            bx = base_group.median
            by = [by_number[n].metrics.get(my) for n in base_group.trials]
            byv = sorted(v for v in by if v is not None)
            if bx is not None and byv:
                ax.scatter([bx], [byv[len(byv) // 2]], marker="s", color="grey", label="baseline")
    else:
        ax.scatter(
            [base.values[mx]],
            [base.values[my]],
            marker="s",
            color="grey",
            label="baseline",
            zorder=4,
        )
    if dx == "minimize":
        ax.invert_xaxis()
    if dy == "minimize":
        ax.invert_yaxis()
    ax.set_xlabel(f"{mx} ({dx})")
    ax.set_ylabel(f"{my} ({dy})")
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"{view.name}: Pareto front (better: up and right){_suffix(view)}")
    fig.tight_layout()
    return fig
