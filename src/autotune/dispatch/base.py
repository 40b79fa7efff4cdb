"""The executor interface: where a trial runs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

from autotune.models import TrialResult, TrialSpec

# Called on the node after each measurement window with (index, Metrics.flat()); True stops
# the trial (pruned). See node.runner.run_trial.
WindowHook = Callable[[int, dict[str, float]], bool]


class Executor(Protocol):
    """Runs trials somewhere and hands back futures of their results."""

    def capacity(self) -> int:
        """How many trials of the given size can run at once."""
        ...

    def submit(self, spec: TrialSpec, on_window: WindowHook | None = None) -> Future[TrialResult]:
        """Start one trial; the future never raises for a trial-level failure.

        ``on_window``: per-window intermediate values as they are measured, where the executor
        can call back into this process (local); elsewhere they arrive with the result.
        """
        ...

    def shutdown(self) -> None:
        """Stop anything this executor started."""
        ...
