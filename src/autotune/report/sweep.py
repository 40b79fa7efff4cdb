"""Scenarios and load sweeps in the report: each scenario's figures, and the sweep curve.

A study whose space declares scenarios keeps each one's metrics under its name; a swept
scenario keeps every load it measured (``TrialRecord.scenarios``). The report shows them for
the best trial beside the baseline: a table of each scenario's headline figures, and a plot
of throughput and p99 latency against load, with the loads that met every SLO filled in and
the highest of them marked. Simulated studies say so in the plot's title.

Each function reads a ``StudyView`` (the study read once).
"""

from __future__ import annotations

from html import escape
from typing import Any

from autotune.core import fmt
from autotune.core.records import TrialRecord
from autotune.core.summary import StudyView
from autotune.report.tables import SIMULATED_LABEL

_HEADLINE = (
    "output_tok_s",
    "request_s",
    "goodput_req_s",
    "ttft_p99_ms",
    "itl_p99_ms",
    "max_concurrency_under_slo",
    "max_rate_under_slo",
)


def _subjects(view: StudyView) -> list[tuple[str, TrialRecord]]:
    """The answer, the search's best when the answer is not it (not beyond noise), and the
    baseline: each once (the first launch of each), those with scenarios."""
    by_number = {r.number: r for r in view.trials}
    s = view.summary
    picks = [
        ("best", s.best_trial),
        ("search's best", s.search_best_trial),
        ("baseline", s.baseline_trial),
    ]
    out: list[tuple[str, TrialRecord]] = []
    for label, number in picks:
        record = by_number.get(number) if number is not None else None
        if record is not None and all(r.number != number for _, r in out):
            out.append((f"{label} (trial {number})", record))
    return [(label, r) for label, r in out if r.scenarios]


def scenario_rows(view: StudyView) -> list[list[str]]:
    """``[trial, scenario, metric, value]`` rows for the best trial and the baseline."""
    rows: list[list[str]] = []
    for label, record in _subjects(view):
        for scenario in record.scenarios:
            metrics = scenario.get("metrics") or {}
            for key in _HEADLINE:
                if key in metrics:
                    rows.append(
                        [label, scenario.get("name") or "(workload)", key, fmt.metric(metrics[key])]
                    )
    return rows


def scenarios_html(view: StudyView) -> str:
    """An HTML table of :func:`scenario_rows`; empty when the study has no scenarios."""
    rows = scenario_rows(view)
    if not rows:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in ("trial", "scenario", "metric", "value"))
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def scenario_lines(record: TrialRecord) -> list[str]:
    """One line per scenario of a trial (headline figures), and one per sweep (each load it
    measured and whether that load met every SLO); empty without scenarios."""
    lines = []
    for scenario in record.scenarios:
        metrics = scenario.get("metrics") or {}
        figures = " · ".join(f"{k} {fmt.metric(metrics[k])}" for k in _HEADLINE if k in metrics)
        lines.append(f"{scenario.get('name') or 'workload'}: {figures}")
        steps = sorted(scenario.get("steps") or [], key=lambda s: s["load"])
        if steps:
            marks = " · ".join(
                f"{fmt.metric(s['load'])} {'ok' if s.get('meets_slo') else 'miss'}" for s in steps
            )
            lines.append(f"  {scenario.get('over') or 'load'} sweep: {marks}")
    return lines


def sweep_figure(view: StudyView) -> Any:
    """Throughput and p99 TTFT against load for every swept scenario of the best trial and
    the baseline; None when nothing swept."""
    panels = [
        (label, s) for label, record in _subjects(view) for s in record.scenarios if s.get("steps")
    ]
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 3.6 * len(panels)), squeeze=False)
    for ax, (label, scenario) in zip(axes[:, 0], panels, strict=True):
        steps = sorted(scenario["steps"], key=lambda s: s["load"])
        loads = [s["load"] for s in steps]
        tput = [s["metrics"].get("output_tok_s", 0.0) for s in steps]
        ttft = [s["metrics"].get("ttft_p99_ms") for s in steps]
        ok = [bool(s.get("meets_slo")) for s in steps]
        ax.plot(loads, tput, color="tab:blue", label="output tok/s")
        ax.scatter(
            loads,
            tput,
            facecolors=["tab:blue" if o else "none" for o in ok],
            edgecolors="tab:blue",
            zorder=3,
        )
        right = ax.twinx()
        right.plot(
            [x for x, y in zip(loads, ttft, strict=True) if y is not None],
            [y for y in ttft if y is not None],
            color="tab:red",
            linestyle="--",
            marker=".",
            label="TTFT p99 (ms)",
        )
        if loads and min(loads) > 0 and max(loads) / min(loads) >= 8:
            ax.set_xscale("log", base=2)  # loads of a sweep or bisection span decades
        right.set_ylabel("TTFT p99 (ms)", color="tab:red")
        over = scenario.get("over") or "load"
        best_load = (scenario.get("metrics") or {}).get(f"max_{over}_under_slo")
        if best_load:
            ax.axvline(best_load, color="tab:green", linewidth=1, label="highest load in SLO")
        ax.set_xlabel(over)
        ax.set_ylabel("output tok/s", color="tab:blue")
        name = scenario.get("name") or "workload"
        ax.set_title(f"{name}, {label}: filled = met every SLO", fontsize=9)
        ax.legend(loc="upper left", fontsize=8)
    suffix = f" {SIMULATED_LABEL}" if view.simulated else ""
    fig.suptitle(f"{view.name}: throughput and latency against load{suffix}", fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["scenario_lines", "scenario_rows", "scenarios_html", "sweep_figure"]
