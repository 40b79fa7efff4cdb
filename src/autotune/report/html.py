"""``autotune report``'s HTML page: one self-contained file that opens offline.

Every figure on the page comes from the study's summary (``StudyView.summary``, built once
from storage): the headline, the table and the baseline row show the same numbers for the
same configuration, each with what it stands on (a confirmed median, or the search's single
launch or median). A gain is printed only between confirmed figures, with its interval, and
the verdict's gain with its own interval; a search figure is never set against a confirmed one.

Plots are embedded as base64 PNG; there is no script, stylesheet or font to fetch. Every
text that came from a trial (configurations, hints, messages) is HTML-escaped and already
redacted where it was stored.
"""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autotune.core import fmt
from autotune.core.summary import Configuration, Figure, FigureKind, StudySummary, StudyView
from autotune.report.insights import (
    baseline_median,
    marginal_effects,
    one_change_moves,
    trust_note,
)
from autotune.report.sweep import scenarios_html
from autotune.report.tables import failure_groups

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;
 color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.8em;
 border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;word-break:break-word}
.headline{font-size:1.2em;margin:.6em 0} .good{color:#17803d} .bad{color:#b42318}
.note{background:#fff7e0;border-left:4px solid #e0a800;padding:.4em .8em;margin:.6em 0}
.sim{background:#fde8ff;border-left:4px solid #a200b8;padding:.4em .8em;font-weight:bold}
img{max-width:100%;height:auto;border:1px solid #eee;margin:.4em 0}
.muted{color:#666} .small{font-size:.85em}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _config(config: dict[str, Any]) -> str:
    return "<code>" + _e(fmt.config_text(config)) + "</code>" if config else "<i>defaults</i>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _figure(f: Figure | None, empty: str = "-") -> str:
    """``1,330.2 <small>median of 3 confirmation launches</small>``."""
    if f is None:
        return f'<span class="muted">{_e(empty)}</span>'
    return f'{_e(fmt.metric(f.value))} <span class="muted small">{_e(f.describe())}</span>'


def _headline(s: StudySummary) -> str:
    if s.answer is None:
        return '<p class="headline bad">No configuration completed successfully yet.</p>'
    kind = s.figure_kind
    answer = s.answer.confirmed if s.confirmed else s.answer.search
    base = None
    if s.baseline is not None:
        base = s.baseline.confirmed if s.confirmed else s.baseline.search
    who = "Keep the baseline" if s.answer.baseline else f"Run trial #{s.answer.trial}"
    text = f"{who}: {_e(s.metric)} <b>{_figure(answer or s.answer.figure)}</b>"
    if base is not None and not s.answer.baseline:
        text += f" vs baseline <b>{_figure(base)}</b>"
    parts = [f'<p class="headline">{text}</p>']
    searched = next((c for c in s.configurations if c.trial == s.search_best_trial), None)
    if s.answer.baseline and searched is not None and not searched.baseline:
        # The verdict's gain is about the search's best: say which, and its figure.
        figure = (searched.confirmed if s.confirmed else searched.search) or searched.figure
        parts.append(f"<p>The best candidate, trial #{searched.trial}: {_figure(figure)}</p>")
    cls = "good" if s.beats_baseline else "bad"
    verdict = s.verdict if s.verdict else "no baseline ran: no gain can be claimed"
    parts.append(f'<p class="{cls}">{_e(verdict)}</p>')
    lost = s.gain is not None and s.gain.ci95_pct[1] < 0
    if kind is FigureKind.SEARCH and lost:
        parts.append(
            '<p class="note">Not confirmed: on the search\'s own launches the baseline beat '
            "every candidate beyond noise, so no launches were spent confirming one.</p>"
        )
    elif kind is FigureKind.SEARCH and s.gain is not None:
        parts.append(
            '<p class="note">Not confirmed: these figures are the search\'s own launches, '
            "and the interval is widened for every configuration the best was picked "
            "from. Run with confirmation (the default) for fresh, interleaved launches.</p>"
        )
    return "\n".join(parts)


def _table(head: list[str], body: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for row in body:
        cells = "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)


def _gain_cell(c: Configuration) -> str:
    if c.baseline:
        return '<span class="muted">the reference</span>'
    if c.gain is not None:
        cls = "good" if c.gain.significant else "muted"
        return f'<span class="{cls}">{_e(c.gain.interval_text())}</span>'
    if c.confirmed is None:
        return '<span class="muted">not confirmed: no gain stated</span>'
    return '<span class="muted">-</span>'


def _rows(s: StudySummary) -> list[Configuration]:
    """The configurations to list: the summary's, and the baseline when it is not among them."""
    rows = list(s.configurations)
    if s.baseline is not None and all(c.trial != s.baseline.trial for c in rows):
        rows.append(s.baseline)
    return rows


def _top(s: StudySummary) -> str:
    rows = _rows(s)
    if not rows:
        return "<p>No successful trial.</p>"
    body = []
    for i, c in enumerate(rows):
        mark = " (baseline)" if c.baseline else ""
        mark += " <b>answer</b>" if s.answer is not None and c.trial == s.answer.trial else ""
        body.append(
            [
                str(i + 1),
                f"#{c.trial}{mark}",
                _figure(c.search),
                _figure(c.confirmed, "not confirmed"),
                _gain_cell(c),
                _e(c.status),
                _config(c.config),
            ]
        )
    head = [
        "rank",
        "trial",
        f"{s.metric}, search",
        f"{s.metric}, confirmed",
        "gain over the baseline (confirmed, 95% CI)",
        "confirmation",
        "configuration",
    ]
    note = (
        '<p class="muted small">Search figures rank the configurations: one launch each, or '
        "the median of a few. Gains are stated only between confirmed figures, measured in "
        "the same interleaved rounds as the baseline's; a gain compares the geometric means "
        "of the launches (Welch's interval on their logarithms), so it can differ a little "
        "from the ratio of the medians shown.</p>"
    )
    return _table(head, body, {0}) + note


def _ablation(s: StudySummary) -> str:
    a = s.ablation
    if a is None:
        return "<p>No ablation was run for this study.</p>"
    if a.skipped:
        return f"<p>{_e(a.skipped)}</p>"
    body = []
    for st in a.steps:
        if st.contribution is not None:
            cls = "good" if st.contribution.significant else "muted"
            effect = f'<span class="{cls}">{_e(st.contribution.interval_text())}</span>'
        else:
            effect = f'<span class="bad">{_e(st.failed or "no value")}</span>'
        body.append(
            [
                f"<code>{_e(st.param)}</code>",
                _e(fmt.short(st.winner_value) if st.winner_value is not None else "(unset)"),
                _e(fmt.short(st.baseline_value) if st.baseline_value is not None else "(unset)"),
                effect,
            ]
        )
    intro = (
        f"<p>Each change of the answer (trial #{a.winner}) reverted to the baseline's value, "
        f"one at a time, and relaunched interleaved with the answer: {a.rounds} round(s), "
        f"{a.launches} launches. The contribution is the answer's gain over it (positive: "
        "the change helps).</p>"
    )
    return intro + _table(["change", "answer", "reverted to", "contribution (95% CI)"], body, set())


def _failures(view: StudyView) -> str:
    groups = failure_groups(view)
    if not groups:
        return "<p>No launched trial failed.</p>"
    body = []
    for g in groups:
        hints = "<br>".join(_e(h) for h in g.hints) or '<span class="muted">no hint</span>'
        trials = ", ".join(f"#{n}" for n in g.trials)
        body.append([_e(g.cause), _e(g.phase), str(len(g.trials)), trials, hints, _e(g.example)])
    return _table(["cause", "phase", "count", "trials", "hints", "example"], body, {2})


def _moves(view: StudyView) -> str:
    moves = one_change_moves(view)
    if not moves:
        return ""
    metric = view.record.metric
    median, launches = baseline_median(view)
    body = []
    if median is not None:
        said = f"{_e(fmt.metric(median))} (median of {launches} launches)"
        body.append(["(baseline)", "", "", "", said])
    for m in moves:
        if m.value is None:
            measured = _e(m.cause or m.outcome)
        elif m.outcome == "pruned":
            measured = f"{_e(fmt.metric(m.value))} (pruned after {m.windows} window(s))"
        else:
            measured = _e(fmt.metric(m.value))
        change = f"{_e(fmt.short(m.before))} → {_e(fmt.short(m.after))}"
        if m.along:
            change += f' <span class="muted small">({_e(fmt.config_text(m.along))})</span>'
        body.append([_e(m.param), change, f"#{m.trial}", _e(m.outcome), measured])
    note = (
        '<p class="muted">Each row is a search launch that changed one setting of the baseline '
        "(what the engine chose for the settings the baseline leaves unset included) and "
        "nothing else, best first: single launches, where to look, not gains (those are "
        "stated only between confirmed figures); a pruned launch shows the mean of the "
        "windows it ran.</p>"
    )
    return (
        _table(["setting", "baseline → this launch", "trial", "outcome", metric], body, {4}) + note
    )


def _importance(view: StudyView, importances: dict[str, float]) -> str:
    effects = marginal_effects(view)
    if not effects:
        return "<p>Too few successful trials with differing settings to say anything.</p>"
    metric = view.record.metric
    parts = []
    note = trust_note(view)
    if note:
        parts.append(f'<p class="note">{_e(note)}.</p>')
    body = []
    for e in effects:
        means = ", ".join(
            f"{_e(k)}: {_e(fmt.metric(v))} (n={e.counts[k]})" for k, v in e.means.items()
        )
        fanova = fmt.short(round(importances[e.param], 3)) if e.param in importances else "-"
        body.append([_e(e.param), _e(fmt.metric(e.spread)), _e(e.best_setting), fanova, means])
    parts.append(
        _table(
            ["parameter", f"spread of mean {metric}", "best setting", "fANOVA", "mean per setting"],
            body,
            {1, 3},
        )
    )
    parts.append(
        '<p class="muted">Means over the search\'s single launches: where to look, not what a '
        "change is worth (the ablation above says that). Spread: the best setting's mean "
        "minus the worst's. fANOVA is computed over the parameters every successful trial "
        "holds; conditional parameters show '-'.</p>"
    )
    return "\n".join(parts)


def _head(view: StudyView) -> list[str]:
    s = view.summary
    title = f"autotune report: {view.name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(s.direction)} {_e(s.metric)} · {s.trials} trials · '
        + _e(", ".join(f"{n} {k}" for k, n in sorted(s.outcomes.items())))
        + f" · written {datetime.now(UTC).isoformat(timespec='seconds')}</p>",
    ]
    if view.simulated:
        parts.append(
            '<p class="sim">SIMULATED: every figure comes from the stand-in server '
            "(python -m autotune.sim), not from hardware.</p>"
        )
    return parts


def write_html(view: StudyView, importances: dict[str, float], out: Path, pngs: list[Path]) -> Path:
    """Write ``report.html`` into ``out`` with ``pngs`` embedded; returns its path."""
    s = view.summary
    by_name = {p.name: p for p in pngs}
    parts = _head(view)
    parts.append(_headline(s))
    parts += ["<h2>Best configurations</h2>", _top(s)]
    if "pareto_front.png" in by_name:
        parts.append("<h2>Pareto front</h2>")
        parts.append(
            "<p>The configurations no other one beats on every objective; pick one and "
            "export it with <code>autotune export --trial N</code> (all of them: "
            "<code>--pareto</code>).</p>"
        )
        parts.append(_img(by_name["pareto_front.png"], "Pareto front"))
    parts += ["<h2>What each change of the answer contributes</h2>", _ablation(s)]
    parts.append("<h2>History by trial number</h2>")
    if "optimization_history.png" in by_name:
        parts.append(_img(by_name["optimization_history.png"], "history by trial number"))
    else:
        parts.append("<p>No successful trial to plot.</p>")
    moves = _moves(view)
    if moves:
        parts += ["<h2>One change at a time from the baseline</h2>", moves]
    parts += ["<h2>What the parameters are worth</h2>", _importance(view, importances)]
    if "param_importances.png" in by_name:
        parts.append(_img(by_name["param_importances.png"], "parameter effects"))
    scenarios = scenarios_html(view)
    if scenarios or "sweep_curve.png" in by_name:
        parts += ["<h2>Scenarios and load sweeps</h2>", scenarios]
        if "sweep_curve.png" in by_name:
            parts.append(_img(by_name["sweep_curve.png"], "throughput and latency against load"))
    parts += ["<h2>Failures by cause and phase</h2>", _failures(view)]
    if "outcomes.png" in by_name:
        parts.append(_img(by_name["outcomes.png"], "outcomes"))
    parts.append("</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


__all__ = ["write_html"]
