"""The one exception tree of autotune.

    AutotuneError                 exit 1   root; anything autotune raises on purpose
    ├── ConfigError               exit 2   bad space file or CLI value (file:line, field, fix)
    ├── StudyError                exit 1   the study storage is unusable or inconsistent
    ├── LaunchError               exit 1   a server could not start, not the config's fault
    ├── PlacementError            exit 2   a trial can never fit on the cluster (GPUs)
    ├── DispatchError             exit 1   the executor (Ray) failed; wraps Ray's own errors
    └── TrackingError             exit 1   the tracker (MLflow) failed; wraps MLflow's own errors

Library errors are translated where they are caught (``raise DispatchError(...) from exc``);
the CLI prints one line and exits with ``exit_code``, never a traceback for user error.
Trial-level failures are *not* exceptions: ``run_trial`` returns a ``TrialResult``.
"""

from __future__ import annotations


class AutotuneError(Exception):
    """Root of every error autotune raises on purpose."""

    exit_code: int = 1


class ConfigError(AutotuneError):
    """Bad user input: a space file, a rule, a CLI value.

    The message is one line: ``FILE:LINE: field: what is wrong (the fix)``.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class StudyError(AutotuneError):
    """The study storage is unusable or inconsistent with the space file."""


class LaunchError(AutotuneError):
    """A server could not be launched for a reason that is not the configuration's fault."""


class PlacementError(AutotuneError):
    """A trial needs more GPUs than any node of the cluster has."""

    exit_code = 2


class DispatchError(AutotuneError):
    """The executor failed (wraps Ray errors)."""


class TrackingError(AutotuneError):
    """The tracker failed (wraps MLflow errors)."""
