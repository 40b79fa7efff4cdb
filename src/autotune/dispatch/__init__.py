"""Dispatch: where trials run. One executor per kind, chosen by name (``--executor``).

local   LocalExecutor   threads on this machine, each trial on GPUs no other trial holds
ray     RayExecutor     Ray tasks on a local instance or a cluster (``import ray`` only there)

``base.Executor`` declares what callers may use and the contracts every executor keeps;
``EXECUTORS`` finds an executor by name (its module is imported only then).
"""

from __future__ import annotations

from autotune.dispatch.base import EXECUTORS, Executor, ExecutorOptions, study_key


def make_executor(name: str, options: ExecutorOptions) -> Executor:
    """Build the executor registered as ``name``.

    Raises:
        ConfigError: no executor has that name.
        PlacementError: no machine it reaches can ever hold a trial.
        DispatchError: its machines cannot be reached.
    """
    return EXECUTORS.get_class(name).create(options)


__all__ = ["EXECUTORS", "Executor", "ExecutorOptions", "make_executor", "study_key"]
