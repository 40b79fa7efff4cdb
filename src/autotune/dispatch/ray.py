"""Run trials as Ray tasks, each on a node with the GPUs it needs (``import ray`` only here).

Live pruning: a trial's measurement windows reach the driver's window hook while the trial
runs, through a small Ray actor (``_WindowRelay``): the task on the node posts each window
and waits (a few seconds at most) for the decision; a thread of the executor takes the
windows, calls the hook in the driver's process (where the Optuna study and its pruner are)
and posts back "stop" or "go on". A relay that does not answer in time means "go on": the
trial never stalls on it.

The executor places trials itself: it keeps the GPUs and CPUs its own trials hold on every
alive node and pins each trial to one node (``NodeAffinitySchedulingStrategy``, hard), so it
always knows where a trial runs. That is what lets a trial lost with its node be retried
*elsewhere* (``TrialSpec.avoid_nodes``) and lets the driver reap leftovers on every node. Ray
still enforces the resources: a trial never gets GPUs another task holds, and Ray sets its
``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.dispatch.base import (
    EXECUTORS,
    LOG_LIMIT,
    Executor,
    ExecutorOptions,
    WindowHook,
    infra_result,
    study_key,
)
from autotune.errors import DispatchError, PlacementError
from autotune.models import TrialResult, TrialSpec

if TYPE_CHECKING:
    from typing import Self

    from autotune.models import EngineSpec

_logger = logging.getLogger(__name__)

GPU_NODE_RESOURCE = "autotune_gpu_node"  # marks the nodes trials may use (ray_cluster.yaml)
NODE_WAIT_S = 300.0  # how long a trial waits for a node that can hold it to (re)appear


# How long a trial waits for the driver's decision on one window before it goes on.
WINDOW_WAIT_S = 10.0


def _run_remote(spec_json: str, relay: Any = None, key: str = "") -> dict[str, Any]:
    """The task body, on the node: run the trial, send back its result and its log.

    ``relay``: the executor's ``_WindowRelay`` when the driver wants each window as it is
    measured (live pruning); ``key`` names this trial there.
    """
    import ray

    from autotune.node.runner import run_trial

    spec = TrialSpec.model_validate_json(spec_json)
    hook = None
    if relay is not None:

        def hook(index: int, flat: dict[str, float]) -> bool:
            try:
                answer = relay.window.remote(key, index, flat, WINDOW_WAIT_S)
                return bool(ray.get(answer, timeout=WINDOW_WAIT_S + 5.0))
            except Exception:  # no answer: the trial goes on (the driver decides at the end)
                _logger.warning("window %d of trial %s: no pruning decision", index, key)
                return False

    result = run_trial(spec, hook)
    node_id = ray.get_runtime_context().get_node_id()
    result = result.model_copy(update={"node": _node_name(result.node, node_id)})
    log = b""
    if result.log_path and os.path.exists(result.log_path):
        with open(result.log_path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(result.log_path) - LOG_LIMIT))
            log = fh.read()
    return {"result": result.model_dump_json(), "log": log, "node_id": node_id}


def worker_pythonpath() -> str:
    """The PYTHONPATH of a local instance's workers: this checkout's ``src`` (autotune imports
    even where it is not installed), then the driver's own path (an offline install's site,
    where Ray itself may live: workers that lose it cannot start)."""
    src = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)


class _WindowRelay:
    """A Ray actor (async) between trials on their nodes and the driver's window hooks.

    ``window`` (called by a trial) queues one window and waits for its decision; ``take``
    (called by the executor's relay thread) hands over the queued windows; ``decide`` answers
    one. Everything is keyed by ``study/number/attempt``.
    """

    def __init__(self) -> None:
        import asyncio

        self._queue: list[tuple[str, int, dict[str, float]]] = []
        self._arrived = asyncio.Event()
        self._waiting: dict[tuple[str, int], asyncio.Future[bool]] = {}

    async def window(self, key: str, index: int, flat: dict[str, float], wait_s: float) -> bool:
        import asyncio

        decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[(key, index)] = decision
        self._queue.append((key, index, flat))
        self._arrived.set()
        try:
            return await asyncio.wait_for(decision, wait_s)
        except TimeoutError:  # the driver is slow or gone: go on
            return False
        finally:
            self._waiting.pop((key, index), None)

    async def take(self, wait_s: float) -> list[tuple[str, int, dict[str, float]]]:
        import asyncio

        if not self._queue:
            try:
                await asyncio.wait_for(self._arrived.wait(), wait_s)
            except TimeoutError:  # nothing arrived: an empty hand-over
                pass
        self._arrived.clear()
        out, self._queue = self._queue, []
        return out

    async def decide(self, key: str, index: int, stop: bool) -> None:
        decision = self._waiting.get((key, index))
        if decision is not None and not decision.done():
            decision.set_result(stop)


def _reap_remote(study_key: str | None, driver: str | None) -> list[dict[str, Any]]:
    """The reaper task, on one node: kill trial servers nobody will tear down."""
    from autotune.node.process import reap_orphans

    return reap_orphans(study_key=study_key, driver=driver)


def _help_remote(engine_json: str, simulate: bool) -> str | None:
    """On a node: the engine's own ``--help`` there (None when it is not installed there)."""
    from autotune.engines import get_engine
    from autotune.engines.preflight import engine_help
    from autotune.models import EngineSpec

    return engine_help(get_engine(EngineSpec.model_validate_json(engine_json), simulate=simulate))


def _trial_key(spec: TrialSpec) -> str:
    """A trial attempt's name at the window relay."""
    return f"{spec.study}/{spec.number}/{spec.attempt}"


def _node_name(host: str | None, node_id: str) -> str:
    """How a node is named in results and ``avoid_nodes``: ``host/<first 12 of the Ray id>``."""
    return f"{host or socket.gethostname()}/{node_id[:12]}"


@dataclass
class _Node:
    id: str
    host: str
    gpus: float
    cpus: float
    marked: bool  # carries GPU_NODE_RESOURCE

    @property
    def name(self) -> str:
        return _node_name(self.host, self.id)


@dataclass
class _Ask:
    spec: TrialSpec
    out: Future[TrialResult]
    since: float


@EXECUTORS.register
class RayExecutor(Executor):
    """Dispatches trials through Ray: a local instance by default, ``address`` for a cluster.

    Joins a Ray instance this process already started (and then leaves it running at
    shutdown); otherwise starts one, or connects to ``address``, and stops it at shutdown.

    Args:
        gpus_per_trial: GPUs a trial holds; it gets GPUs no other trial holds, on one node.
        address: ``auto`` or ``ray://host:10001`` / ``host:6379`` of a running cluster; None
            starts a local instance.
        parallel: trials at once; default (and most) as many as the cluster's GPUs allow.
        log_dir: where logs from remote nodes are written on the driver.
        cpus_per_trial: CPUs a trial holds on its node.
        logical_gpus: GPUs a local instance advertises (simulated trials use none).
        node_wait_s: how long a trial waits for a node that can hold it (or for Ray to answer)
            before it comes back as an infrastructure failure.

    Raises:
        PlacementError: no alive node can ever hold a trial.
        DispatchError: Ray cannot be started or reached.
    """

    name = "ray"

    def __init__(
        self,
        gpus_per_trial: int,
        *,
        address: str | None = None,
        parallel: int | None = None,
        log_dir: str | None = None,
        cpus_per_trial: float = 1.0,
        logical_gpus: int | None = None,
        node_wait_s: float | None = None,
    ) -> None:
        super().__init__()
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - ray is a dependency
            raise DispatchError("Ray is not installed; pip install 'ray[default]'") from exc
        self._ray = ray
        self.gpus_per_trial = gpus_per_trial
        self.cpus_per_trial = cpus_per_trial
        self.log_dir = log_dir
        self.node_wait_s = NODE_WAIT_S if node_wait_s is None else node_wait_s
        self._started = False
        self._connect(address, logical_gpus)
        self._remote = ray.remote(_run_remote)
        self._reaper = ray.remote(_reap_remote)
        self._helper = ray.remote(_help_remote)
        try:
            nodes = self._check(gpus_per_trial)
        except BaseException:  # re-raised: only the instance this call started is stopped
            if self._started:
                ray.shutdown()
            raise
        fit = self._fit(nodes)
        self.parallel = max(1, min(parallel, fit) if parallel else fit)
        self._lock = threading.Lock()
        self._held: dict[str, tuple[float, float]] = {}  # node id -> (GPUs, CPUs) our trials hold
        self._pending: deque[_Ask] = deque()
        self._running: dict[Any, tuple[_Ask, _Node]] = {}  # ObjectRef -> (trial, node)
        self._closed = False
        self._hooks: dict[str, WindowHook] = {}  # trial key -> the driver's window hook
        self._relay: Any = None  # the _WindowRelay actor, made with the first hook
        self._relay_thread: threading.Thread | None = None  # hands windows to their hooks
        self._unreachable_since: float | None = None  # Ray has not answered since then
        self._wake = threading.Event()
        self._loop = threading.Thread(target=self._place_loop, name="autotune-ray", daemon=True)
        self._loop.start()

    @classmethod
    def create(cls, options: ExecutorOptions) -> Self:
        # A local instance for a simulated study gets logical GPUs for the trials it runs.
        simulated_local = options.simulate and options.address is None
        logical = options.gpus_per_trial * (options.parallel or 1) if simulated_local else None
        return cls(
            options.gpus_per_trial,
            address=options.address,
            parallel=options.parallel,
            log_dir=options.log_dir,
            logical_gpus=logical,
        )

    def _connect(self, address: str | None, logical_gpus: int | None) -> None:
        ray = self._ray
        try:
            if ray.is_initialized():
                _logger.info("joining the Ray instance this process already runs")
                return
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
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": worker_pythonpath()}}
            # "local": a new instance even when `ray start` left one on this machine (ray.init
            # would otherwise join whatever /tmp/ray/ray_current_cluster names).
            _logger.info("starting Ray (%s)", address or "a local instance")
            began = time.monotonic()
            ray.init(address=address or "local", **kwargs)
            _logger.info("Ray is up (%.1f s)", time.monotonic() - began)
            self._started = True
        except Exception as exc:
            where = address or "local"
            raise DispatchError(f"could not start or reach Ray ({where}): {exc}") from exc

    # -- the cluster ---------------------------------------------------------------------

    def _check(self, gpus: int) -> list[_Node]:
        """The alive nodes, if one of them can hold a trial (refused before the study starts)."""
        nodes = self.nodes()
        if not nodes:
            raise DispatchError("the Ray cluster has no alive nodes")
        if not self._usable(nodes, gpus):
            eligible = self._eligible(nodes)
            most = max(n.gpus for n in eligible)
            which = f"node marked {GPU_NODE_RESOURCE}" if eligible[0].marked else "Ray node"
            if gpus == 0:
                raise PlacementError(
                    f"a trial needs {self.cpus_per_trial:g} CPUs but no {which} has that many"
                )
            raise PlacementError(
                f"a trial needs {gpus} GPUs on one node but the largest {which} has {most:g}; "
                "lower engine.gpus / --tp-size, or add a bigger node type to ray_cluster.yaml"
            )
        return nodes

    def nodes(self) -> list[_Node]:
        """Alive nodes with their GPU and CPU counts."""
        out = []
        for node in self._ray.nodes():  # type: ignore[no-untyped-call]
            if not node.get("Alive"):
                continue
            res = node.get("Resources", {})
            out.append(
                _Node(
                    id=str(node["NodeID"]),
                    host=str(node.get("NodeManagerHostname") or node.get("NodeManagerAddress", "")),
                    gpus=float(res.get("GPU", 0)),
                    cpus=float(res.get("CPU", 0)),
                    marked=GPU_NODE_RESOURCE in res,
                )
            )
        return out

    @staticmethod
    def _eligible(nodes: list[_Node]) -> list[_Node]:
        """Nodes trials may use: the marked ones if the cluster marks any, else all."""
        marked = [n for n in nodes if n.marked]
        return marked or nodes

    def _usable(self, nodes: list[_Node], gpus: int) -> list[_Node]:
        """Eligible nodes big enough for a trial of ``gpus`` GPUs (when empty)."""
        # A GPU trial asks for fewer CPUs on a node that has fewer (a GPU node advertising
        # no CPU); a CPU trial needs its CPUs.
        return [
            n
            for n in self._eligible(nodes)
            if n.gpus >= gpus and (gpus > 0 or n.cpus >= self.cpus_per_trial)
        ]

    def _cpus(self, node: _Node) -> float:
        """CPUs a trial asks for on ``node``."""
        return min(self.cpus_per_trial, node.cpus)

    def _fit(self, nodes: list[_Node]) -> int:
        if self.gpus_per_trial:
            return int(sum(n.gpus // self.gpus_per_trial for n in self._eligible(nodes)))
        return 1  # CPU engines: one server already uses the whole machine

    def capacity(self) -> int:
        return self.parallel

    # -- placement -----------------------------------------------------------------------

    def submit(self, spec: TrialSpec, on_window: WindowHook | None = None) -> Future[TrialResult]:
        # on_window is called live, through the window relay (see the module docstring).
        out: Future[TrialResult] = Future()
        if on_window is not None:
            self._start_relay()
        with self._lock:
            if self._closed:
                raise DispatchError("the Ray executor is shut down")
            if on_window is not None:
                self._hooks[_trial_key(spec)] = on_window
            self._pending.append(_Ask(self.marked(spec), out, time.monotonic()))
        self._wake.set()
        return out

    def _place_loop(self) -> None:
        # Places waiting trials when one ends, and every second for nodes that come and go.
        while not self._closed:
            self._wake.wait(1.0)
            self._wake.clear()
            if self._closed:
                return
            try:
                self._place()
            except Exception:  # a bug: without this thread no trial is ever placed again
                _logger.exception("placing trials failed; every waiting trial is failed")
                self._fail_pending("placing trials failed (a bug; see the log)")

    def _place(self) -> None:
        """One placement round: every waiting trial is launched, expired, or left waiting.

        A trial taken off the queue always ends this round launched or with its future
        resolved, so nothing is counted against a node without running there.
        """
        with self._lock:
            if not self._pending:
                return
        try:
            nodes = self.nodes()
        except Exception as exc:  # Ray hiccup (GCS restarting): wait, up to node_wait_s
            _logger.debug("Ray did not list its nodes", exc_info=True)
            self._unreachable(exc)
            return
        self._unreachable_since = None
        ready, expired = self._assign(nodes)
        for ask in expired:
            _resolve(
                ask.out,
                infra_result(
                    ask.spec,
                    f"no alive Ray node has {ask.spec.gpus} GPUs for this trial "
                    f"(waited {self.node_wait_s:g} s)",
                ),
            )
        for ask, node in ready:
            try:
                self._launch(ask, node)
            except Exception as exc:  # a bug: this trial fails loudly, the others still go
                _logger.exception("could not launch trial %d on %s", ask.spec.number, node.name)
                self._release(node, ask.spec)
                _resolve(
                    ask.out,
                    DispatchError(
                        f"trial {ask.spec.number} could not be launched on {node.name}: "
                        f"{type(exc).__name__}: {_first_line(exc)}"
                    ),
                )

    def _assign(self, nodes: list[_Node]) -> tuple[list[tuple[_Ask, _Node]], list[_Ask]]:
        """Take waiting trials that fit now (counted against their node) or waited too long."""
        ready: list[tuple[_Ask, _Node]] = []
        expired: list[_Ask] = []
        with self._lock:
            alive = {n.id for n in nodes}
            for node_id in list(self._held):
                if node_id not in alive:
                    del self._held[node_id]
            waiting: deque[_Ask] = deque()
            while self._pending:
                ask = self._pending.popleft()
                node = self._choose(ask.spec, nodes)
                if node is not None:
                    g, c = self._held.get(node.id, (0.0, 0.0))
                    self._held[node.id] = (g + ask.spec.gpus, c + self._cpus(node))
                    ready.append((ask, node))
                elif not self._usable(nodes, ask.spec.gpus) and (
                    time.monotonic() - ask.since >= self.node_wait_s
                ):
                    expired.append(ask)
                else:
                    waiting.append(ask)
            self._pending = waiting
        if expired:
            _logger.warning(
                "%d trial(s) waited %g s for a node with enough GPUs; returned as lost",
                len(expired),
                self.node_wait_s,
            )
        return ready, expired

    def _unreachable(self, exc: Exception) -> None:
        """Ray did not answer: keep trials waiting, then fail them as infrastructure."""
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
            _logger.warning("Ray did not list its nodes (%s); trying again", _first_line(exc))
        if now - self._unreachable_since < self.node_wait_s:
            return
        with self._lock:
            gone, self._pending = list(self._pending), deque()
        for ask in gone:
            _resolve(
                ask.out,
                infra_result(
                    ask.spec,
                    f"Ray did not answer for {self.node_wait_s:g} s: "
                    f"{type(exc).__name__}: {_first_line(exc)}",
                ),
            )

    def _fail_pending(self, message: str) -> None:
        with self._lock:
            gone, self._pending = list(self._pending), deque()
        for ask in gone:
            _resolve(ask.out, DispatchError(f"trial {ask.spec.number}: {message}"))

    def _choose(self, spec: TrialSpec, nodes: list[_Node]) -> _Node | None:
        """The node for ``spec`` now, or None to wait.

        Best fit (the fullest node that still has room), so that whole nodes stay free for
        larger trials; a node in ``avoid_nodes`` only when no other node could ever hold it.
        """

        def free(n: _Node) -> tuple[float, float]:
            g, c = self._held.get(n.id, (0.0, 0.0))
            return n.gpus - g, n.cpus - c

        usable = self._usable(nodes, spec.gpus)
        avoided = {n.id for n in usable if any(a.endswith(n.id[:12]) for a in spec.avoid_nodes)}
        preferred = [n for n in usable if n.id not in avoided] or usable
        room = [n for n in preferred if free(n)[0] >= spec.gpus and free(n)[1] >= self._cpus(n)]
        if not room:
            return None
        return min(room, key=lambda n: (free(n)[0] - spec.gpus, free(n)[1], n.id))

    def _launch(self, ask: _Ask, node: _Node) -> None:
        """Start ``ask`` on ``node`` (a refusal by Ray resolves the trial as lost)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options: dict[str, Any] = {
            "num_gpus": ask.spec.gpus,
            "num_cpus": self._cpus(node),
            "max_retries": 0,  # infra failures are retried by the driver, elsewhere
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node.id, soft=False),
        }
        key = _trial_key(ask.spec)
        relay = self._relay if key in self._hooks else None
        try:
            ref = self._remote.options(**options).remote(ask.spec.model_dump_json(), relay, key)
        except Exception as exc:  # Ray refused the task (disconnected)
            _logger.warning("Ray refused trial %d on %s: %s", ask.spec.number, node.name, exc)
            self._release(node, ask.spec)
            _resolve(
                ask.out,
                infra_result(ask.spec, f"{type(exc).__name__}: {_first_line(exc)}", node=node.name),
            )
            return
        _logger.info("trial %d placed on %s", ask.spec.number, node.name)
        with self._lock:
            self._running[ref] = (ask, node)
        ref.future().add_done_callback(lambda f: self._settle(ref, f))

    def _release(self, node: _Node, spec: TrialSpec) -> None:
        with self._lock:
            g, c = self._held.get(node.id, (0.0, 0.0))
            g, c = max(0.0, g - spec.gpus), max(0.0, c - self._cpus(node))
            if g or c:
                self._held[node.id] = (g, c)
            else:
                self._held.pop(node.id, None)

    def _settle(self, ref: Any, done: Future[Any]) -> None:
        with self._lock:
            ask, node = self._running.pop(ref)
            self._hooks.pop(_trial_key(ask.spec), None)
        # Free the node before the result is out: the driver resubmits at once.
        self._release(node, ask.spec)
        self._wake.set()
        try:
            payload = done.result()
        except self._ray.exceptions.RayTaskError as exc:  # run_trial raised: a bug, not a node
            cause = exc.cause if exc.cause is not None else exc
            _logger.error("trial %d raised on %s: %s", ask.spec.number, node.name, exc)
            _resolve(
                ask.out,
                DispatchError(
                    f"trial {ask.spec.number} failed on Ray node {node.name}: {_first_line(cause)}"
                ),
            )
            return
        except Exception as exc:  # the node or the worker died under the trial, or shutdown
            if self._closed:  # cancelled it: the study is stopping, nothing was lost
                _logger.info(
                    "trial %d stopped on %s as the study stops", ask.spec.number, node.name
                )
            else:
                _logger.warning(
                    "trial %d lost on %s: %s", ask.spec.number, node.name, _first_line(exc)
                )
            _resolve(
                ask.out,
                infra_result(ask.spec, f"{type(exc).__name__}: {_first_line(exc)}", node=node.name),
            )
            return
        try:
            result = TrialResult.model_validate_json(payload["result"])
            result = self._bring_log(result, payload.get("log") or b"")
        except Exception as exc:  # a bug (or a full disk): surface it as this trial's error
            _logger.exception("could not read back trial %d from %s", ask.spec.number, node.name)
            _resolve(
                ask.out,
                DispatchError(
                    f"trial {ask.spec.number}: its result from {node.name} could not be read "
                    f"back: {type(exc).__name__}: {_first_line(exc)}"
                ),
            )
            return
        _logger.info("trial %d ended on %s: %s", ask.spec.number, node.name, result.outcome.value)
        _resolve(ask.out, result)

    def _bring_log(self, result: TrialResult, log: bytes) -> TrialResult:
        if not log or not result.log_path or os.path.exists(result.log_path) or not self.log_dir:
            return result
        path = Path(self.log_dir) / Path(result.log_path).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(log)
        return result.model_copy(update={"log_path": str(path)})

    # -- live windows (pruning) ----------------------------------------------------------

    def _start_relay(self) -> None:
        """Make the window relay and its thread, once (trials without a hook never need it)."""
        with self._lock:
            if self._relay is not None or self._closed:
                return
            # No CPU: it must not take a slot a trial is counted for. On the driver's node
            # where it can (soft): a lost GPU node must not take the relay with it.
            options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": 1000}
            try:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                here = self._ray.get_runtime_context().get_node_id()
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(here, soft=True)
            except Exception as exc:  # a Ray client has no node of its own: anywhere will do
                _logger.debug("window relay placed by Ray: %s", _first_line(exc))
            self._relay = self._ray.remote(_WindowRelay).options(**options).remote()
        thread = threading.Thread(target=self._relay_loop, name="autotune-ray-windows", daemon=True)
        self._relay_thread = thread
        thread.start()

    def _relay_loop(self) -> None:
        """Hand each window to its trial's hook, here in the driver, and post the decision."""
        relay = self._relay
        while not self._closed:
            try:
                windows = self._ray.get(relay.take.remote(1.0), timeout=30.0)
            except (Exception, SystemExit) as exc:  # Ray gone or the actor lost: trials go on
                # unpruned (Ray ends a thread blocked in `get` with SystemExit as it shuts down)
                if not self._closed:
                    _logger.warning("the window relay stopped: %s", _first_line(exc))
                return
            for key, index, flat in windows:
                hook = self._hooks.get(key)
                stop = False
                if hook is not None:
                    try:
                        stop = bool(hook(index, flat))
                    except Exception:  # a hook must not end the relay: the trial goes on
                        _logger.warning("window hook of trial %s failed", key, exc_info=True)
                relay.decide.remote(key, index, stop)

    # -- cleaning up ---------------------------------------------------------------------

    def engine_help(
        self, engine: EngineSpec, *, simulate: bool = False, timeout_s: float = 120.0
    ) -> str | None:
        """The engine's ``--help`` as a node that runs trials sees it (preflight checks flags
        against the installed engine, which the driver's machine may not have)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self._eligible(self.nodes()) or self.nodes()
        if not nodes:
            return None
        strategy = NodeAffinitySchedulingStrategy(nodes[0].id, soft=False)
        ref = self._helper.options(num_cpus=0, max_retries=0, scheduling_strategy=strategy)
        try:
            text = self._ray.get(ref.remote(engine.model_dump_json(), simulate), timeout=timeout_s)
        except Exception as exc:  # no answer from the node: preflight falls back to the table
            _logger.warning(
                "no --help for engine %s from node %s (%s); checking flags against the "
                "bundled table",
                engine.name,
                nodes[0].name,
                _first_line(exc),
            )
            return None
        return text if isinstance(text, str) else None

    def reap_orphans(
        self, log_dir: str | None = None, timeout_s: float = 60.0, expected: bool = False
    ) -> list[dict[str, Any]]:
        """Kill trial servers left on any alive node: those whose launcher died and, given the
        study's ``log_dir``, those an earlier driver run of this study launched. ``expected``:
        the caller cancelled their launchers itself (shutdown), so finding them is no warning.

        One tiny task per node (no CPU asked, so it runs beside busy trials).

        Returns:
            The orphans found, each with ``node`` added.
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not self._ray.is_initialized():  # shut down (Ctrl-C): nothing to ask any node
            _logger.info("Ray is shut down: the study's next start reaps what is left")
            return []
        key = study_key(log_dir) if log_dir else None
        refs = {}
        for node in self.nodes():
            strategy = NodeAffinitySchedulingStrategy(node.id, soft=False)
            opts = {"num_cpus": 0, "max_retries": 0, "scheduling_strategy": strategy}
            refs[node.name] = self._reaper.options(**opts).remote(key, self.driver_id)
        found: list[dict[str, Any]] = []
        for name, ref in refs.items():
            try:
                found += [{**o, "node": name} for o in self._ray.get(ref, timeout=timeout_s)]
            except Exception as exc:  # a node that died meanwhile has nothing left to reap
                _logger.info("no reaper answer from %s: %s", name, _first_line(exc))
                continue
        for orphan in found:
            _logger.log(
                logging.INFO if expected else logging.WARNING,
                "killed leftover trial server pid %s on %s (log %s)",
                orphan.get("pid"),
                orphan.get("node"),
                orphan.get("log"),
            )
        return found

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
            running = list(self._running)
        self._wake.set()
        for ask in pending:
            ask.out.cancel()
        for ref in running:  # the driver is stopping early: do not leave servers running
            try:
                self._ray.cancel(ref, force=True)
            except Exception as exc:  # finished meanwhile, or Ray gone: the reaper follows
                _logger.info("could not cancel a running trial: %s", _first_line(exc))
        if running:
            try:
                self.reap_orphans(timeout_s=30.0, expected=True)
            except Exception as exc:  # Ray gone: each node's next trial reaps what is left
                _logger.warning("could not reap trial servers at shutdown: %s", _first_line(exc))
        if self._relay is not None:
            try:
                self._ray.kill(self._relay)
            except Exception as exc:  # Ray gone: the actor went with it
                _logger.info("could not stop the window relay: %s", _first_line(exc))
            self._relay = None
        if self._relay_thread is not None and self._relay_thread is not threading.current_thread():
            # Its `get` ends as the actor dies: let it return before Ray goes away under it.
            self._relay_thread.join(timeout=10.0)
            self._relay_thread = None
        if self._started:
            self._ray.shutdown()
            self._started = False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _resolve(out: Future[TrialResult], outcome: TrialResult | BaseException) -> None:
    """Give a trial's future its result (or error), unless shutdown cancelled it meanwhile."""
    try:
        if isinstance(outcome, BaseException):
            out.set_exception(outcome)
        else:
            out.set_result(outcome)
    except InvalidStateError:  # cancelled by shutdown: nobody waits for it any more
        _logger.debug("a result arrived for a cancelled trial")
