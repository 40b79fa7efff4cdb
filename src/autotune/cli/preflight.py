"""Every flag a space can produce, checked against the engine before anything launches."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from autotune.cli.app import err
from autotune.errors import ConfigError

if TYPE_CHECKING:
    from autotune.engines.base import Engine
    from autotune.space.schema import StudySpec


def all_args(spec: StudySpec) -> list[str]:
    """Every argument any configuration can produce (for preflight and GPU counting)."""
    args = list(spec.fixed.args)
    for p in spec.parameters:
        if p.flag:
            args.append(p.flag)
        for launch in (p.map or {}).values():
            args.extend(launch.args)
    return args


def preflight(engine: Engine, spec: StudySpec, help_text: str | None = None) -> None:
    """Check every flag the space can produce against the engine's ``--help`` (given, else
    this machine's when the engine is installed here) or its bundled flag table.

    Raises:
        ConfigError: a flag the engine does not take, located in the space file.
    """
    from autotune.engines.preflight import engine_help
    from autotune.engines.preflight import preflight as check

    text = help_text if help_text is not None else engine_help(engine)
    findings = check(engine, all_args(spec), help_text=text)
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        if f.level != "error":
            err.print(f"[yellow]preflight:[/] {f.message}")
    if errors:
        flag = errors[0].flag
        line = _line_of(spec.source, flag)
        raise ConfigError(errors[0].message, file=spec.source, line=line, field=f"flag {flag}")


def _line_of(source: str | None, flag: str) -> int | None:
    """The first line of the space file that names ``flag`` (as a whole word), if any."""
    if not source or not flag.startswith("-"):
        return None
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError:  # unreadable here: the error is still located by its file and field
        return None
    pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line.split("#", 1)[0]):
            return number
    return None


__all__ = ["all_args", "preflight"]
