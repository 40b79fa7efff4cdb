"""``autotune diagnose``: why a server failed, read from its saved log (``diagnosis.py``)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from autotune.cli.app import app, console
from autotune.errors import ConfigError

if TYPE_CHECKING:
    from autotune.diagnosis import Diagnosis
    from autotune.models import Failure

_logger = logging.getLogger(__name__)

LogArg = Annotated[Path, typer.Argument(help="A saved server log.")]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="An engine name: sglang, vllm, tgi, ... or common (default: guessed from the log).",
    ),
]
ExitCodeOpt = Annotated[int | None, typer.Option("--exit-code", help="The server's exit code.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@app.command()
def diagnose(
    logfile: LogArg,
    engine: EngineOpt = None,
    exit_code: ExitCodeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Explain why a server failed: cause, phase, engine, hint and the evidence lines."""
    from autotune.diagnosis import diagnose_text

    if not logfile.is_file():
        raise ConfigError("no such file; give the path of a saved server log", file=str(logfile))
    text = logfile.read_text(encoding="utf-8", errors="replace")
    try:
        found = diagnose_text(text, engine=engine, exit_code=exit_code)
    except ConfigError as exc:
        raise ConfigError(exc.message, field="--engine") from None
    _logger.info("diagnosing %s as a %s log", logfile, found.engine or "common")
    if as_json:
        sys.stdout.write(json.dumps(as_data(found, exit_code), indent=2) + "\n")
    else:
        show(found.failure)


def as_data(found: Diagnosis, exit_code: int | None) -> dict[str, Any]:
    """``--json``: cause, phase, hint, evidence, message, rule, blame, engine, exit code
    (``ok`` for a healthy log)."""
    failure = found.failure
    if failure is None:
        # The ready line was reached and nothing failed: a healthy log, not an "unknown".
        return {
            "cause": "ok",
            "phase": None,
            "hint": "",
            "evidence": [],
            "message": "no failure found",
            "rule": None,
            "blame": [],
            "engine": found.engine,
            "exit_code": exit_code,
        }
    return {
        "cause": failure.cause.value,
        "phase": failure.phase.value,
        "hint": failure.hint,
        "evidence": failure.evidence,
        "message": failure.message,
        "rule": failure.rule,
        "blame": failure.blame,
        "engine": failure.engine,
        "exit_code": failure.exit_code,
    }


def show(failure: Failure | None) -> None:
    """The diagnosis for people; log text is escaped (``[TensorRT-LLM][ERROR]`` is no markup)."""
    if failure is None:
        console.print("[bold green]ok[/]: no failure found in the log")
        return
    console.print(f"[bold red]{failure.cause.value}[/] at [bold]{failure.phase.value}[/]")
    if failure.message:
        console.print(f"  {escape(failure.message)}")
    console.print(f"[bold]engine:[/] {escape(failure.engine or 'not recognised')}")
    if failure.hint:
        console.print(f"[bold]hint:[/] {escape(failure.hint)}")
    for line in failure.evidence:
        console.print(f"  [dim]>[/] {escape(line)}")


__all__ = ["as_data", "diagnose", "show"]
