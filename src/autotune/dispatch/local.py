"""Run trials on this machine, in threads, each on GPUs no other trial holds."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from autotune.errors import PlacementError
from autotune.models import TrialResult, TrialSpec


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
    except Exception:  # no driver, no library: a CPU machine
        return []


class LocalExecutor:
    """Runs ``run_trial`` in a thread pool on this host.

    Args:
        gpus_per_trial: GPUs one trial holds; trials get disjoint ``CUDA_VISIBLE_DEVICES``.
        parallel: trials at once; default as many as the GPUs allow (1 for CPU engines).
    """

    def __init__(self, gpus_per_trial: int, parallel: int | None = None) -> None:
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
        self._pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="autotune-trial")
        self._futures: set[Future[TrialResult]] = set()

    def capacity(self) -> int:
        return self.parallel

    def submit(self, spec: TrialSpec) -> Future[TrialResult]:
        future = self._pool.submit(self._run, spec)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return future

    def _run(self, spec: TrialSpec) -> TrialResult:
        from autotune.node.runner import run_trial

        with self._lock:
            held, self._free = self._free[: self.gpus_per_trial], self._free[self.gpus_per_trial :]
        try:
            if self.gpus_per_trial:
                env = {**spec.env, "CUDA_VISIBLE_DEVICES": ",".join(held)}
                spec = spec.model_copy(update={"env": env})
            return run_trial(spec)
        finally:
            with self._lock:
                self._free = self._free + held

    def shutdown(self) -> None:
        """Stop: trials still running (the driver stopped early, e.g. Ctrl-C) are torn down,
        their servers killed, instead of being waited for."""
        with self._lock:
            running = [f for f in self._futures if not f.done()]
        if running:
            from concurrent.futures import wait

            from autotune.node.process import kill_own_servers

            pending = set(running)
            while pending:  # a server registered after a pass is killed by the next one
                kill_own_servers()
                pending = wait(pending, timeout=2.0).not_done
        self._pool.shutdown(wait=True, cancel_futures=True)
