"""The ``autotune`` application: the Typer app the commands register on, the consoles, logging,
and ``main``, which turns every error into one line and an exit code.

Every command turns bad input into one line on stderr and a non-zero exit code (the error's
``exit_code``); tracebacks are for bugs only. The commands live one per module beside this
one and register themselves on :data:`app` (``cli/__init__.py`` imports them).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

# typer 0.29 parses with its own copy of click (typer._click), not the click package: its
# exceptions are the ones to catch. pyproject pins typer to the tested minor version.
from typer._click import exceptions as click_exc

from autotune import __version__
from autotune.errors import AutotuneError, ConfigError

_logger = logging.getLogger(__name__)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Tune LLM inference servers: an Optuna study over launch flags and environment.",
    pretty_exceptions_enable=False,
    # Plain help: rich mode labels every flag "<bool>" and boxes waste an 80-column terminal.
    rich_markup_mode=None,
)
# COLUMNS, when set, is the width; else piped or logged output gets wide tables (rich would
# assume 80 columns when not on a terminal).
_COLUMNS = os.environ.get("COLUMNS", "")
_WIDTH = int(_COLUMNS) if _COLUMNS.isdigit() else (None if sys.stdout.isatty() else 120)
console = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        console.print(f"autotune {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Log more to stderr: -v what happens (info), -vv everything (debug).",
        ),
    ] = 0,
    log_file: Annotated[
        Path | None,
        typer.Option("--log-file", help="Also write autotune's full log (debug level) here."),
    ] = None,
) -> None:
    """autotune: find the fastest launch configuration of an LLM inference server."""
    _setup_logging(verbose, log_file)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (the live progress view redirects it,
    so log lines print above the table instead of through it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always the current sys.stderr


def _setup_logging(verbose: int, log_file: Path | None) -> None:
    """Send the ``autotune`` loggers to stderr (warnings; -v info; -vv debug) and, given
    ``--log-file``, everything to that file. Other libraries' loggers are left alone."""
    logger = logging.getLogger("autotune")
    for handler in [h for h in logger.handlers if getattr(h, "autotune_cli", False)]:
        logger.removeHandler(handler)  # main() runs more than once in one process (tests)
        handler.close()
    levels = {0: logging.WARNING, 1: logging.INFO}
    stderr = _StderrHandler()
    stderr.setLevel(levels.get(verbose, logging.DEBUG))
    brief = "autotune: %(levelname)s: %(message)s"
    full = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
    stderr.setFormatter(logging.Formatter(full if verbose else brief))
    handlers: list[logging.Handler] = [stderr]
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            to_file = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot write the log file: {exc.strerror}", file=str(log_file)
            ) from exc
        to_file.setLevel(logging.DEBUG)
        to_file.setFormatter(logging.Formatter(full))
        handlers.append(to_file)
    for handler in handlers:
        handler.autotune_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(min(h.level for h in handlers))


def _usage_line(ctx: Any) -> str:
    """``usage: autotune start [OPTIONS] (see: autotune start --help)`` for the failing command."""
    path = (ctx.command_path if ctx is not None else "") or "autotune"
    list_commands = getattr(getattr(ctx, "command", None), "list_commands", None)
    if list_commands is not None:
        names = ", ".join(list_commands(ctx))
        return f"usage: {path} COMMAND [OPTIONS]; commands: {names} (see: {path} --help)"
    return f"usage: {path} [OPTIONS] (see: {path} --help)"


def _usage_error(exc: click_exc.UsageError) -> int:
    """One line naming the problem, one usage hint; exit 2 (the convention for usage errors)."""
    if isinstance(exc, click_exc.NoArgsIsHelpError):
        message = "no command given"
    else:
        # typer validates through pydantic, whose wording leaks in ("Value error, ...").
        message = " ".join(exc.format_message().split()).replace("Value error, ", "")
    err.print(f"autotune: error: {message}", markup=False, highlight=False)
    err.print(_usage_line(exc.ctx), markup=False, highlight=False)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, map errors to one line and an exit code."""
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    try:
        code = app(args=argv, prog_name="autotune", standalone_mode=False)
        if isinstance(code, int):  # typer.Exit(N) comes back as a value without standalone mode
            return code
    except AutotuneError as exc:
        err.print(f"autotune: error: {exc}", markup=False, highlight=False)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:  # Ctrl-C at a prompt: said, not a traceback
        err.print("autotune: aborted")
        return 130
    except click_exc.UsageError as exc:
        return _usage_error(exc)
    except click_exc.ClickException as exc:
        err.print(f"autotune: error: {exc.format_message()}", markup=False, highlight=False)
        return exc.exit_code
    except KeyboardInterrupt:  # before the driver runs (or after): resuming is safe
        err.print("autotune: interrupted; run the same command again to resume the study")
        return 130
    return 0
