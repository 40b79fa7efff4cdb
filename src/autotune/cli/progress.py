"""The live progress view of ``autotune start``: a rich progress bar and one line per trial.

The bar's status always shows the best value so far (kept across events that carry none), each
running trial's phase and an ETA from the trials measured so far. Trial lines show the whole
configuration, wrapped at spaces, never cut: an 80-column terminal loses nothing.
"""

from __future__ import annotations

import functools
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from autotune.core.fmt import config_text, metric, seconds
from autotune.core.records import gain_pct
from autotune.models import PIECES_COUNTED, Outcome
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
    return metric(value)


def _config(config: dict[str, Any]) -> str:
    """The whole configuration (rich wraps it at spaces; nothing is cut)."""
    return config_text(config) or "(defaults)"


# Phases as people read them (Event.message of a "phase" event carries models.Phase values).
_PHASE_WORDS = {
    "launch": "launching",
    "load": "loading",
    "memory_pool": "loading",
    "graph_capture": "loading",
    "ready": "warming up",
    "warmup": "warming up",
    "benchmark": "benchmarking",
    "confirm": "confirming",
}


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
        self.running: dict[int, str] = {}  # trial number -> phase, as people read it
        self.best: float | None = None
        self.baseline: float | None = None
        self.durations: list[float] = []  # seconds per launched trial, for the ETA
        self.launched = 0
        self.target = 0
        self.parallel = 1
        self.uncounted_told = False  # the no-token-count note is given once per study

    def __enter__(self) -> ProgressView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _remember(self, event: Event) -> None:
        """Keep what only some events carry: a launch event has no best value."""
        # A confirmation launch's result carries no progress (it is outside the budget).
        progress = event.kind is not EventKind.RESULT or event.target > 0
        if event.kind in (EventKind.START, EventKind.RESULT, EventKind.STOP) and progress:
            self.best, self.baseline = event.best, event.baseline
            self.launched, self.target = event.launched, event.target
        self.parallel = max(self.parallel, len(self.running))

    def eta(self) -> float | None:
        """Seconds until the budget is spent, from the mean duration of trials so far."""
        if not self.durations or self.target <= self.launched:
            return None
        mean = sum(self.durations) / len(self.durations)
        left = self.target - self.launched
        return mean * -(-left // max(1, self.parallel))

    def _status(self) -> str:
        best = f"best {self.metric} {_fmt(self.best)}"
        gain = gain_pct(self.best, self.baseline, self.direction)
        if gain is not None:  # positive is better, whichever the direction
            best += f" ({gain:+.1f}% vs baseline)"
        running = "".join(f" | #{n} {phase}" for n, phase in sorted(self.running.items()))
        eta = self.eta()
        left = f" | ETA {seconds(eta)}" if eta is not None else ""
        return best + self.sim + running + left

    def __call__(self, event: Event) -> None:
        # Wrapped by rich at spaces (the CLI's console soft-wraps: a terminal would cut words).
        log = functools.partial(self.progress.console.print, soft_wrap=False)
        self._remember(event)
        if event.kind is EventKind.START:
            self.progress.update(
                self.task, total=event.target, completed=event.launched, status=self._status()
            )
            if event.message:
                log(f"[yellow]resume:[/] {event.message}")
        elif event.kind is EventKind.LAUNCH and event.number is not None:
            self.running[event.number] = "launching"
            self.parallel = max(self.parallel, len(self.running))
            log(f"[cyan]launch[/] #{event.number}  {escape(_config(event.config))}")
            self.progress.update(self.task, status=self._status())
        elif event.kind is EventKind.PHASE and event.number is not None:
            if event.number in self.running:
                self.running[event.number] = _PHASE_WORDS.get(event.message, event.message)
                self.progress.update(self.task, status=self._status())
        elif event.kind is EventKind.SKIP:
            kind = f"{event.skip.kind.value}: " if event.skip is not None else ""
            log(f"[dim]skip   #{event.number}  {escape(kind + event.message)}[/]")
        elif event.kind is EventKind.RETRY:
            log(
                f"[magenta]retry  #{event.number}[/]  infrastructure failure: "
                + escape(event.message)
            )
        elif event.kind is EventKind.RESULT and event.number is not None:
            self.running.pop(event.number, None)
            r = event.result
            if (
                r is not None
                and r.timings.total_s
                and event.outcome
                in (Outcome.OK, Outcome.SLO_VIOLATED, Outcome.CRASHED, Outcome.TIMEOUT)
            ):
                self.durations.append(r.timings.total_s)
            outcome = event.outcome or Outcome.CRASHED
            style = _STYLE.get(outcome, "white")
            if outcome in (Outcome.OK, Outcome.SLO_VIOLATED):
                detail = f"{self.metric}={_fmt(event.value)}{self.sim}"
            elif r is not None and r.failure is not None:
                f = r.failure
                detail = escape(f"{f.cause.value} at {f.phase.value}: {f.message}")
            elif outcome is Outcome.PRUNED and r is not None and r.windows:
                read = r.windows[-1].get(self.metric)
                detail = (
                    f"stopped after {len(r.windows)} window(s): {self.metric}={_fmt(read)}"
                    f"{self.sim} cannot beat the best so far"
                )
            else:
                detail = ""
            secs = f" ({seconds(r.timings.total_s)})" if r is not None else ""
            note = f"  [dim]{escape(event.message)}[/]" if event.message else ""
            log(f"[{style}]{outcome.value:<8}[/] #{event.number}{secs}  {detail}{note}")
            share = r.metrics.extra.get(PIECES_COUNTED) if r and r.metrics else None
            if share and not self.uncounted_told:
                self.uncounted_told = True
                log(
                    f"[yellow]note:[/] #{event.number}: {share:.0f}% of requests were counted by "
                    "their stream pieces, the server sending no token count (usage); a piece "
                    "may carry several tokens, so tok/s may read low"
                )
            if event.target:  # confirmation launches are outside the trial budget
                self.progress.update(
                    self.task, completed=event.launched, total=event.target, status=self._status()
                )
        elif event.kind is EventKind.CONFIRM:
            log(f"[bold cyan]confirm[/] {escape(event.message)}")
        elif event.kind is EventKind.VERDICT:
            log(f"[bold]verdict:[/] {escape(event.message)}")
        elif event.kind is EventKind.STOP:
            self.progress.update(self.task, completed=event.launched, status=self._status())
            log(f"[bold]stopped:[/] {escape(event.message)}")
