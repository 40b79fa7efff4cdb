"""Run trials as Ray tasks, each on a node with the GPUs it needs (``import ray`` only here)."""

from __future__ import annotations

import os
import socket
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from autotune.errors import DispatchError, PlacementError
from autotune.models import Cause, Failure, Outcome, Phase, TrialResult, TrialSpec

_LOG_LIMIT = 8 << 20  # bytes of server log brought back to the driver


def _run_remote(spec_json: str) -> dict[str, Any]:
    """The task body, on the node: run the trial, send back its result and its log."""
    import ray

    from autotune.node.runner import run_trial

    spec = TrialSpec.model_validate_json(spec_json)
    result = run_trial(spec)
    node_id = ray.get_runtime_context().get_node_id()
    result = result.model_copy(update={"node": f"{result.node or socket.gethostname()}/{node_id[:12]}"})
    log = b""
    if result.log_path and os.path.exists(result.log_path):
        with open(result.log_path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(result.log_path) - _LOG_LIMIT))
            log = fh.read()
    return {"result": result.model_dump_json(), "log": log, "node_id": node_id}


class RayExecutor:
    """Dispatches trials through Ray: a local instance by default, ``address`` for a cluster.

    Args:
        gpus_per_trial: GPUs a trial asks Ray for; Ray gives it GPUs no other task holds and
            sets ``CUDA_VISIBLE_DEVICES`` for it.
        address: ``auto`` or ``ray://host:10001`` / ``host:6379`` of a running cluster; None
            starts a local instance.
        parallel: trials at once; default as many as the cluster's GPUs allow.
        log_dir: where logs from remote nodes are written on the driver.
    """

    def __init__(
        self,
        gpus_per_trial: int,
        *,
        address: str | None = None,
        parallel: int | None = None,
        log_dir: str | None = None,
        cpus_per_trial: float = 1.0,
        logical_gpus: int | None = None,
    ) -> None:
        """``logical_gpus``: GPUs a local instance advertises (simulated trials use none)."""
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - ray is a dependency
            raise DispatchError("Ray is not installed; pip install 'ray[default]'") from exc
        self._ray = ray
        self.gpus_per_trial = gpus_per_trial
        self.cpus_per_trial = cpus_per_trial
        self.log_dir = log_dir
        self._started = False
        try:
            if not ray.is_initialized():
                kwargs: dict[str, Any] = {
                    "include_dashboard": False,
                    "log_to_driver": False,
                    "configure_logging": False,
                    "logging_level": "ERROR",
                }
                if address is None:
                    from autotune.dispatch.local import visible_gpus

                    gpus = len(visible_gpus()) if logical_gpus is None else logical_gpus
                    kwargs.update(num_cpus=max(2, os.cpu_count() or 2), num_gpus=gpus)
                    # Workers must import autotune from this checkout even if it is not installed.
                    src = str(Path(__file__).resolve().parents[2])
                    kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": src}}
                ray.init(address=address, **kwargs)
                self._started = True
        except Exception as exc:
            raise DispatchError(f"could not start or reach Ray ({address or 'local'}): {exc}") from exc
        self._remote = ray.remote(_run_remote)
        nodes = self.nodes()
        if not nodes:
            raise DispatchError("the Ray cluster has no alive nodes")
        most = max(n["gpus"] for n in nodes)
        if gpus_per_trial > most:
            raise PlacementError(
                f"a trial needs {gpus_per_trial} GPUs but the largest Ray node has {most:g}; "
                "lower engine.gpus / --tp-size or add a bigger node type to ray_cluster.yaml"
            )
        fit = self._fit(nodes)
        self.parallel = max(1, min(parallel, fit) if parallel else fit)

    def nodes(self) -> list[dict[str, Any]]:
        """Alive nodes with their GPU and CPU counts."""
        out = []
        for node in self._ray.nodes():
            if not node.get("Alive"):
                continue
            res = node.get("Resources", {})
            out.append({
                "id": node["NodeID"],
                "gpus": float(res.get("GPU", 0)),
                "cpus": float(res.get("CPU", 0)),
                "address": node.get("NodeManagerAddress", ""),
            })
        return out

    def _fit(self, nodes: list[dict[str, Any]]) -> int:
        if self.gpus_per_trial:
            return int(sum(n["gpus"] // self.gpus_per_trial for n in nodes))
        return 1  # CPU engines: one server already uses the whole machine

    def capacity(self) -> int:
        return self.parallel

    def submit(self, spec: TrialSpec) -> Future[TrialResult]:
        options: dict[str, Any] = {
            "num_gpus": spec.gpus,
            "num_cpus": self.cpus_per_trial,
            "max_retries": 0,  # infra failures are retried by the driver, elsewhere
        }
        target = self._other_node(spec)
        if target is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target, soft=True)
        ref = self._remote.options(**options).remote(spec.model_dump_json())
        out: Future[TrialResult] = Future()
        ref.future().add_done_callback(lambda f: self._settle(spec, f, out))
        return out

    def _other_node(self, spec: TrialSpec) -> str | None:
        if not spec.avoid_nodes:
            return None
        for node in self.nodes():
            if any(a.endswith(node["id"][:12]) for a in spec.avoid_nodes):
                continue
            if node["gpus"] >= spec.gpus:
                return str(node["id"])
        return None

    def _settle(self, spec: TrialSpec, done: Future[Any], out: Future[TrialResult]) -> None:
        try:
            payload = done.result()
        except Exception as exc:  # the node or the worker died under the trial
            out.set_result(_lost(spec, exc))
            return
        try:
            result = TrialResult.model_validate_json(payload["result"])
            result = self._bring_log(result, payload.get("log") or b"")
            out.set_result(result)
        except Exception as exc:  # a bug: surface it
            out.set_exception(exc)

    def _bring_log(self, result: TrialResult, log: bytes) -> TrialResult:
        if not log or not result.log_path or os.path.exists(result.log_path) or not self.log_dir:
            return result
        path = Path(self.log_dir) / Path(result.log_path).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(log)
        return result.model_copy(update={"log_path": str(path)})

    def shutdown(self) -> None:
        if self._started:
            self._ray.shutdown()


def _lost(spec: TrialSpec, exc: BaseException) -> TrialResult:
    message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return TrialResult(
        study=spec.study,
        number=spec.number,
        outcome=Outcome.INFRA,
        failure=Failure(
            cause=Cause.NODE_LOST,
            phase=Phase.LAUNCH,
            hint="the Ray node or worker running the trial died; it is retried on another node",
            evidence=[message],
            permanent=False,
            message=message,
        ),
        simulated=spec.simulated,
        attempt=spec.attempt,
    )
