"""The executor interface (where a trial runs), its written contracts, and the registry.

An executor takes ``TrialSpec``s and hands back futures of ``TrialResult``s. The driver and
the CLI use only what :class:`Executor` declares; every implementation keeps the contracts
in its docstring, and ``tests/dispatch/test_dispatch_contract.py`` runs one suite against
each registered executor. Executors register by name next to their class::

    @EXECUTORS.register
    class LocalExecutor(Executor):
        name = "local"
"""

from __future__ import annotations

import abc
import hashlib
import logging
import socket
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import psutil

from autotune.core.registry import Registry
from autotune.models import Cause, Failure, Outcome, Phase, TrialResult, TrialSpec
from autotune.node.process import DRIVER_ENV, STUDY_ENV, STUDY_KEY_ENV

if TYPE_CHECKING:
    from typing import Self

    from autotune.models import EngineSpec

_logger = logging.getLogger(__name__)

LOG_LIMIT = 8 << 20  # bytes of a remote trial's log brought back to the driver

# Called on the node after each measurement window with (index, Metrics.flat()); True stops
# the trial (pruned). See node.runner.run_trial.
WindowHook = Callable[[int, dict[str, float]], bool]


@dataclass(frozen=True)
class ExecutorOptions:
    """What the CLI knows when it builds an executor, whichever one it is.

    Args:
        gpus_per_trial: GPUs one trial holds (the engine's count for the space).
        parallel: trials at once; None: as many as fit.
        address: where an executor that reaches other machines connects (Ray: ``auto``,
            ``host:6379``); None: this machine only.
        log_dir: the study's log folder on the driver (logs of remote trials land there).
        simulate: trials run the stand-in server, which needs no GPU.
    """

    gpus_per_trial: int
    parallel: int | None = None
    address: str | None = None
    log_dir: str | None = None
    simulate: bool = False


def study_key(log_dir: str) -> str:
    """One study folder on one driver host (what a study lock protects)."""
    return hashlib.sha1(f"{socket.gethostname()}:{log_dir}".encode()).hexdigest()[:16]


def driver_id() -> str:
    """This driver run, as trial servers are told: ``host:pid:process start time``."""
    me = psutil.Process()
    return f"{socket.gethostname()}:{me.pid}:{me.create_time():.3f}"


class Executor(abc.ABC):
    """Runs trials somewhere and hands back futures of their results.

    Contracts every executor keeps (the contract suite checks each):

    - **Results, not exceptions.** ``submit`` returns at once; the future resolves to a
      ``TrialResult`` for every trial-level ending (ok, crashed, timeout, infrastructure).
      It raises only for a bug: ``run_trial`` itself raised (:class:`DispatchError` naming
      the trial and where it ran).
    - **Marker environment.** Every process of a trial carries ``AUTOTUNE_STUDY`` (the
      study's name), ``AUTOTUNE_STUDY_KEY`` (:func:`study_key` of ``spec.log_dir``) and
      ``AUTOTUNE_DRIVER`` (:func:`driver_id` of this run), set by :meth:`marked`, plus the
      node's own ``AUTOTUNE_TRIAL_TOKEN``. ``reap_orphans`` finds leftovers by them.
    - **GPUs.** A trial gets ``spec.gpus`` GPUs no other running trial holds, named in its
      ``CUDA_VISIBLE_DEVICES``; a trial with no GPUs is not restricted.
    - **Logs come back.** ``result.log_path`` names a file on the driver's machine holding
      the trial's output (for a trial on another host, its last ``LOG_LIMIT`` bytes, copied
      into ``ExecutorOptions.log_dir``); ``result.node`` names where it ran.
    - **Infrastructure failures are not retried here.** They resolve to outcome ``infra``
      with ``failure.permanent`` False and ``result.node`` where it happened: the node's own
      (``port_in_use``, ``gpu_not_clean``) and the executor's ``node_lost``, for a trial lost
      with its node or that no node could hold in time (``node`` is ``""`` when it never got
      one). The caller retries with ``attempt + 1`` and ``avoid_nodes`` = ``[result.node]``;
      an executor places such a retry elsewhere when another node can hold it, and on the
      avoided node only when none can.
    - **Lifecycle.** ``shutdown`` is idempotent; trials not yet started are cancelled,
      running ones are stopped (or waited for, when they run in this process) and leave no
      server behind; ``submit`` afterwards raises :class:`DispatchError`.
    """

    name: ClassVar[str]

    @classmethod
    @abc.abstractmethod
    def create(cls, options: ExecutorOptions) -> Self:
        """Build the executor the CLI asked for by name.

        Raises:
            PlacementError: no machine this executor reaches can ever hold a trial.
            DispatchError: the machines cannot be reached.
        """

    @classmethod
    def runs_here(cls, options: ExecutorOptions) -> bool:
        """Whether trials will run on this machine (so its engine can be checked here first,
        before anything is started)."""
        return options.address is None

    def __init__(self) -> None:
        # This driver run, as the trial servers are told (see node.process.reap_orphans).
        self.driver_id = driver_id()

    def marked(self, spec: TrialSpec) -> TrialSpec:
        """``spec`` with the marker environment of the contract added."""
        env = {
            **spec.env,
            STUDY_ENV: spec.study,
            STUDY_KEY_ENV: study_key(spec.log_dir),
            DRIVER_ENV: self.driver_id,
        }
        return spec.model_copy(update={"env": env})

    @abc.abstractmethod
    def capacity(self) -> int:
        """How many trials of this study's size can run at once (at least 1)."""

    @abc.abstractmethod
    def submit(self, spec: TrialSpec, on_window: WindowHook | None = None) -> Future[TrialResult]:
        """Start one trial (or queue it until it fits).

        Args:
            spec: the trial.
            on_window: called in the driver's process with each measurement window's
                ``(index, Metrics.flat())`` while the trial runs (local: from the trial's
                thread; Ray: relayed from the node by an actor); returning True stops the
                trial as pruned. Every window also comes back with the result
                (``TrialResult.windows``).

        Raises:
            DispatchError: the executor is shut down.
        """

    @abc.abstractmethod
    def reap_orphans(self, log_dir: str | None = None) -> list[dict[str, Any]]:
        """Kill trial servers nobody will tear down, on every machine this executor uses:
        those whose launcher died and, given the study's ``log_dir``, those an earlier driver
        run of the study launched.

        Returns:
            One record per orphan (``node.process.reap_orphans``'s), with ``node`` added.
        """

    @abc.abstractmethod
    def engine_help(self, engine: EngineSpec, *, simulate: bool = False) -> str | None:
        """The engine's ``--help`` as a machine that runs trials sees it (preflight checks
        flags against it), or None when the engine has none or it cannot be run there."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stop everything this executor started (see the lifecycle contract)."""


def infra_result(spec: TrialSpec, message: str, *, node: str = "") -> TrialResult:
    """The result of a trial lost to the infrastructure (see the contract above).

    Args:
        spec: the trial.
        message: what happened, one line.
        node: where it happened; ``""`` when the trial never got a node.
    """
    return TrialResult(
        study=spec.study,
        number=spec.number,
        outcome=Outcome.INFRA,
        failure=Failure(
            cause=Cause.NODE_LOST,
            phase=Phase.LAUNCH,
            hint="the node or worker running the trial was lost; it is retried on another node",
            evidence=[message],
            permanent=False,
            message=message,
        ),
        node=node,
        simulated=spec.simulated,
        attempt=spec.attempt,
    )


EXECUTORS: Registry[Executor] = Registry(
    "executor", "autotune.dispatch", "autotune.executors", "--executor"
)
