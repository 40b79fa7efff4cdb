"""The search-space file as pydantic models: ``StudySpec`` and its parts.

A space file is validated once, by ``space.load``; everything downstream trusts it.
Structural checks live here (types, ranges, names); checks that need the whole document
(conditions naming parameters, the baseline inside the space, constraint names) live in
``StudySpec``'s model validator so that ``autotune schema`` and ``load`` agree.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from autotune.models import Cause, Phase, Workload

Scalar = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Launch(_Strict):
    """Extra launch arguments and environment, added when a choice or a bool is taken."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class Parameter(_Strict):
    """One searched setting: a launch flag or an environment variable.

    Exactly one of ``flag``, ``env`` or ``map`` says how a value reaches the server:
    - ``flag: --cuda-graph-max-bs`` passes ``--cuda-graph-max-bs VALUE``; for ``type: bool``
      the flag is present when true and absent when false (argparse store_true), unless
      ``bool_style: value`` asks for ``--flag true|false``.
    - ``env: NCCL_BUFFSIZE`` sets the variable; bools become ``1``/``0``.
    - ``map`` (categorical or bool) gives, per value, the args and env it adds; for choices
      that are not a single flag, e.g. an allreduce backend chosen by several flags.
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    type: Literal["int", "float", "categorical", "bool"]
    flag: str | None = Field(None, pattern=r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
    env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    map: dict[str, Launch] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    choices: list[Scalar] | None = None
    bool_style: Literal["store_true", "value"] = "store_true"
    when: str | None = None  # condition over other parameters; inactive -> not suggested, not set
    memory: Literal["increasing", "decreasing"] | None = None  # larger value uses more / less memory
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> Parameter:
        targets = [t for t in (self.flag, self.env, self.map) if t is not None]
        if len(targets) != 1:
            raise ValueError("give exactly one of 'flag', 'env' or 'map' (how the value reaches the server)")
        if self.type in ("int", "float"):
            if self.low is None or self.high is None:
                raise ValueError(f"a {self.type} parameter needs 'low' and 'high'")
            if self.low > self.high:
                raise ValueError(f"low ({self.low:g}) is greater than high ({self.high:g}); swap them")
            if self.choices is not None:
                raise ValueError(f"'choices' is for categorical parameters; use low/high for {self.type}")
            if self.log and self.low <= 0:
                raise ValueError("log scale needs low > 0")
            if self.log and self.step is not None and self.type == "float":
                raise ValueError("a float parameter cannot have both 'log' and 'step'; drop one")
            if self.step is not None and self.step <= 0:
                raise ValueError("step must be > 0")
            if self.type == "int":
                for key in ("low", "high", "step"):
                    value = getattr(self, key)
                    if value is not None and float(value) != int(value):
                        raise ValueError(f"'{key}' of an int parameter must be a whole number")
                if self.log and self.step not in (None, 1):
                    raise ValueError("an int parameter on a log scale must have step 1")
        elif self.type == "categorical":
            if not self.choices:
                raise ValueError("a categorical parameter needs a non-empty 'choices' list")
            if len({repr(c) for c in self.choices}) != len(self.choices):
                raise ValueError("'choices' has duplicates; list each value once")
            for key in ("low", "high", "step"):
                if getattr(self, key) is not None:
                    raise ValueError(f"'{key}' is for int/float parameters; use 'choices'")
        else:  # bool
            for key in ("low", "high", "step", "choices"):
                if getattr(self, key) is not None:
                    raise ValueError(f"'{key}' does not apply to a bool parameter")
        if self.map is not None:
            keys = set(self.map)
            values = {_key(v) for v in self.values()}
            if self.type not in ("categorical", "bool"):
                raise ValueError("'map' applies to categorical and bool parameters only")
            if keys != values:
                missing = sorted(values - keys)
                extra = sorted(keys - values)
                raise ValueError(
                    "'map' must have one entry per value"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; unknown {extra}" if extra else "")
                )
        if self.memory is not None and self.type not in ("int", "float", "bool"):
            raise ValueError("'memory' (monotone in memory use) applies to int, float and bool parameters")
        return self

    def values(self) -> list[Scalar]:
        """The finite value set of a categorical or bool parameter."""
        if self.type == "bool":
            return [False, True]
        return list(self.choices or [])

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a value this parameter can take."""
        if self.type == "bool":
            return isinstance(value, bool)
        if self.type == "categorical":
            return any(_same(value, c) for c in self.values())
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.type == "int" and float(value) != int(value):
            return False
        assert self.low is not None and self.high is not None
        return self.low <= value <= self.high


def _key(value: Scalar) -> str:
    """The YAML-map key of a choice: ``true``/``false`` for bools, ``str()`` otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b or (
        not isinstance(a, bool) and not isinstance(b, bool)
        and isinstance(a, int | float) and isinstance(b, int | float) and a == b
    )


class EngineSpec(_Strict):
    """Which server to launch and how."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")  # sglang, vllm, transformers, command, sim, ...
    version: str | None = None  # engine version, for renamed flags (sglang 0.5.9 vs 0.5.23)
    python: str = "python3"  # interpreter for python -m launches
    gpus: int = Field(0, ge=0)  # GPUs one trial holds (tp x dp); 0 for CPU engines
    host: str = "127.0.0.1"
    # command engine only: argv template with {port}, {host}, {model} placeholders
    command: list[str] | None = None
    health_path: str | None = None
    startup_timeout_s: float = Field(600.0, gt=0)
    options: dict[str, Scalar] = Field(default_factory=dict)  # engine-specific extras


class Fixed(_Strict):
    """Arguments and environment every trial gets."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("env", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _env_str(v) for k, v in value.items()}
        return value


def _env_str(value: Any) -> Any:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return str(value)
    return value


class Objective(_Strict):
    """The metric to optimise (a key of ``Metrics.flat()``) and its direction."""

    metric: str = "output_tok_s"
    direction: Literal["maximize", "minimize"] = "maximize"


class Slo(_Strict):
    """Latency bounds: a run that misses one is ``slo_violated`` (feasible = False)."""

    bounds: dict[str, float] = Field(default_factory=dict)  # e.g. {ttft_p99_ms: 2000}


class Budget(_Strict):
    """When the study stops."""

    trials: int = Field(20, ge=1)
    time_limit_s: float | None = Field(None, gt=0)
    max_crash_streak: int | None = Field(None, ge=1)


class UserRule(_Strict):
    """A failure rule written in the space file (added before the engine's own rules)."""

    id: str
    pattern: str
    cause: Cause
    phase: Phase | None = None
    hint: str = ""
    permanent: bool = True
    blame: list[str] = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        import re

        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


class StudySpec(_Strict):
    """A whole space file."""

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # default study name
    description: str = ""
    engine: EngineSpec
    model: str
    fixed: Fixed = Field(default_factory=Fixed)
    parameters: Annotated[list[Parameter], Field(min_length=1)]
    constraints: list[str] = Field(default_factory=list)
    baseline: dict[str, Scalar] | None = None  # today's launch config; unnamed parameters unset
    objective: Objective = Field(default_factory=Objective)
    slo: dict[str, float] = Field(default_factory=dict)  # {metric: upper bound}
    workload: Workload = Field(default_factory=Workload)
    budget: Budget = Field(default_factory=Budget)
    rules: list[UserRule] = Field(default_factory=list)
    source: str | None = Field(None, exclude=True)  # the file it came from (set by load)

    @model_validator(mode="after")
    def _check(self) -> StudySpec:
        names = [p.name for p in self.parameters]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate parameter names {dupes}; each name must be unique")
        if self.baseline:
            by_name = {p.name: p for p in self.parameters}
            for key, value in self.baseline.items():
                if key not in by_name:
                    raise ValueError(f"baseline names unknown parameter {key!r}; known: {names}")
                if not by_name[key].contains(value):
                    raise ValueError(
                        f"baseline value {value!r} of {key!r} is outside its range or choices; "
                        "widen the parameter or fix the baseline"
                    )
        return self

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)
