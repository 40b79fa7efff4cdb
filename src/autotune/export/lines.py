"""The lines every export format writes: the comment header (result, configuration, versions,
GPU, date), the command shell-quoted one option per line, and environment assignments in
which a redacted secret must come from the caller's environment.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from autotune.core.fmt import config_text
from autotune.core.fmt import metric as fmt_metric
from autotune.core.redact import MASK

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def comment(text: str) -> str:
    """One ``#`` comment line (newlines folded: a value must never end the comment)."""
    return "# " + " ".join(str(text).split())


def header(data: dict[str, Any], title: str) -> list[str]:
    """The comment lines every format starts with: result, config, versions, GPU, date."""
    lines = [comment(f"autotune: {title} of study {data['study']} (trial {data['trial']})")]
    result = f"{data['metric']} ({data['direction']}): {fmt_metric(data['value'])}"
    if data.get("baseline_value") is not None and not data.get("is_baseline"):
        result += f" vs baseline {fmt_metric(data['baseline_value'])}"
        if data.get("gain_pct") is not None:
            result += f" ({data['gain_pct']:+.1f}%)"
    lines.append(comment(result))
    if data.get("pareto"):
        values = ", ".join(f"{m} {fmt_metric(v)}" for m, v in data["pareto"].items())
        lines.append(comment(f"on the Pareto front: {values} (median over launches)"))
    if data.get("verdict"):
        lines.append(comment(data["verdict"]))
    if data.get("is_baseline") and data.get("gain") is not None:
        lines.append(comment("this is the BASELINE: keep your current configuration"))
    if data["config"]:
        lines.append(comment("config: " + config_text(data["config"])))
    engine_version = data["versions"].get("engine") or "unknown version"
    lines.append(comment(f"engine: {data.get('engine') or 'unknown'} {engine_version}"))
    lines.append(comment(f"GPU: {data['gpu']}"))
    if data["simulated"]:
        lines.append("# WARNING: SIMULATED study: the numbers above come from the stand-in server")
        lines.append("# (python -m autotune.sim), not from hardware. Measure on the target first.")
    version = data["versions"]["autotune"]
    lines.append(comment(f"exported {data['exported_at']} by autotune {version}"))
    return lines


def has_masked(argv: list[str]) -> bool:
    return MASK in argv or any(a.endswith("=" + MASK) for a in argv)


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


def command_lines(argv: list[str], indent: str = "  ") -> str:
    """``argv`` shell-quoted, one option per continued line."""
    return (" \\\n" + indent).join(shlex.join(g) for g in _groups(argv))


def env_lines(env: dict[str, str], prefix: str = "export ") -> list[str]:
    """Shell assignments; a redacted secret must come from the caller's own environment."""
    lines = []
    for name, value in env.items():
        if not ENV_NAME.match(name):
            lines.append(comment(f"skipped env {name!r}: not a valid shell variable name"))
        elif value == MASK:
            lines.append(
                f'{prefix}{name}="${{{name}:?{name} must be set (redacted in the study)}}"'
            )
        else:
            lines.append(f"{prefix}{name}={shlex.quote(value)}")
    return lines


__all__ = ["ENV_NAME", "command_lines", "comment", "env_lines", "has_masked", "header"]
