"""The records that cross a process or host boundary: frozen, JSON-safe pydantic models.

A ``TrialSpec`` goes from the driver to a node; a ``TrialResult`` comes back. Nothing else
crosses: Optuna trials, Ray handles and MLflow runs never leave their own modules.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Outcome(StrEnum):
    """How a trial ended: exactly one, decided on the node from evidence."""

    OK = "ok"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    SLO_VIOLATED = "slo_violated"
    PRUNED = "pruned"
    INFRA = "infra"
    # Set by the driver, not a node: the trial's driver died while it ran (queued again).
    INTERRUPTED = "interrupted"


class Cause(StrEnum):
    """The closed vocabulary of failure causes (docs/failures.md explains each)."""

    KV_POOL_OOM = "kv_pool_oom"
    CUDA_OOM = "cuda_oom"
    CUDA_GRAPH_CAPTURE = "cuda_graph_capture"
    ARCH_UNSUPPORTED = "arch_unsupported"
    NCCL_ERROR = "nccl_error"
    INVALID_ARGUMENT = "invalid_argument"
    ASSERTION = "assertion"
    IMPORT_ERROR = "import_error"
    MODEL_UNSUPPORTED = "model_unsupported"
    HOST_OOM = "host_oom"
    WATCHDOG_TIMEOUT = "watchdog_timeout"
    KILLED = "killed"
    PORT_IN_USE = "port_in_use"
    STARTUP_TIMEOUT = "startup_timeout"
    RUNTIME_CRASH = "runtime_crash"
    BENCHMARK_ERRORS = "benchmark_errors"
    GPU_NOT_CLEAN = "gpu_not_clean"
    NODE_LOST = "node_lost"
    # Proposals the driver did not launch (records.SkipKind says which, with the reason).
    DEAD_END = "dead_end"
    CONSTRAINT = "constraint"
    PREDICTED_CRASH = "predicted_crash"
    UNKNOWN = "unknown"


# Causes that are not the configuration's fault: the trial is retried elsewhere.
INFRA_CAUSES = frozenset({Cause.PORT_IN_USE, Cause.GPU_NOT_CLEAN, Cause.NODE_LOST})
# Causes where more memory-hungry settings can only fail the same way.
MEMORY_CAUSES = frozenset(
    {Cause.KV_POOL_OOM, Cause.CUDA_OOM, Cause.CUDA_GRAPH_CAPTURE, Cause.HOST_OOM}
)


class Phase(StrEnum):
    """Where in a trial's life something happened, in order."""

    LAUNCH = "launch"
    LOAD = "load"
    MEMORY_POOL = "memory_pool"
    GRAPH_CAPTURE = "graph_capture"
    READY = "ready"
    WARMUP = "warmup"
    BENCHMARK = "benchmark"
    TEARDOWN = "teardown"


class Rule(_Frozen):
    """One failure rule: a regex over log lines -> cause, phase, hint.

    ``blame`` names flags (``--enable-torch-symm-mem``) or environment variables
    (``NCCL_PROTO``) that, when present in the trial's launch, are the reason for the failure;
    the driver maps them back to parameter values and never launches those values again.
    """

    id: str
    pattern: str
    cause: Cause
    phase: Phase | None = None  # None: the phase reached when the line was seen
    hint: str = ""
    permanent: bool = True  # False: could pass on a retry (flaky, infra)
    blame: tuple[str, ...] = ()
    fatal: bool = True  # False: evidence only, does not end the trial by itself
    # A regex that must also match within NEAR_LINES of the hit (e.g. a KV-pool frame near an
    # out-of-memory line); None: the pattern alone decides.
    near: str | None = None
    # Hints that replace ``hint`` when the failure's phase is the given one (an engine's
    # advice differs between, say, an OOM while capturing graphs and one while serving).
    phase_hints: tuple[tuple[Phase, str], ...] = ()


class Milestone(_Frozen):
    """A log pattern that marks progress through startup (weights loaded, graphs captured)."""

    phase: Phase
    pattern: str
    label: str


class Workload(_Frozen):
    """What the benchmark sends: a fixed number of requests at a fixed concurrency."""

    concurrency: int = Field(8, ge=1)
    num_requests: int = Field(32, ge=1)
    prompt_len: int = Field(64, ge=1)
    output_len: int = Field(64, ge=1)
    warmup_requests: int = Field(2, ge=0)
    endpoint: str = "/v1/completions"  # or "/generate" (SGLang native)
    model: str | None = None  # the "model" field of completion requests
    request_timeout_s: float = Field(120.0, gt=0)
    seed: int = 0
    extra_body: dict[str, Any] = Field(default_factory=dict)
    # Measurement windows on one running server (no relaunch): each window sends
    # ``num_requests`` at ``concurrency``; the result keeps every window and their median.
    windows: int = Field(3, ge=1, le=100)
    # The study's peak load: a dedicated last window at this concurrency (at least
    # ``2 * peak_concurrency`` requests) that a configuration must survive without failed
    # requests to be a winner. None: the workload's own concurrency is the peak (the last
    # window is the peak window).
    peak_concurrency: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _peak_above_concurrency(self) -> Workload:
        if self.peak_concurrency is not None and self.peak_concurrency < self.concurrency:
            raise ValueError(
                f"peak_concurrency {self.peak_concurrency} is below concurrency "
                f"{self.concurrency} (the peak is the highest load: raise it or leave it unset)"
            )
        return self

    @property
    def peak(self) -> int:
        """The highest concurrency the workload runs at."""
        return self.peak_concurrency or self.concurrency


class Limits(_Frozen):
    """Time limits of one trial."""

    startup_s: float = Field(600.0, gt=0)
    benchmark_s: float = Field(900.0, gt=0)  # each measurement window, the warm-up, a job
    teardown_grace_s: float = Field(10.0, ge=0)
    gpu_release_s: float = Field(120.0, ge=0)


class Goodput(_Frozen):
    """Per-request bounds (simulated-or-measured milliseconds) a request must meet to count
    toward goodput, as DistServe and vLLM's ``--goodput`` define it; None: no bound."""

    ttft_ms: float | None = Field(None, gt=0)
    tpot_ms: float | None = Field(None, gt=0)  # (e2e - ttft) / (tokens - 1)
    itl_ms: float | None = Field(None, gt=0)  # the request's largest gap between tokens
    e2e_ms: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _some_bound(self) -> Goodput:
        if not any(v is not None for v in self.bounds().values()):
            raise ValueError("give at least one bound: ttft_ms, tpot_ms, itl_ms or e2e_ms")
        return self

    def bounds(self) -> dict[str, float | None]:
        """``{name: bound}`` for every per-request quantity."""
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "itl_ms": self.itl_ms,
            "e2e_ms": self.e2e_ms,
        }


class Sweep(_Frozen):
    """Load steps on one running server: a list or a geometric range of concurrencies (or
    request rates), or the highest load that meets every SLO, found by bisection."""

    over: Literal["concurrency", "rate"] = "concurrency"
    mode: Literal["steps", "max_under_slo"] = "steps"
    values: list[float] | None = None  # the loads to step through (mode steps)
    low: float | None = Field(None, gt=0)  # a geometric range, or the bisection's bounds
    high: float | None = Field(None, gt=0)
    factor: float = Field(2.0, gt=1)  # ratio between steps of a geometric range
    probes: int = Field(8, ge=2, le=64)  # most loads a bisection measures, bounds included
    tolerance: float = Field(0.1, gt=0, lt=1)  # a bisection stops when (high-low)/low is below

    def loads(self) -> list[float]:
        """The loads of mode ``steps``, ascending (a geometric range ends at ``high``)."""
        if self.values is not None:
            return sorted(self.values)
        assert self.low is not None and self.high is not None
        out: list[float] = []
        load = self.low
        while load < self.high * (1 - 1e-9):
            out.append(self.round(load))
            load *= self.factor
        out.append(self.round(self.high))
        return sorted(set(out))

    def round(self, load: float) -> float:
        """A concurrency is a whole number of requests in flight; a rate stays as it is."""
        return float(max(1, round(load))) if self.over == "concurrency" else load

    @property
    def metric(self) -> str:
        """The metric that reports the highest load meeting every SLO."""
        return f"max_{self.over}_under_slo"


class Scenario(_Frozen):
    """One named traffic shape measured on the running server, with its own SLO.

    ``name`` prefixes its metrics (``chat.ttft_p99_ms``); the implicit scenario of a space
    with a single ``workload:`` has no name, and its metrics no prefix.
    """

    name: str = Field("", pattern=r"^([A-Za-z_][A-Za-z0-9_-]*)?$")
    workload: Workload = Field(default_factory=Workload)
    slo: dict[str, float] = Field(default_factory=dict)  # upper bounds on its metrics
    sweep: Sweep | None = None
    goodput: Goodput | None = None

    @property
    def prefix(self) -> str:
        """What its metric names start with: ``"chat."``, or nothing for the implicit one."""
        return f"{self.name}." if self.name else ""


class Combine(_Frozen):
    """How the objective metric(s) over several scenarios become one value per trial.

    ``weighted_sum`` and ``weighted_mean`` weigh each scenario's value (1 when not named);
    ``worst`` takes the worst scenario: the minimum of a metric maximised, the maximum of
    one minimised.
    """

    how: Literal["weighted_sum", "weighted_mean", "worst"] = "weighted_mean"
    weights: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, Literal["maximize", "minimize"]] = Field(default_factory=dict)


class TrialSpec(_Frozen):
    """Everything a node needs to run one trial; built by the driver from one configuration."""

    study: str
    number: int
    engine: str
    params: dict[str, Any]
    argv: list[str]  # the server command; ``{port}`` and ``{host}`` are filled in on the node
    # "server": launch, wait ready, benchmark over HTTP, tear down.
    # "job": run to completion; metrics come from a line ``AUTOTUNE_METRICS {json}`` in its output.
    mode: Literal["server", "job"] = "server"
    env: dict[str, str] = Field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0  # 0: the node picks a free port
    health_path: str = "/health"
    workload: Workload = Field(default_factory=Workload)
    limits: Limits = Field(default_factory=Limits)
    rules: list[Rule] = Field(default_factory=list)
    milestones: list[Milestone] = Field(default_factory=list)
    ready_pattern: str | None = None  # a log line that says the server is up (optional)
    gpus: int = 0
    log_dir: str  # where the node writes the server log (a shared or node-local folder)
    cwd: str | None = None
    simulated: bool = False
    attempt: int = 0  # infra retries so far
    avoid_nodes: list[str] = Field(default_factory=list)  # nodes where an infra failure happened
    # Named scenarios measured one after another on the same server; empty: the one implicit
    # scenario of ``workload`` (today's windows and peak). ``combine`` makes the objective.
    scenarios: list[Scenario] = Field(default_factory=list)
    combine: Combine | None = None


class Stats(_Frozen):
    """Summary of one latency distribution, milliseconds."""

    mean: float
    p50: float
    p90: float
    p99: float


class Metrics(_Frozen):
    """What the benchmark measured (a ``job`` trial fills ``extra`` and leaves the rest zero)."""

    output_tok_s: float = 0.0
    request_s: float = 0.0
    ttft_ms: Stats | None = None
    itl_ms: Stats | None = None
    e2e_ms: Stats | None = None
    tpot_ms: Stats | None = None
    completed: int = 0
    failed: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    accept_length: float | None = None  # speculative decoding, from /get_server_info
    extra: dict[str, float] = Field(default_factory=dict)  # job metrics, e.g. allreduce_p50_us

    def flat(self) -> dict[str, float]:
        """Metrics as ``{name: value}``: ``output_tok_s``, ``ttft_p99_ms``, ``e2e_mean_ms``, ..."""
        out: dict[str, float] = {
            "output_tok_s": self.output_tok_s,
            "request_s": self.request_s,
            "completed": float(self.completed),
            "failed": float(self.failed),
            "output_tokens": float(self.output_tokens),
            "duration_s": self.duration_s,
        }
        for name in ("ttft", "itl", "e2e", "tpot"):
            stats: Stats | None = getattr(self, f"{name}_ms")
            if stats is None:
                continue
            for key in ("mean", "p50", "p90", "p99"):
                out[f"{name}_{key}_ms"] = getattr(stats, key)
        if self.accept_length is not None:
            out["accept_length"] = self.accept_length
        out.update(self.extra)
        return out


class Failure(_Frozen):
    """Why a trial did not produce valid metrics."""

    cause: Cause
    phase: Phase
    hint: str = ""
    evidence: list[str] = Field(default_factory=list)  # the matching log lines
    rule: str | None = None  # id of the rule that matched
    permanent: bool = True
    blame: list[str] = Field(default_factory=list)  # flags/env present in the launch that caused it
    exit_code: int | None = None
    log_tail: list[str] = Field(default_factory=list)
    message: str = ""  # one line, for tables


class Timings(_Frozen):
    """Seconds spent in each stage of a trial."""

    launch_to_ready_s: float | None = None
    warmup_s: float | None = None
    benchmark_s: float | None = None
    teardown_s: float | None = None
    total_s: float = 0.0
    # Wall-clock (epoch) instants, for overhead between trials: launch, ready, node clean again.
    launched_at: float | None = None
    ready_at: float | None = None
    clean_at: float | None = None


class Cleanup(_Frozen):
    """Proof that teardown left the node clean."""

    processes_left: int = 0
    port_free: bool = True
    gpu_mem_before_mib: list[float] | None = None  # per visible GPU, before launch
    gpu_mem_after_mib: list[float] | None = None  # after teardown (waited for)
    gpu_clean: bool | None = None  # None: no GPU to check
    clean: bool = True


class PeakLoad(_Frozen):
    """Whether the configuration survived the workload's peak load without failed requests.

    ``dedicated``: a window of its own at ``Workload.peak_concurrency``; otherwise the last
    measured window (the workload's concurrency is its peak). A configuration whose peak
    window failed requests (``survived`` False) must not be declared a winner, even though
    its measured windows are valid (outcome ``ok``).
    """

    concurrency: int
    dedicated: bool = False
    survived: bool = True
    requested: int = 0
    completed: int = 0
    failed: int = 0
    errors: list[str] = Field(default_factory=list)  # the first distinct request errors
    metrics: dict[str, float] = Field(default_factory=dict)  # the window's Metrics.flat()


class SweepStep(_Frozen):
    """One load of a sweep or bisection: its metrics and whether it met every SLO."""

    load: float  # the concurrency or the request rate
    metrics: dict[str, float] = Field(default_factory=dict)  # Metrics.flat() (+ goodput)
    meets_slo: bool = True
    requested: int = 0
    failed: int = 0


class ScenarioResult(_Frozen):
    """What one scenario measured (unprefixed metric names; the trial's ``metrics`` holds
    them prefixed)."""

    name: str
    metrics: dict[str, float] = Field(default_factory=dict)
    windows: list[dict[str, float]] = Field(default_factory=list)
    over: str | None = None  # the swept quantity, when it swept
    steps: list[SweepStep] = Field(default_factory=list)  # in the order measured


class TrialResult(_Frozen):
    """What one trial produced, sent back from the node."""

    study: str
    number: int
    outcome: Outcome
    metrics: Metrics | None = None
    failure: Failure | None = None
    timings: Timings = Field(default_factory=Timings)
    cleanup: Cleanup = Field(default_factory=Cleanup)
    milestones: list[str] = Field(default_factory=list)  # labels reached, in order
    log_path: str | None = None
    node: str = ""
    port: int | None = None
    simulated: bool = False
    attempt: int = 0
    server_info: dict[str, Any] = Field(default_factory=dict)
    # Metrics.flat() of each measurement window on the same running server, in order (the
    # dedicated peak window is not one of them); ``metrics`` is their aggregate: the median
    # over windows of rates and latency statistics, the sum of counts and durations.
    windows: list[dict[str, float]] = Field(default_factory=list)
    peak: PeakLoad | None = None  # None: no peak window ran (job mode, failed before it)
    gpu: str = ""  # the GPUs it ran on, e.g. "8x NVIDIA H200" ("" without a GPU or NVML)
    scenarios: list[ScenarioResult] = Field(default_factory=list)  # named or swept ones
