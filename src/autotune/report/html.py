"""``autotune report``'s HTML page: one self-contained file that opens offline.

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

import optuna

from autotune.core import fmt
from autotune.report.insights import (
    ablation_path,
    gain_of,
    importances,
    marginal_effects,
    top_configurations,
    trust_note,
)
from autotune.report.sweep import scenarios_html
from autotune.report.tables import failure_groups, is_simulated, summary

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
.muted{color:#666}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _config(config: dict[str, Any]) -> str:
    return "<code>" + _e(fmt.config_text(config)) + "</code>" if config else "<i>defaults</i>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def gain_interval(s: Any) -> tuple[float, float] | None:
    """The 95% interval of the gain in percent, when the study's summary carries one.

    Read loosely (``gain.ci95_pct`` or ``gain_ci``): repeated measurements of the best and
    the baseline, which give the interval, are added to summaries by the study's verdict.
    """
    gain = getattr(s, "gain", None)
    ci = getattr(gain, "ci95_pct", None)
    if ci is None and isinstance(gain, dict):
        ci = gain.get("ci95_pct")
    if ci is None:
        ci = getattr(s, "gain_ci", None)
    if (
        isinstance(ci, list | tuple)
        and len(ci) == 2
        and all(isinstance(x, int | float) for x in ci)
    ):
        return float(ci[0]), float(ci[1])
    return None


def _headline(study: optuna.Study, s: Any) -> str:
    metric = s.metric
    if s.best_trial is None:
        return '<p class="headline bad">No configuration completed successfully yet.</p>'
    text = f"Best {_e(metric)} <b>{_e(fmt.metric(s.best_value))}</b> (trial #{s.best_trial})"
    if s.baseline_value is not None:
        text += f" vs baseline <b>{_e(fmt.metric(s.baseline_value))}</b>"
        if s.gain_pct is not None:
            cls = "good" if s.gain_pct >= 0 else "bad"
            text += f' <span class="{cls}">({s.gain_pct:+.1f}%)</span>'
    ci = gain_interval(s)
    if ci is not None:
        text += f" · 95% confidence interval of the gain: {ci[0]:+.1f}% to {ci[1]:+.1f}%"
    else:
        text += (
            ' <span class="muted">(no confidence interval: the best and the baseline were '
            "each measured once)</span>"
        )
    return f'<p class="headline">{text}</p>'


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


def _top(study: optuna.Study, metric: str) -> str:
    top = top_configurations(study, 10)
    if not top:
        return "<p>No successful trial.</p>"
    body = [
        [
            str(i + 1),
            f"#{r.number}" + (" (baseline)" if r.baseline else ""),
            _e(fmt.metric(r.value)),
            _e(_pct(gain_of(r.value, study))),
            _config(r.config),
        ]
        for i, r in enumerate(top)
    ]
    return _table(["rank", "trial", metric, "vs baseline", "configuration"], body, {0, 2, 3})


def _failures(study: optuna.Study) -> str:
    groups = failure_groups(study)
    if not groups:
        return "<p>No launched trial failed.</p>"
    body = []
    for g in groups:
        hints = "<br>".join(_e(h) for h in g.hints) or '<span class="muted">no hint</span>'
        trials = ", ".join(f"#{n}" for n in g.trials)
        body.append([_e(g.cause), _e(g.phase), str(len(g.trials)), trials, hints, _e(g.example)])
    return _table(["cause", "phase", "count", "trials", "hints", "example"], body, {2})


def _importance(study: optuna.Study, metric: str) -> str:
    effects = marginal_effects(study)
    if not effects:
        return "<p>Too few successful trials with differing settings to say anything.</p>"
    parts = []
    note = trust_note(study)
    if note:
        parts.append(f'<p class="note">{_e(note)}.</p>')
    imp = importances(study)
    body = []
    for e in effects:
        means = ", ".join(
            f"{_e(k)}: {_e(fmt.metric(v))} (n={e.counts[k]})" for k, v in e.means.items()
        )
        fanova = fmt.short(round(imp[e.param], 3)) if e.param in imp else "-"
        body.append([_e(e.param), _e(fmt.metric(e.spread)), _e(e.best_setting), fanova, means])
    parts.append(
        _table(
            ["parameter", f"spread of mean {metric}", "best setting", "fANOVA", "mean per setting"],
            body,
            {1, 3},
        )
    )
    parts.append(
        "<p class=\"muted\">Spread: the best setting's mean minus the worst's, over successful "
        "trials. fANOVA is computed over the parameters every successful trial holds; "
        "conditional parameters show '-'.</p>"
    )
    return "\n".join(parts)


def _ablation(study: optuna.Study, metric: str) -> str:
    steps = ablation_path(study)
    if not steps:
        return "<p>No path: the study needs a successful baseline and a different best.</p>"
    body = []
    for st in steps:
        if st.measured_trial is not None:
            how = f"measured (trial #{st.measured_trial}: {_e(fmt.metric(st.measured))})"
        elif st.conditional:
            how = "left at the engine's default on one side; no trial isolates it"
        elif st.effect is not None:
            how = "estimated: mean of trials with the best's setting minus the baseline's"
        else:
            how = "unknown"
        effect = "-" if st.effect is None else f"{st.effect:+,.4g}"
        body.append(
            [
                f"<code>{_e(st.param)}</code>",
                _e(fmt.short(st.before) if st.before is not None else "(default)"),
                _e(fmt.short(st.after) if st.after is not None else "(default)"),
                _e(effect),
                how,
            ]
        )
    return _table(
        ["change", "baseline", "best", f"effect on {metric} (+ is better)", "evidence"],
        body,
        {3},
    )


def write_html(study: optuna.Study, out: Path, pngs: list[Path]) -> Path:
    """Write ``report.html`` into ``out`` with ``pngs`` embedded; returns its path."""
    s = summary(study)
    metric = str(s.metric)
    by_name = {p.name: p for p in pngs}
    title = f"autotune report: {study.study_name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(s.direction)} {_e(metric)} · {s.trials} trials · '
        + _e(", ".join(f"{n} {k}" for k, n in sorted(s.outcomes.items())))
        + f" · written {datetime.now(UTC).isoformat(timespec='seconds')}</p>",
    ]
    if is_simulated(study):
        parts.append(
            '<p class="sim">SIMULATED: every figure comes from the stand-in server '
            "(python -m autotune.sim), not from hardware.</p>"
        )
    parts.append(_headline(study, s))
    parts.append("<h2>Best configurations</h2>")
    parts.append(_top(study, metric))
    if "pareto_front.png" in by_name:
        parts.append("<h2>Pareto front</h2>")
        parts.append(
            "<p>The configurations no other one beats on every objective; pick one and "
            "export it with <code>autotune export --trial N</code> (all of them: "
            "<code>--pareto</code>).</p>"
        )
        parts.append(_img(by_name["pareto_front.png"], "Pareto front"))
    parts.append("<h2>From the baseline to the best: which changes mattered</h2>")
    parts.append(_ablation(study, metric))
    parts.append("<h2>History by trial number</h2>")
    if "optimization_history.png" in by_name:
        parts.append(_img(by_name["optimization_history.png"], "history by trial number"))
    else:
        parts.append("<p>No successful trial to plot.</p>")
    parts.append("<h2>What the parameters are worth</h2>")
    parts.append(_importance(study, metric))
    if "param_importances.png" in by_name:
        parts.append(_img(by_name["param_importances.png"], "parameter effects"))
    scenarios = scenarios_html(study)
    if scenarios or "sweep_curve.png" in by_name:
        parts.append("<h2>Scenarios and load sweeps</h2>")
        parts.append(scenarios)
        if "sweep_curve.png" in by_name:
            parts.append(_img(by_name["sweep_curve.png"], "throughput and latency against load"))
    parts.append("<h2>Failures by cause and phase</h2>")
    parts.append(_failures(study))
    if "outcomes.png" in by_name:
        parts.append(_img(by_name["outcomes.png"], "outcomes"))
    parts.append("</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
