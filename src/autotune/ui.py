"""The live progress view of ``autotune start``: a rich progress bar and one line per trial."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from autotune.models import Outcome
from autotune.records import gain_pct
from autotune.study.events import Event, EventKind

_STYLE = {
    Outcome.OK: "green",
    Outcome.SLO_VIOLATED: "yellow",
    Outcome.CRASHED: "red",
    Outcome.TIMEOUT: "red",
    Outcome.PRUNED: "dim",
    Outcome.INFRA: "magenta",
}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _config(config: dict[str, Any], limit: int = 90) -> str:
    text = " ".join(f"{k}={v}" for k, v in config.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ProgressView:
    """Turns driver events into a progress bar and a log of trials.

    Args:
        console: where to draw.
        metric: the objective metric's name, for labels.
        simulated: label every figure as simulated.
    """

    def __init__(
        self, console: Console, metric: str, simulated: bool, direction: str = "maximize"
    ) -> None:
        self.console = console
        self.metric = metric
        self.direction = direction
        self.sim = " [bold magenta](simulated)[/]" if simulated else ""
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]trials"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("trials", total=1, status="")
        self.running: dict[int, str] = {}

    def __enter__(self) -> ProgressView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _status(self, event: Event) -> str:
        best = f"best {self.metric} {_fmt(event.best)}"
        gain = gain_pct(event.best, event.baseline, self.direction)
        if gain is not None:  # positive is better, whichever the direction
            best += f" ({gain:+.1f}% vs baseline {_fmt(event.baseline)})"
        running = (
            f" | running: {', '.join(f'#{n}' for n in sorted(self.running))}"
            if self.running
            else ""
        )
        return best + self.sim + running

    def __call__(self, event: Event) -> None:
        log = self.progress.console.print
        if event.kind is EventKind.START:
            self.progress.update(
                self.task, total=event.target, completed=event.launched, status=self._status(event)
            )
            if event.message:
                log(f"[yellow]resume:[/] {event.message}")
        elif event.kind is EventKind.LAUNCH and event.number is not None:
            self.running[event.number] = _config(event.config)
            log(f"[cyan]launch[/] #{event.number}  {_config(event.config)}")
            self.progress.update(self.task, status=self._status(event))
        elif event.kind is EventKind.SKIP:
            kind = f"{event.skip.kind.value}: " if event.skip is not None else ""
            log(f"[dim]skip   #{event.number}  {kind}{event.message}[/]")
        elif event.kind is EventKind.RETRY:
            log(f"[magenta]retry  #{event.number}[/]  infrastructure failure: {event.message}")
        elif event.kind is EventKind.RESULT and event.number is not None:
            self.running.pop(event.number, None)
            r = event.result
            outcome = event.outcome or Outcome.CRASHED
            style = _STYLE.get(outcome, "white")
            if outcome in (Outcome.OK, Outcome.SLO_VIOLATED):
                detail = f"{self.metric}={_fmt(event.value)}{self.sim}"
            elif r is not None and r.failure is not None:
                detail = f"{r.failure.cause.value} at {r.failure.phase.value}: {r.failure.message}"
            else:
                detail = ""
            secs = f" ({r.timings.total_s:.0f}s)" if r is not None else ""
            log(f"[{style}]{outcome.value:<8}[/] #{event.number}{secs}  {detail}")
            self.progress.update(
                self.task, completed=event.launched, total=event.target, status=self._status(event)
            )
        elif event.kind is EventKind.STOP:
            self.progress.update(self.task, completed=event.launched, status=self._status(event))
            log(f"[bold]stopped:[/] {event.message}")
