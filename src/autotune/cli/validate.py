"""``autotune validate`` and ``autotune schema``: check a space file; print its JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from autotune.cli.app import app, console, err
from autotune.cli.output import objective_text
from autotune.cli.preflight import preflight
from autotune.errors import ConfigError

FileArg = Annotated[
    Path | None, typer.Argument(help="The search-space YAML file.", show_default=False)
]
SpaceOpt = Annotated[
    Path | None,
    typer.Option("--space", help="The same file, named as `start` takes it.", show_default=False),
]


@app.command()
def validate(file: FileArg = None, space_opt: SpaceOpt = None) -> None:
    """Check a space file (and its flags against the engine's table); launches nothing."""
    from autotune.engines import get_engine
    from autotune.space.load import check, load

    if file is not None and space_opt is not None:
        raise ConfigError("give the space file once: as FILE or as --space FILE", field="validate")
    space = file or space_opt
    if space is None:
        raise ConfigError(
            "no space file: autotune validate FILE (or --space FILE)", field="validate"
        )
    problems = check(space)
    for problem in problems[:-1]:
        err.print(f"autotune: error: {problem}", markup=False, highlight=False)
    if problems:
        raise problems[-1]
    spec = load(space)
    preflight(get_engine(spec.engine), spec)
    n = len(spec.parameters)
    console.print(
        f"[green]ok[/] {space}: engine {spec.engine.name}, {n} parameter{'s' * (n != 1)}, "
        f"{len(spec.constraints)} constraint(s), objective {objective_text(spec)}"
        f"{_scenarios_note(spec)}"
    )


def _scenarios_note(spec: Any) -> str:
    """``, scenarios chat, long (worst)`` or ``, sweep over rate (max_under_slo)``."""
    if spec.scenarios:
        how = spec.combine.how if spec.combine is not None else "weighted_mean"
        return f", scenarios {', '.join(s.name for s in spec.scenarios)} ({how})"
    if spec.sweep is not None:
        return f", sweep over {spec.sweep.over} ({spec.sweep.mode})"
    return ""


@app.command()
def schema() -> None:
    """Print the JSON Schema of space files (for editors)."""
    from autotune.space.load import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")


__all__ = ["schema", "validate"]
