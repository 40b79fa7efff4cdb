"""``autotune diagnose``: why a server failed, read from its saved log."""

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
    from autotune.models import Failure, Rule

_logger = logging.getLogger(__name__)

LogArg = Annotated[Path, typer.Argument(help="A saved server log.")]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="An engine name: sglang, vllm, ... or common (default: guessed from the log).",
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
    """Explain why a server failed: cause, phase, hint and the evidence lines."""
    from autotune.node.failures import diagnose_file

    if not logfile.is_file():
        raise ConfigError("no such file; give the path of a saved server log", file=str(logfile))
    failure = diagnose_file(str(logfile), rules_for(logfile, engine), exit_code=exit_code)
    if as_json:
        sys.stdout.write(json.dumps(as_data(failure), indent=2) + "\n")
    else:
        show(failure)


def rules_for(logfile: Path, engine: str | None) -> list[Rule]:
    """The failure rules of ``engine`` (guessed from the log when None; ``common``: the
    rules every engine shares)."""
    from autotune.engines import ENGINES, guess_engine
    from autotune.rules import load_log

    if engine is None:
        with logfile.open(errors="replace") as fh:
            engine = guess_engine(fh.read(1 << 20)) or "common"
        _logger.info("diagnosing %s as a %s log", logfile, engine)
    if engine == "common":  # no engine: the rules every engine shares
        return list(load_log("common").rules)
    try:
        return list(ENGINES.get_class(engine).log_profile().rules)
    except ConfigError as exc:
        raise ConfigError(exc.message, field="--engine") from None


def as_data(failure: Failure | None) -> dict[str, Any]:
    """``--json``: cause, phase, hint, evidence, message, rule, blame (``ok`` for none)."""
    if failure is None:
        # No rule matched, no exception, no bad exit code: a healthy log, not an "unknown".
        return {
            "cause": "ok",
            "phase": None,
            "hint": "",
            "evidence": [],
            "message": "no failure found",
            "rule": None,
            "blame": [],
        }
    return {
        "cause": failure.cause.value,
        "phase": failure.phase.value,
        "hint": failure.hint,
        "evidence": failure.evidence,
        "message": failure.message,
        "rule": failure.rule,
        "blame": failure.blame,
    }


def show(failure: Failure | None) -> None:
    """The diagnosis for people; log text is escaped (``[TensorRT-LLM][ERROR]`` is no markup)."""
    if failure is None:
        console.print("[bold green]ok[/]: no failure found in the log")
        return
    console.print(f"[bold red]{failure.cause.value}[/] at [bold]{failure.phase.value}[/]")
    if failure.message:
        console.print(f"  {escape(failure.message)}")
    if failure.hint:
        console.print(f"[bold]hint:[/] {escape(failure.hint)}")
    for line in failure.evidence:
        console.print(f"  [dim]>[/] {escape(line)}")


__all__ = ["as_data", "diagnose", "rules_for", "show"]
