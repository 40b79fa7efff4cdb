"""The best configurations of a study as something a person can paste.

Formats: ``sh`` (a launch script), ``env`` (the environment alone), ``json``, ``yaml``,
``docker`` (a ``docker run`` script) and ``k8s`` (a Deployment manifest); ``docker`` and
``k8s`` are rendered by ``export/deploy.py``. Every format carries the exact argv and
environment the trial ran with (shell-quoted where a shell reads them), secrets redacted, and
as comments the engine version, the GPU and the date.

The command is always the real engine's (the driver stores the real argv even for a
simulated study); a simulated study's export says so loudly, because its numbers came from
the stand-in server and not from hardware.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import optuna
import yaml

from autotune.core.fmt import clean_config
from autotune.core.records import TrialRecord
from autotune.core.redact import MASK, redact_argv, redact_env
from autotune.core.summary import Configuration, Figure, FigureKind, StudyView
from autotune.errors import ConfigError, StudyError
from autotune.export import deploy as export_deploy
from autotune.export.lines import ENV_NAME, command_lines, comment, env_lines, has_masked, header
from autotune.study.ledger import Ledger

Format = Literal["sh", "env", "json", "yaml", "docker", "k8s"]
FORMATS: tuple[str, ...] = get_args(Format)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000  # SGLang's default port


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("autotune")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _fill(text: str, host: str, port: int) -> str:
    return text.replace("{host}", host).replace("{port}", str(port))


def _gpu(record: TrialRecord, simulated: bool) -> str:
    if record.gpu:
        return record.gpu
    return "stand-in server (simulated)" if simulated else "not recorded"


def _chosen(view: StudyView, rank: int, trial: int | None) -> tuple[TrialRecord, Configuration]:
    """The record (its argv, env, GPU) and the figures of what to export."""
    s = view.summary
    by_number = {t.number: t for t in view.trials}
    if trial is not None:
        record = by_number.get(trial)
        if record is None or record.outcome != "ok":
            state = record.label if record is not None else "no such trial"
            raise StudyError(
                f"trial {trial} of study {view.name!r} cannot be exported ({state}); "
                "pick an ok trial from `autotune status`"
            )
        known = next((c for c in s.configurations if c.trial == trial), None)
        if known is None:  # its own launch: a search figure, no gain stated
            one = Figure(value=record.value or 0.0, kind=FigureKind.SEARCH, launches=1)
            known = Configuration(trial=trial, config=record.config, search=one)
        return record, known
    if not s.configurations:
        raise StudyError(
            f"no successful trial yet in study {view.name!r} "
            f"({s.trials} trials: {s.outcomes or 'none'}); "
            "run more trials or see `autotune report` for why they failed"
        )
    if len(s.configurations) < rank:
        raise StudyError(
            f"study {view.name!r} has only {len(s.configurations)} successful configuration(s)"
        )
    c = s.configurations[rank - 1]
    return by_number[c.trial], c


def export_data(
    view: StudyView,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    rank: int = 1,
    trial: int | None = None,
) -> dict[str, Any]:
    """The ``rank``-th configuration to recommend as a JSON-safe dict (what ``json``/``yaml``
    print), its figures as the study's summary has them.

    Rank 1 is the study's answer (the baseline when nothing beat it beyond noise); further
    ranks are the summary's other configurations. ``trial``: export that trial's
    configuration instead (e.g. one from the Pareto front). ``value`` is the configuration's
    confirmed figure when it has one, else its search figure (``figure`` says which); the
    gain is the verdict's for the answer, the confirmed gain for another confirmed
    configuration, and none for a search figure.

    Raises:
        StudyError: the study has no successful trial yet (or fewer than ``rank``
            configurations), or ``trial`` did not run ok.
    """
    s = view.summary
    top, c = _chosen(view, rank, trial)
    answer = trial is None and rank == 1  # the study's answer: its gain and verdict apply
    figure = c.figure
    base = s.baseline
    base_figure = None
    if base is not None and figure is not None:
        base_figure = base.confirmed if figure.kind is FigureKind.CONFIRMED else base.search
    gain = s.gain if answer else c.gain
    argv = [_fill(a, host, port) for a in redact_argv(top.argv)]
    env = {k: _fill(v, host, port) for k, v in redact_env(top.env).items()}
    stored = view.record
    engine = stored.space.get("engine") or {}
    engine = engine if isinstance(engine, dict) else {}
    simulated = stored.simulated or top.simulated
    return {
        "study": view.name,
        "rank": rank,
        "trial": top.number,
        "metric": stored.metric,
        "direction": stored.direction.value,
        "value": figure.value if figure is not None else top.value,
        "figure": figure.model_dump(mode="json") if figure is not None else None,
        "baseline_trial": s.baseline_trial,
        "baseline_value": base_figure.value if base_figure is not None else None,
        "gain_pct": gain.pct if gain is not None else None,
        # The study's answer carries the verdict: the gain of the search's best over the
        # baseline with its 95% interval; when it is not significant the exported
        # configuration is the baseline (``is_baseline``).
        "gain": gain.model_dump(mode="json") if gain is not None else None,
        "verdict": s.verdict if answer else None,
        "is_baseline": c.baseline,
        "config": clean_config(top.config),
        "env": env,
        "argv": argv,
        "command": shlex.join(argv),
        "simulated": simulated,
        "engine": stored.engine or engine.get("name"),
        "gpus": int(engine.get("gpus") or 0),
        "gpu": _gpu(top, simulated),
        "versions": {"autotune": _version(), "engine": top.engine_version or engine.get("version")},
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def export(
    study: optuna.Study,
    fmt: Format = "sh",
    *,
    host: str | None = None,
    port: int = DEFAULT_PORT,
    top: int = 1,
    trial: int | None = None,
    pareto: bool = False,
) -> str:
    """The best configuration(s) of ``study`` (or ``trial``) in one of :data:`FORMATS`.

    Args:
        study: a loaded Optuna study written by the driver.
        fmt: ``sh``, ``env``, ``json``, ``yaml``, ``docker`` or ``k8s``.
        host: fills the ``{host}`` placeholder (``0.0.0.0`` in a container, else 127.0.0.1).
        port: fills the ``{port}`` placeholder (the engine's usual port by default).
        top: how many configurations, best first (``json`` and ``yaml``: a list; ``sh`` and
            ``docker``: one function per rank; ``k8s``: one Deployment per rank).
        trial: export this trial's configuration instead of the best (one configuration).
        pareto: export every member of a multi-objective study's Pareto front (as ``top``
            does for ranks: a list, one function or one Deployment each).

    Raises:
        StudyError: the study has no successful trial yet, or ``pareto`` for a study with
            one objective.
        ConfigError: unknown format, ``top`` < 1, or ``env`` or ``trial`` asked for more
            than one.
    """
    if fmt not in FORMATS:
        raise ConfigError(
            f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}", field="--format"
        )
    if top < 1:
        raise ConfigError(f"must be at least 1, got {top}", field="--top")
    if fmt == "env" and top > 1:
        raise ConfigError(
            "--format env holds one configuration; use --top with another format", field="--top"
        )
    if trial is not None and top > 1:
        raise ConfigError("--trial exports one configuration; leave out --top", field="--top")
    in_container = fmt in ("docker", "k8s")
    where = host or ("0.0.0.0" if in_container else DEFAULT_HOST)
    view = Ledger(study).view()
    if pareto:
        if trial is not None or top > 1 or fmt == "env":
            raise ConfigError(
                "--pareto exports every front member; leave out --trial and --top, and use "
                "a format other than env",
                field="--pareto",
            )
        ranked = pareto_data(view, host=where, port=port)
        return _render(fmt, ranked, port, many=True)
    first = export_data(view, host=where, port=port, trial=trial)
    n = min(top, len(view.summary.configurations)) if trial is None else 1
    ranked = [first] + [export_data(view, host=where, port=port, rank=r) for r in range(2, n + 1)]
    return _render(fmt, ranked, port, many=top > 1)


def pareto_data(
    view: StudyView, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> list[dict[str, Any]]:
    """Every member of the Pareto front as ``export_data`` gives it, with its ``pareto``
    values (the median of each objective over its launches) and ``rank`` its place.

    Raises:
        StudyError: a study with one objective, or no front yet.
    """
    if len(view.record.objectives) < 2:
        raise StudyError(
            f"study {view.name!r} has one objective: it has no Pareto front to export "
            "(declare several under objective.metrics; for a trade-off against a latency "
            "see `autotune status --pareto METRIC` and export one with --trial N)"
        )
    points = view.summary.pareto or []
    if not points:
        raise StudyError(
            f"study {view.name!r} has no Pareto front yet: no eligible configuration "
            "measured every objective"
        )
    out = []
    for i, point in enumerate(points, 1):
        data = export_data(view, host=host, port=port, trial=point.trial)
        out.append({**data, "rank": i, "pareto": point.values})
    return out


def _render(fmt: str, ranked: list[dict[str, Any]], port: int, *, many: bool) -> str:
    first = ranked[0]
    if fmt == "json":
        return json.dumps(ranked if many else first, indent=2) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(ranked if many else first, sort_keys=False))
    if fmt == "env":
        return render_env(first)
    if fmt == "docker":
        return export_deploy.render_docker(ranked, port)
    if fmt == "k8s":
        return export_deploy.render_k8s(ranked, port)
    return render_sh(ranked)


def _sh_body(data: dict[str, Any], indent: str = "") -> list[str]:
    lines = [indent + line for line in env_lines(data["env"])]
    if has_masked(data["argv"]):
        lines.append(f"{indent}# NOTE: arguments shown as {MASK} were secrets; put yours in first.")
    if data["argv"]:
        lines.append(indent + command_lines(data["argv"], indent + "  "))
    return lines


def render_sh(ranked: list[dict[str, Any]]) -> str:
    """A bash script: the best configuration, or one function per rank (``bash f.sh rank2``)."""
    data = ranked[0]
    title = "Pareto front, first member" if data.get("pareto") else "best configuration"
    lines = ["#!/usr/bin/env bash", *header(data, title)]
    lines += ["set -euo pipefail", ""]
    if len(ranked) == 1:
        env_part = env_lines(data["env"])
        lines += env_part + ([""] if env_part else [])
        if has_masked(data["argv"]):
            lines.append(f"# NOTE: arguments shown as {MASK} were secrets; put yours in first.")
        if data["argv"]:
            lines.append(command_lines(data["argv"]))
        return "\n".join(lines) + "\n"
    for d in ranked:
        lines += header(d, f"rank {d['rank']}")[:3]
        lines.append(f"rank{d['rank']}() {{")
        lines += _sh_body(d, "  ")
        lines += ["}", ""]
    names = " ".join(f"rank{d['rank']}" for d in ranked)
    lines.append(f'# Usage: bash "$0" [{names.replace(" ", "|")}]  (default rank1)')
    lines.append('case "${1:-rank1}" in')
    lines.append(f'  {names.replace(" ", "|")}) "${{1:-rank1}}" ;;')
    lines.append(f'  *) echo "usage: $0 [{names.replace(" ", "|")}]" >&2; exit 2 ;;')
    lines.append("esac")
    return "\n".join(lines) + "\n"


def render_env(data: dict[str, Any]) -> str:
    """The environment alone, as ``NAME=value`` lines a shell can source (``set -a; . f``)."""
    lines = header(data, "environment of the best configuration")
    lines.append(comment("command: " + shlex.join(data["argv"])))
    for name, value in data["env"].items():
        if not ENV_NAME.match(name):
            lines.append(comment(f"skipped env {name!r}: not a valid shell variable name"))
        elif value == MASK:
            lines.append(comment(f"{name} was redacted in the study: set your own"))
        else:
            lines.append(f"{name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"
