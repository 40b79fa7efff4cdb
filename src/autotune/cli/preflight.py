"""Every flag a space can produce, checked against the engine before anything launches."""

from __future__ import annotations

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
        raise ConfigError(errors[0].message, file=spec.source, field=f"flag {errors[0].flag}")


__all__ = ["all_args", "preflight"]
