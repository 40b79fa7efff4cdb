"""The records that cross a process or host boundary: frozen, JSON-safe pydantic models.

A ``TrialSpec`` goes from the driver to a node; a ``TrialResult`` comes back. Nothing else
crosses: Optuna trials, Ray handles and MLflow runs never leave their own modules.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Direction(StrEnum):
    """Whether larger or smaller values of a metric are better (an objective's direction)."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


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
    # True: a generic line (an assertion, a crash, a loose out-of-memory) that says *that*
    # something failed; a more specific family named in its words or the log's is the cause.
    generic: bool = False
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


class FieldError(ValueError):
    """A validation error about one key below the model being validated (``at``: its path).

    The space loader turns it into ``FILE:LINE: workload.<at>: message`` (as its own
    ``LocatedError``); it lives here because the node side may import only ``models``.
    """

    def __init__(self, message: str, at: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.at = at


def _written(info: ValidationInfo) -> bool:
    """Validating what a person wrote (the space loader says so), not a record's JSON."""
    return isinstance(info.context, dict) and bool(info.context.get(WRITTEN))


WRITTEN = "written"  # the validation context key the space loader sets


class _Described(_Frozen):
    # Attribute docstrings become the fields' descriptions (``autotune schema``, errors).
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class LengthDist(_Described):
    """A distribution of lengths in tokens: ``uniform`` over ``low..high``, or ``normal``
    with ``mean`` and ``std`` (rounded, then clipped to ``low..high``)."""

    dist: Literal["uniform", "normal"]
    """uniform (low, high) or normal (mean, std; low, high clip it)."""
    low: int | None = Field(None, ge=1)
    """Shortest length (uniform: required; normal: clip, default 1)."""
    high: int | None = Field(None, ge=1)
    """Longest length (uniform: required; normal: clip, default none)."""
    mean: float | None = Field(None, gt=0)
    """normal: the mean length."""
    std: float | None = Field(None, ge=0)
    """normal: the standard deviation."""

    @model_validator(mode="after")
    def _fields_of_dist(self) -> LengthDist:
        if self.dist == "uniform":
            for key in ("low", "high"):
                if getattr(self, key) is None:
                    raise FieldError(
                        f"a uniform length needs {key} (write {{dist: uniform, low: 16, "
                        "high: 512})",
                        (key,),
                    )
            for key in ("mean", "std"):
                if getattr(self, key) is not None:
                    raise FieldError(
                        f"{key} is for dist: normal (a uniform length has low and high only)",
                        (key,),
                    )
        else:
            for key in ("mean", "std"):
                if getattr(self, key) is None:
                    raise FieldError(
                        f"a normal length needs {key} (write {{dist: normal, mean: 200, std: 50}})",
                        (key,),
                    )
        if self.low is not None and self.high is not None and self.low > self.high:
            raise FieldError(f"low {self.low} is above high {self.high} (swap them)", ("low",))
        return self


Length = int | Literal["dataset"] | LengthDist
"""A token length: a fixed number, a ``LengthDist``, or ``"dataset"`` (the file's own)."""


def _length(value: Any, info: ValidationInfo) -> Any:
    """Validates one length field with one clear error (a plain union reports one per member)."""
    name = info.field_name or "length"
    example = f"{name}: 128, {name}: {{dist: uniform, low: 16, high: 512}}"
    if isinstance(value, bool):
        raise FieldError(f"{name} is a boolean (write a length: {example})")
    if isinstance(value, int):
        if value < 1:
            raise FieldError(f"{name} {value} is below 1 (a length in tokens: at least 1)")
        return value
    if isinstance(value, LengthDist) or value == "dataset":
        return value
    if isinstance(value, dict):
        try:
            return LengthDist.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            inner = (err.get("ctx") or {}).get("error")
            at = tuple(err["loc"])
            if isinstance(inner, FieldError):
                raise FieldError(str(inner), at + inner.at) from None
            if err["type"] == "extra_forbidden":
                message = f"unknown key {at[-1]!r} (a length has dist, low, high, mean, std)"
            elif err["type"] == "literal_error":
                message = f"dist {err.get('input')!r} is not uniform or normal"
            else:
                message = f"{err['msg']} (got {err.get('input')!r})"
            raise FieldError(message, at) from None
    raise FieldError(f"{value!r} is not a length (write {example}, or {name}: dataset)")


# Common short English words, about one token each in the usual BPE vocabularies: generated
# prompts are drawn from them (node/workload.py), and a dummy model's vocabulary holds each as
# one token (engines/dummymodel.py).
PROMPT_WORDS = (
    "the of and to in is that it for was on are as with his they at be this have from or one "
    "had by word but not what all were we when your can said there use an each which she do how "
    "their if will up other about out many then them these so some her would make like him into "
    "time has look two more write go see number no way could people my than first water been "
    "call who oil its now find long down day did get come made may part over new sound take only "
    "little work know place year live me back give most very after thing our just name good "
    "sentence man think say great where help through much before line right too mean old any "
    "same tell boy follow came want show also around form three small set put end does another "
    "well large must big even such because turn here why ask went men read need land different "
    "home us move try kind hand picture again change off play spell air away animal house point"
).split()


def estimate_tokens(text: str) -> int:
    """Tokens in ``text`` without a tokenizer: four characters a token, the usual rule of
    thumb for English in BPE vocabularies (the stand-in server counts the same way)."""
    return max(1, -(-len(text) // 4))


class DatasetItem(_Frozen):
    """One request read from a prompt file: its user turns and lengths (estimated tokens)."""

    turns: tuple[str, ...] = Field(min_length=1)  # the user messages; one for a plain prompt
    prompt_len: int = Field(1, ge=1)  # estimated tokens of the first turn
    output_len: int | None = Field(None, ge=1)  # the file's output length, when it has one
    # Estimated tokens of the recorded answers (ShareGPT), used when output_len: dataset.
    answer_lens: tuple[int, ...] = ()


PROMPT_SOURCES = ("generated", "jsonl", "sharegpt", "shared_prefix")
DATASET_SOURCES = frozenset({"jsonl", "sharegpt"})
# A materialised prompt list travels in every TrialSpec: it stays a sample, not the data set.
MAX_ITEMS = 2048
MAX_ITEMS_CHARS = 8 << 20


class Prompts(_Described):
    """Where prompts come from: ``generated`` words (default), a ``jsonl`` file, a ``sharegpt``
    file (conversations) or ``shared_prefix`` groups. Files are read by the space loader on
    the driver and a capped sample travels in the trial's spec (nodes need not share a disk)."""

    source: Literal["generated", "jsonl", "sharegpt", "shared_prefix"] = "generated"
    """generated, jsonl, sharegpt or shared_prefix."""
    path: str | None = None
    """jsonl/sharegpt: the local file, relative to the space file's folder."""
    prompt_field: str = "prompt"
    """jsonl: the key holding the prompt text."""
    output_field: str = "output_len"
    """jsonl: the key holding a line's output length in tokens (used with output_len: dataset)."""
    min_len: int = Field(4, ge=1)
    """sharegpt: drop conversations whose prompt or answer is shorter (estimated tokens)."""
    max_prompt_len: int | None = Field(1024, ge=1)
    """sharegpt/jsonl: drop prompts longer than this (estimated tokens; null: keep all)."""
    max_total_len: int | None = Field(2048, ge=2)
    """sharegpt: drop conversations whose prompt + answer is longer (null: keep all)."""
    prefix_len: int = Field(512, ge=1)
    """shared_prefix: tokens of the prefix each group shares (a system prompt, a document)."""
    groups: int = Field(8, ge=1)
    """shared_prefix: how many distinct prefixes."""
    per_group: int = Field(16, ge=1)
    """shared_prefix: questions per prefix (the fan-out)."""
    items: tuple[DatasetItem, ...] = ()
    """Set by autotune: the sample read from ``path`` (do not write it)."""

    @model_validator(mode="after")
    def _fields_of_source(self, info: ValidationInfo) -> Prompts:
        dataset = self.source in DATASET_SOURCES
        if dataset and self.path is None:
            raise FieldError(
                f"source {self.source} needs path (the local file, relative to the space file)",
                ("path",),
            )
        if not dataset and self.path is not None:
            raise FieldError(
                f"path is for source jsonl or sharegpt, not {self.source} (remove it)", ("path",)
            )
        mine = {
            "jsonl": {"prompt_field", "output_field", "max_prompt_len"},
            "sharegpt": {"min_len", "max_prompt_len", "max_total_len"},
            "shared_prefix": {"prefix_len", "groups", "per_group"},
            "generated": set(),
        }[self.source]
        if _written(info):
            for key in sorted(self.model_fields_set - mine - {"source", "path", "items"}):
                raise FieldError(f"{key} is not used by source {self.source} (remove it)", (key,))
        return self


class Workload(_Described):
    """What the benchmark sends, and how. The simple form is a closed loop: ``num_requests``
    requests of ``prompt_len`` generated words, ``concurrency`` at a time. ``rate`` makes it
    an open loop; ``prompts`` picks another source; lengths may be distributions;
    ``turns`` makes sessions that resend their history (docs/workloads.md)."""

    concurrency: int = Field(8, ge=1)
    """Closed loop: requests in flight at once (each one that ends starts the next)."""
    num_requests: int = Field(32, ge=1)
    """Requests per measurement window (with turns > 1: requests, in whole sessions)."""
    prompt_len: Length = 64
    """Prompt tokens: a number, {dist: uniform, low, high}, {dist: normal, mean, std}, or
    dataset (a prompt file's own prompts)."""
    output_len: Length = 64
    """Output tokens asked for: as prompt_len; dataset: the file's lengths."""
    warmup_requests: int = Field(2, ge=0)
    """Requests sent before measuring (their own prompts)."""
    endpoint: Literal["/v1/completions", "/generate", "/v1/chat/completions"] = "/v1/completions"
    """/v1/completions (OpenAI), /v1/chat/completions (OpenAI chat: the server applies the
    model's chat template) or /generate (SGLang native)."""
    model: str | None = None
    """The model field of OpenAI requests (default: the study's model)."""
    request_timeout_s: float = Field(120.0, gt=0)
    """The longest silence while a response streams."""
    seed: int = 0
    """Seeds prompts, lengths and arrival times: every trial gets the same requests."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields added to every request body. SGLang and vLLM studies send ignore_eos: true on
    the OpenAI endpoints unless this sets it, so every configuration generates the output
    length asked for (as their own benchmarks do)."""
    windows: int = Field(3, ge=1, le=100)
    """Measurement windows on one running server (no relaunch); the result is their median."""
    peak_concurrency: int | None = Field(None, ge=1)
    """Closed loop: a last window at this concurrency (at least 2x it requests) that a
    configuration must survive without failed requests to win (null: the last window)."""
    rate: float | None = Field(None, gt=0)
    """Open loop: requests (sessions, with turns > 1) started per second, whatever the server
    does (null: closed loop at concurrency)."""
    arrival: Literal["poisson", "gamma"] = "poisson"
    """Open loop: poisson (exponential gaps) or gamma (bursty: see burstiness)."""
    burstiness: float = Field(1.0, gt=0)
    """gamma: the shape of the gaps (1: Poisson; below 1: burstier, CV = 1/sqrt(burstiness))."""
    max_concurrency: int | None = Field(None, ge=1)
    """Open loop: at most this many requests in flight; arrivals wait (null: no cap)."""
    # At most 600 s: a window, with its last requests draining, must end within the node's
    # benchmark limit (Limits.benchmark_s, 900 s).
    duration_s: float | None = Field(None, gt=0, le=600)
    """Send for this long per window instead of num_requests (open loop: arrivals in it;
    at most 600 s)."""
    prompts: Prompts = Field(default_factory=Prompts)
    """Where prompts come from (source: generated, jsonl, sharegpt, shared_prefix)."""
    turns: int = Field(1, ge=1, le=64)
    """Turns per session: each turn resends the history with the previous answers."""

    _lengths = field_validator("prompt_len", "output_len", mode="before")(_length)

    @model_validator(mode="before")
    @classmethod
    def _dataset_lengths(cls, data: Any) -> Any:
        # A prompt file brings its own prompts (and ShareGPT its answers' lengths).
        if isinstance(data, dict):
            prompts = data.get("prompts")
            source = (
                prompts.get("source")
                if isinstance(prompts, dict)
                else getattr(prompts, "source", None)
            )
            if source in DATASET_SOURCES:
                data = {"prompt_len": "dataset", "output_len": "dataset", **data}
        return data

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Workload:
        # Keys that do nothing in this form are refused only as written in a space file: a
        # workload coming back from JSON has every key, and a sweep may set rate on a copy.
        given = self.model_fields_set if _written(info) else set()
        if self.rate is None:
            for key in ("arrival", "burstiness", "max_concurrency"):
                if key in given:
                    raise FieldError(
                        f"{key} is for an open loop (set rate: requests per second, or remove "
                        f"{key})",
                        (key,),
                    )
        else:
            if "concurrency" in given:
                raise FieldError(
                    "concurrency is the closed loop's; with rate, cap requests in flight with "
                    "max_concurrency (or remove rate)",
                    ("concurrency",),
                )
            if self.peak_concurrency is not None and "peak_concurrency" in given:
                raise FieldError(
                    "peak_concurrency is a closed-loop window (remove it, or remove rate)",
                    ("peak_concurrency",),
                )
        if self.arrival == "poisson" and self.burstiness != 1.0:
            raise FieldError(
                "burstiness shapes gamma arrivals (set arrival: gamma, or remove burstiness)",
                ("burstiness",),
            )
        if self.duration_s is not None and "num_requests" in given:
            raise FieldError(
                "give num_requests or duration_s, not both (remove one)", ("num_requests",)
            )
        dataset = self.prompts.source in DATASET_SOURCES
        if dataset and self.prompt_len != "dataset":
            raise FieldError(
                f"prompts come from the {self.prompts.source} file (write prompt_len: dataset, "
                "or remove it)",
                ("prompt_len",),
            )
        for key in ("prompt_len", "output_len"):
            if not dataset and getattr(self, key) == "dataset":
                raise FieldError(
                    f"{key}: dataset needs prompts from a file (prompts: {{source: jsonl, "
                    "path: ...} or sharegpt), or a length",
                    (key,),
                )
        if self.peak_concurrency is not None and self.peak_concurrency < self.concurrency:
            raise FieldError(
                f"peak_concurrency {self.peak_concurrency} is below concurrency "
                f"{self.concurrency} (the peak is the highest load: raise it or leave it unset)",
                ("peak_concurrency",),
            )
        return self

    @property
    def peak(self) -> int:
        """The highest concurrency the workload runs at (closed loop)."""
        return self.peak_concurrency or self.concurrency

    @property
    def open_loop(self) -> bool:
        """Requests start at ``rate`` whatever the server does (not when one ends)."""
        return self.rate is not None


class Limits(_Frozen):
    """Time limits of one trial."""

    startup_s: float = Field(600.0, gt=0)
    benchmark_s: float = Field(900.0, gt=0)  # each measurement window, the warm-up, a job
    teardown_grace_s: float = Field(10.0, ge=0)
    gpu_release_s: float = Field(120.0, ge=0)


class Goodput(_Described):
    """Per-request bounds (simulated-or-measured milliseconds) a request must meet to count
    toward goodput, as DistServe and vLLM's ``--goodput`` define it; None: no bound."""

    ttft_ms: float | None = Field(None, gt=0)
    """The request's time to first token."""
    tpot_ms: float | None = Field(None, gt=0)
    """The request's time per output token after the first: (e2e - ttft) / (tokens - 1)."""
    itl_ms: float | None = Field(None, gt=0)
    """The request's largest gap between two tokens (a stall its user sees)."""
    e2e_ms: float | None = Field(None, gt=0)
    """The request's whole time."""

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


class Sweep(_Described):
    """Load steps on one running server: a list or a geometric range of concurrencies (or
    request rates), or the highest load that meets every SLO, found by bisection."""

    over: Literal["concurrency", "rate"] = "concurrency"
    """concurrency (a closed loop at each load) or rate (an open loop: requests per second)."""
    mode: Literal["steps", "max_under_slo"] = "steps"
    """steps: measure every load; max_under_slo: the highest load meeting every SLO."""
    values: list[float] | None = None
    """steps: the loads to measure (or low/high/factor)."""
    low: float | None = Field(None, gt=0)
    """The lowest load: of a geometric range, or the bisection's lower bound."""
    high: float | None = Field(None, gt=0)
    """The highest load: of a geometric range, or the bisection's upper bound."""
    factor: float = Field(2.0, gt=1)
    """steps: the ratio between loads of a geometric range from low to high."""
    probes: int = Field(8, ge=2, le=64)
    """max_under_slo: the most loads measured, both bounds included."""
    tolerance: float = Field(0.1, gt=0, lt=1)
    """max_under_slo: stop once (high - low) / low is below this."""

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


class Scenario(_Described):
    """One named traffic shape measured on the running server, with its own SLO.

    ``name`` prefixes its metrics (``chat.ttft_p99_ms``); the implicit scenario of a space
    with a single ``workload:`` has no name, and its metrics no prefix.
    """

    name: str = Field("", pattern=r"^([A-Za-z_][A-Za-z0-9_-]*)?$")
    """Prefixes its metrics: chat -> chat.ttft_p99_ms."""
    workload: Workload = Field(default_factory=Workload)
    """What this scenario sends."""
    slo: dict[str, float] = Field(default_factory=dict)
    """Upper bounds on its metrics; a sweep's bisection searches against them."""
    sweep: Sweep | None = None
    """Load steps, or the highest load meeting the SLO (bisection)."""
    goodput: Goodput | None = None
    """Per-request bounds; adds goodput_req_s and goodput_miss_pct."""

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
    metrics: dict[str, str] = Field(default_factory=dict)  # objective metric -> direction


class EngineSpec(_Described):
    """Which server to launch and how (the ``engine:`` part of a space file).

    It lives here, not in ``space/schema.py``, because the engines take it and the space
    loader lists the engines: the engines must not import the space.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    """Engine: a name registered in ``autotune.engines`` (sglang, vllm, transformers, ...)."""
    version: str | None = None
    """Engine version, for renamed flags (sglang 0.5.9 vs 0.5.23)."""
    python: str = "{python}"
    """Interpreter for ``python -m`` launches (``{python}``: the node's own autotune Python)."""
    gpus: int = Field(0, ge=0)
    """GPUs one trial holds (tp x dp); 0 for CPU engines."""
    host: str = "127.0.0.1"
    """Address the server binds to."""
    command: list[str] | None = None
    """An argv template with {port}, {host}, {model} placeholders, for engines that launch a
    command given here (the ``command`` engine)."""
    health_path: str | None = None
    """Readiness URL path; the engine's own default when unset."""
    startup_timeout_s: float = Field(600.0, gt=0)
    """Seconds a server may take to become ready."""
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Engine-specific extras."""


# Rates a window's planned requests bound from above while it runs (max_tokens caps each
# output; prompt lengths are estimates, so input_tok_s has no bound): TrialSpec.give_up_below.
BOUNDED_RATES = ("output_tok_s", "request_s")


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
    # the engine's flags with the choices an error message may quote (engines/flagtable.py
    # message_flags): a refused setting's hint names the flags its message speaks of
    flags: dict[str, list[str]] = Field(default_factory=dict)
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
    # A prunable trial's floor, ``{metric: value}`` of BOUNDED_RATES: its first window stops as
    # soon as it can no longer reach it (its planned total over the time already spent is
    # below), and the trial is pruned; empty: every window ends.
    give_up_below: dict[str, float] = Field(default_factory=dict)


class Stats(_Frozen):
    """Summary of one latency distribution, milliseconds."""

    mean: float
    p50: float
    p90: float
    p99: float


# Metrics.extra: % of completed requests counted by their stream pieces because the server sent
# no token count; a piece may carry several tokens, so tok/s then reads low.
PIECES_COUNTED = "pieces_counted_pct"


class Metrics(_Frozen):
    """What the benchmark measured (a ``job`` trial fills ``extra`` and leaves the rest zero)."""

    output_tok_s: float = 0.0
    request_s: float = 0.0
    # Prompt tokens per second: the server's count (usage) when it reports one, else the
    # load generator's estimate of what it sent.
    input_tok_s: float = 0.0
    ttft_ms: Stats | None = None
    itl_ms: Stats | None = None
    e2e_ms: Stats | None = None
    tpot_ms: Stats | None = None
    completed: int = 0
    failed: int = 0
    output_tokens: int = 0
    input_tokens: int = 0
    duration_s: float = 0.0
    accept_length: float | None = None  # speculative decoding, from /get_server_info
    extra: dict[str, float] = Field(default_factory=dict)  # job metrics, e.g. allreduce_p50_us

    def flat(self) -> dict[str, float]:
        """Metrics as ``{name: value}``: ``output_tok_s``, ``ttft_p99_ms``, ``e2e_mean_ms``, ..."""
        out: dict[str, float] = {
            "output_tok_s": self.output_tok_s,
            "request_s": self.request_s,
            "input_tok_s": self.input_tok_s,
            "completed": float(self.completed),
            "failed": float(self.failed),
            "output_tokens": float(self.output_tokens),
            "input_tokens": float(self.input_tokens),
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


# ``Failure.rule`` of a cause learnt from a log's words where no rule named one (node/learned.py):
# a guess, so the study builds no rule on it (study/deadends.py).
LEARNT_RULE = "learnt"


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
    engine: str | None = None  # the engine the log reads as written by (node/logparse.py)
    # The cause is the word scorer's (node/families.py), not a rule's own: a generic rule's
    # answer it refined, or a failed run no rule named. Not stored (benches read it).
    by_words: bool = Field(default=False, exclude=True)

    @property
    def learnt(self) -> bool:
        """The cause is the learnt model's guess, not a rule's or a family's reading."""
        return self.rule == LEARNT_RULE


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
