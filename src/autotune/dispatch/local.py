"""Run trials on this machine, in threads, each on GPUs no other trial holds."""

from __future__ import annotations

import logging
import os
import socket
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from autotune.dispatch.base import EXECUTORS, Executor, ExecutorOptions, WindowHook, study_key
from autotune.errors import DispatchError, PlacementError
from autotune.models import TrialResult, TrialSpec

if TYPE_CHECKING:
    from typing import Self

    from autotune.models import EngineSpec

_logger = logging.getLogger(__name__)


def visible_gpus() -> list[str]:
    """The GPU ids this process may use: CUDA_VISIBLE_DEVICES, else all NVML devices."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # no driver, no library: a CPU machine
        _logger.debug("no GPUs visible through NVML (%s: %s)", type(exc).__name__, exc)
        return []


@EXECUTORS.register
class LocalExecutor(Executor):
    """Runs ``run_trial`` in a thread pool on this host.

    Trials run in this process's threads, so their logs are already on the driver's machine
    and ``result.node`` is this host. Shutting down waits for running trials (a thread
    cannot be stopped from outside; each trial tears its server down when it ends).

    Args:
        gpus_per_trial: GPUs one trial holds; trials get disjoint ``CUDA_VISIBLE_DEVICES``.
        parallel: trials at once; default as many as the GPUs allow (1 for CPU engines).

    Raises:
        PlacementError: a trial needs more GPUs than this machine has.
    """

    name = "local"

    def __init__(self, gpus_per_trial: int, parallel: int | None = None) -> None:
        super().__init__()
        self.gpus_per_trial = gpus_per_trial
        self._free = visible_gpus()
        if gpus_per_trial > len(self._free):
            raise PlacementError(
                f"a trial needs {gpus_per_trial} GPUs but this machine has {len(self._free)}; "
                "lower engine.gpus / --tp-size, or use --executor ray on a cluster"
            )
        fit = len(self._free) // gpus_per_trial if gpus_per_trial else 1
        self.parallel = max(1, min(parallel or fit, fit if gpus_per_trial else parallel or 1))
        self._lock = threading.Lock()
        self._closed = False
        self._pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="autotune-trial")
        self._futures: set[Future[TrialResult]] = set()

    @classmethod
    def create(cls, options: ExecutorOptions) -> Self:
        if options.address is not None:
            _logger.warning("address %s ignored: local trials run on this machine", options.address)
        # The stand-in server needs no GPU: simulated trials hold none on this machine.
        return cls(0 if options.simulate else options.gpus_per_trial, options.parallel)

    @classmethod
    def runs_here(cls, options: ExecutorOptions) -> bool:
        return True

    def capacity(self) -> int:
        return self.parallel

    def submit(self, spec: TrialSpec, on_window: WindowHook | None = None) -> Future[TrialResult]:
        with self._lock:
            if self._closed:
                raise DispatchError("the local executor is shut down")
            future = self._pool.submit(self._run, self.marked(spec), on_window)
            self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return future

    def _run(self, spec: TrialSpec, on_window: WindowHook | None = None) -> TrialResult:
        from autotune.node.runner import run_trial

        with self._lock:
            held, self._free = self._free[: self.gpus_per_trial], self._free[self.gpus_per_trial :]
        try:
            if self.gpus_per_trial:
                env = {**spec.env, "CUDA_VISIBLE_DEVICES": ",".join(held)}
                spec = spec.model_copy(update={"env": env})
            _logger.info("trial %d starts (attempt %d)", spec.number, spec.attempt)
            try:
                result = run_trial(spec, on_window)
            except Exception as exc:  # run_trial raises only for a bug: name the trial
                _logger.error("trial %d raised in run_trial", spec.number, exc_info=True)
                raise DispatchError(
                    f"trial {spec.number} failed on this machine: {type(exc).__name__}: {exc}"
                ) from exc
            _logger.info("trial %d ended: %s", spec.number, result.outcome.value)
            return result
        finally:
            with self._lock:
                self._free = self._free + held

    def reap_orphans(self, log_dir: str | None = None) -> list[dict[str, Any]]:
        from autotune.node.process import reap_orphans

        key = study_key(log_dir) if log_dir else None
        host = socket.gethostname()
        return [{**o, "node": host} for o in reap_orphans(study_key=key, driver=self.driver_id)]

    def engine_help(self, engine: EngineSpec, *, simulate: bool = False) -> str | None:
        from autotune.engines import get_engine
        from autotune.engines.preflight import engine_help

        return engine_help(get_engine(engine, simulate=simulate))

    def shutdown(self) -> None:
        """Stop: trials still running (the driver stopped early, e.g. Ctrl-C) are torn down,
        their servers killed, instead of being waited for."""
        with self._lock:
            self._closed = True
            running = [f for f in self._futures if not f.done()]
        if running:
            from concurrent.futures import wait

            from autotune.node.process import kill_own_servers

            pending = set(running)
            while pending:  # a server registered after a pass is killed by the next one
                kill_own_servers()
                pending = wait(pending, timeout=2.0).not_done
        self._pool.shutdown(wait=True, cancel_futures=True)
