"""The executor interface: where a trial runs."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from autotune.models import TrialResult, TrialSpec


class Executor(Protocol):
    """Runs trials somewhere and hands back futures of their results."""

    def capacity(self) -> int:
        """How many trials of the given size can run at once."""
        ...

    def submit(self, spec: TrialSpec) -> Future[TrialResult]:
        """Start one trial; the future never raises for a trial-level failure."""
        ...

    def shutdown(self) -> None:
        """Stop anything this executor started."""
        ...
