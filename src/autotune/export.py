"""The best configuration of a study as something a person can paste: a script, JSON or YAML.

The command is always the real engine's (the driver stores the real argv even for a
simulated study); a simulated study's export says so loudly, because its numbers came from
the stand-in server and not from hardware.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime
from typing import Any, Literal

import optuna
import yaml

from autotune.errors import StudyError
from autotune.records import gain_pct
from autotune.redact import MASK, redact_argv, redact_env
from autotune.study.ledger import Ledger

Format = Literal["sh", "json", "yaml"]
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000  # SGLang's default port
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("autotune")
    except PackageNotFoundError:
        return "unknown"


def _fill(text: str, host: str, port: int) -> str:
    return text.replace("{host}", host).replace("{port}", str(port))


def export_data(
    study: optuna.Study, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> dict[str, Any]:
    """The best ``ok`` trial as a JSON-safe dict (what ``json``/``yaml`` exports print).

    Raises:
        StudyError: the study has no successful trial yet.
    """
    ledger = Ledger(study)
    trials = ledger.trials()
    top = ledger.best(trials)
    if top is None:
        s = ledger.summary(trials)
        raise StudyError(
            f"no successful trial yet in study {study.study_name!r} "
            f"({s.trials} trials: {s.outcomes or 'none'}); "
            "run more trials or see `autotune report` for why they failed"
        )
    stored = ledger.study_record()
    metric, direction = stored.metric, stored.direction
    base = ledger.baseline(trials)
    base_value = base.value if base is not None and base.outcome == "ok" else None
    argv = [_fill(a, host, port) for a in redact_argv(top.argv)]
    env = {k: _fill(v, host, port) for k, v in redact_env(top.env).items()}
    engine = stored.space.get("engine") or {}
    engine = engine if isinstance(engine, dict) else {}
    return {
        "study": study.study_name,
        "trial": top.number,
        "metric": metric,
        "direction": direction,
        "value": top.value,
        "baseline_trial": base.number if base is not None else None,
        "baseline_value": base_value,
        "gain_pct": gain_pct(top.value, base_value, direction),
        "config": dict(top.config),
        "env": env,
        "argv": argv,
        "command": shlex.join(argv),
        "simulated": stored.simulated or top.simulated,
        "engine": stored.engine or engine.get("name"),
        "versions": {"autotune": _version(), "engine": engine.get("version")},
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def export(
    study: optuna.Study,
    fmt: Format = "sh",
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
) -> str:
    """The best ``ok`` trial of ``study`` as a bash script, JSON or YAML.

    Args:
        study: a loaded Optuna study written by the driver.
        fmt: ``sh`` (paste-able launch script), ``json`` or ``yaml``.
        host: fills the ``{host}`` placeholder of the stored command.
        port: fills the ``{port}`` placeholder (the engine's usual port by default).

    Raises:
        StudyError: the study has no successful trial yet.
        ValueError: unknown format.
    """
    data = export_data(study, host=host, port=port)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    if fmt == "sh":
        return render_sh(data)
    raise ValueError(f"unknown export format {fmt!r}; use sh, json or yaml")


def _comment(text: str) -> str:
    return "# " + " ".join(str(text).split())


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _groups(argv: list[str]) -> list[list[str]]:
    """Split argv into the program and one group per option with its values (layout only)."""
    # The program stays on the first line, with its ``-m module`` when it is Python.
    head = 3 if len(argv) >= 3 and argv[1] == "-m" else 1
    groups: list[list[str]] = [list(argv[:head])]
    for arg in argv[head:]:
        starts_option = arg.startswith("--") or re.match(r"^-[A-Za-z]", arg) is not None
        if starts_option and groups[-1]:
            groups.append([])
        groups[-1].append(arg)
    return [g for g in groups if g]


def render_sh(data: dict[str, Any]) -> str:
    """A bash script from :func:`export_data`'s dict: header, exports, the command."""
    lines = ["#!/usr/bin/env bash"]
    study, trial = data["study"], data["trial"]
    lines.append(_comment(f"autotune: best configuration of study {study} (trial {trial})"))
    result = f"{data['metric']} ({data['direction']}): {_fmt(data['value'])}"
    if data.get("baseline_value") is not None:
        result += f" vs baseline {_fmt(data['baseline_value'])}"
        if data.get("gain_pct") is not None:
            result += f" ({data['gain_pct']:+.1f}%)"
    lines.append(_comment(result))
    if data["config"]:
        lines.append(_comment("config: " + " ".join(f"{k}={v}" for k, v in data["config"].items())))
    if data["simulated"]:
        lines.append("# WARNING: SIMULATED study: the numbers above come from the stand-in server")
        lines.append("# (python -m autotune.sim), not from hardware. Measure on the target first.")
    version = data["versions"]["autotune"]
    lines.append(_comment(f"exported {data['exported_at']} by autotune {version}"))
    lines += ["set -euo pipefail", ""]
    for name, value in data["env"].items():
        if not _ENV_NAME.match(name):
            lines.append(_comment(f"skipped env {name!r}: not a valid shell variable name"))
        elif value == MASK:
            # The secret was redacted when stored: use the caller's own, and insist on it.
            lines.append(f'export {name}="${{{name}:?{name} must be set (redacted in the study)}}"')
        else:
            lines.append(f"export {name}={shlex.quote(value)}")
    if data["env"]:
        lines.append("")
    if MASK in data["argv"] or any(a.endswith("=" + MASK) for a in data["argv"]):
        lines.append(f"# NOTE: arguments shown as {MASK} were secrets; put yours in first.")
    groups = _groups(data["argv"])
    if groups:
        body = [shlex.join(g) for g in groups]
        lines.append(" \\\n  ".join(body))
    return "\n".join(lines) + "\n"
