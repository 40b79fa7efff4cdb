"""The search-space file as pydantic models: ``StudySpec`` and its parts.

A space file is validated once, by ``space.load``; everything downstream trusts it.
Structural checks live here (types, ranges, names); checks that need the whole document
(conditions naming parameters, the baseline inside the space, constraint names) live in
``StudySpec``'s model validator so that ``autotune schema`` and ``load`` agree.

Validators raise ``LocatedError`` (a ``ValueError`` that names the key it is about) so that
``space.load`` can point at the exact line of the file.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from autotune.models import (
    Cause,
    Direction,
    EngineSpec,
    Goodput,
    Phase,
    Scenario,
    Sweep,
    Workload,
)
from autotune.space import scenarios
from autotune.space.located import LocatedError

Scalar = str | int | float | bool

# Names a parameter may not take: they mean something else inside expressions.
RESERVED_NAMES = frozenset(
    {"true", "false", "none", "min", "max", "abs", "int", "float", "round", "log2"}
    | set(keyword.kwlist)
)


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, use_attribute_docstrings=True
    )


class Launch(_Strict):
    """Extra launch arguments and environment, added when a choice or a bool is taken."""

    args: list[str] = Field(default_factory=list)
    """Arguments this value adds."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment this value adds; numbers become strings, booleans 1/0."""

    @field_validator("env", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _env_str(v) for k, v in value.items()}
        return value


class ParamRef(_Strict):
    """A bound taken from another parameter's value: ``high: {param: NCCL_MAX_NCHANNELS}``."""

    param: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The parameter whose value (in the same configuration) is this bound."""


Bound = float | ParamRef


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
    """Identifier used in Optuna, conditions, constraints and the baseline."""
    type: Literal["int", "float", "categorical", "bool"]
    """Kind of value: int/float take low/high, categorical takes choices."""
    flag: str | None = Field(None, pattern=r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Launch flag that receives the value, e.g. --cuda-graph-max-bs."""
    env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable that receives the value, e.g. NCCL_BUFFSIZE."""
    map: dict[str, Launch] | None = None
    """Per value (key as in choices; true/false for bool): the args and env it adds."""
    low: Bound | None = None
    """Smallest value (int/float), or ``{param: NAME}``: another parameter's value."""
    high: Bound | None = None
    """Largest value (int/float), or ``{param: NAME}``; high - low must be a multiple of step."""
    step: float | None = None
    """Grid step (int/float)."""
    log: bool = False
    """Sample on a log scale (needs low > 0)."""
    choices: list[Scalar] | None = None
    """Values of a categorical parameter (strings, numbers or booleans)."""
    bool_style: Literal["store_true", "value"] = "store_true"
    """How a bool flag is passed: present/absent, or --flag true|false."""
    when: str | None = None
    """Condition over other parameters; when false the parameter is not suggested, not set."""
    memory: Literal["increasing", "decreasing"] | None = None
    """A larger value uses more (increasing) or less (decreasing) GPU memory; for a
    categorical parameter, a later choice in ``choices`` is the larger one."""
    description: str = ""
    """Free text, shown in reports."""

    @model_validator(mode="after")
    def _check(self) -> Parameter:
        if self.name in RESERVED_NAMES:
            raise LocatedError(
                f"{self.name!r} is reserved in expressions (rename it, e.g. {self.name}_value)",
                ("name",),
            )
        targets = [t for t in (self.flag, self.env, self.map) if t is not None]
        if len(targets) != 1:
            raise LocatedError(
                "give exactly one of 'flag', 'env' or 'map' (how the value reaches the server)"
            )
        if self.type in ("int", "float"):
            self._check_range()
        elif self.type == "categorical":
            if not self.choices:
                raise LocatedError(
                    "a categorical parameter needs a non-empty 'choices' list", ("choices",)
                )
            for i, a in enumerate(self.choices):
                for b in self.choices[:i]:
                    if a == b:  # 1 == 1.0 == True: Optuna could not tell them apart
                        raise LocatedError(
                            f"'choices' has {b!r} and {a!r}, which are equal "
                            "(list each value once)",
                            ("choices", i),
                        )
            for key in ("low", "high", "step"):
                if getattr(self, key) is not None:
                    raise LocatedError(
                        f"'{key}' is for int/float parameters (use 'choices')", (key,)
                    )
        else:  # bool
            for key in ("low", "high", "step", "choices"):
                if getattr(self, key) is not None:
                    raise LocatedError(
                        f"'{key}' does not apply to a bool parameter (remove it)", (key,)
                    )
        if self.map is not None:
            keys = set(self.map)
            values = {_key(v) for v in self.values()}
            if self.type not in ("categorical", "bool"):
                raise LocatedError(
                    "'map' applies to categorical and bool parameters only (use 'flag' or 'env')",
                    ("map",),
                )
            if keys != values:
                missing = sorted(values - keys)
                extra = sorted(keys - values)
                raise LocatedError(
                    "'map' must have one entry per value"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; unknown {extra}" if extra else "")
                    + (" (add an empty entry {} for a value that adds nothing)" if missing else ""),
                    ("map",),
                )
        if self.bool_style != "store_true" and not (self.type == "bool" and self.flag):
            raise LocatedError(
                "'bool_style' applies to a bool parameter with a 'flag' (remove it)",
                ("bool_style",),
            )

        if self.log and self.type not in ("int", "float"):
            raise LocatedError("'log' applies to int and float parameters (remove it)", ("log",))
        return self

    def _check_range(self) -> None:
        if self.low is None or self.high is None:
            missing = "low" if self.low is None else "high"
            raise LocatedError(f"a {self.type} parameter needs 'low' and 'high' (add '{missing}')")
        if isinstance(self.low, ParamRef) or isinstance(self.high, ParamRef):
            self._check_ref_range()
            return
        low, high, step = self.low, self.high, self.step
        if low > high:
            raise LocatedError(
                f"low ({low:g}) is greater than high ({high:g}) (swap them)", ("low",)
            )
        if self.choices is not None:
            raise LocatedError(
                f"'choices' is for categorical parameters (use low/high for {self.type})",
                ("choices",),
            )
        if self.log and low <= 0:
            raise LocatedError(f"log scale needs low > 0, got {low:g}", ("low",))
        if self.log and step is not None and self.type == "float":
            raise LocatedError(
                "a float parameter cannot have both 'log' and 'step' (drop one)", ("step",)
            )
        if step is not None and step <= 0:
            raise LocatedError(f"step must be > 0, got {step:g}", ("step",))
        if self.type == "int":
            for key in ("low", "high", "step"):
                value = getattr(self, key)
                if value is not None and float(value) != int(value):
                    raise LocatedError(
                        f"'{key}' of an int parameter must be a whole number, got {value:g}",
                        (key,),
                    )
            if self.log and step not in (None, 1):
                raise LocatedError(
                    "an int parameter on a log scale must have step 1 (drop 'step')", ("step",)
                )
        if step is not None and not _divides(low, high, step):
            # Optuna would silently lower 'high' to the last point of the grid.
            top = low + int((high - low) / step) * step
            raise LocatedError(
                f"high - low ({high - low:g}) is not a multiple of step ({step:g}) "
                f"(use high: {top:g})",
                ("high",),
            )

    def _check_ref_range(self) -> None:
        """A range with a bound from another parameter: checks that need only this one."""
        if isinstance(self.low, ParamRef) and isinstance(self.high, ParamRef):
            raise LocatedError(
                "only one of 'low' and 'high' may name another parameter (give the other a number)",
                ("low",),
            )
        if self.step is not None:
            raise LocatedError(
                "'step' cannot be combined with a bound taken from another parameter (drop 'step')",
                ("step",),
            )
        if self.choices is not None:
            raise LocatedError(
                f"'choices' is for categorical parameters (use low/high for {self.type})",
                ("choices",),
            )
        for key in ("low", "high"):
            value = getattr(self, key)
            if isinstance(value, ParamRef):
                if value.param == self.name:
                    raise LocatedError(
                        f"'{key}' of {self.name!r} names {self.name!r} itself (name another "
                        "parameter or give a number)",
                        (key, "param"),
                    )
                continue
            if self.type == "int" and float(value) != int(value):
                raise LocatedError(
                    f"'{key}' of an int parameter must be a whole number, got {value:g}", (key,)
                )
            if key == "low" and self.log and value <= 0:
                raise LocatedError(f"log scale needs low > 0, got {value:g}", ("low",))

    def ref(self) -> tuple[str, str] | None:
        """``("low"|"high", other parameter)`` when a bound is another parameter's value."""
        for key in ("low", "high"):
            value = getattr(self, key)
            if isinstance(value, ParamRef):
                return key, value.param
        return None

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
            return any(same_value(value, c) for c in self.values())
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.type == "int" and float(value) != int(value):
            return False
        # A bound from another parameter is checked by StudySpec.in_range, which sees both.
        if isinstance(self.low, int | float) and value < self.low:
            return False
        if isinstance(self.high, int | float) and value > self.high:
            return False
        if self.step is None or not isinstance(self.low, int | float):
            return True
        return _on_grid(value, self.low, self.step)


def _on_grid(value: float, low: float, step: float) -> bool:
    """Whether ``value`` is ``low + k * step``, within float noise (as Optuna checks it)."""
    k = (value - low) / step
    return abs(k - round(k)) < 1e-8


def _divides(low: float, high: float, step: float) -> bool:
    """Whether ``step`` divides ``high - low`` exactly in decimal (Optuna's own test)."""
    try:
        return (Decimal(str(high)) - Decimal(str(low))) % Decimal(str(step)) == 0
    except InvalidOperation:  # not decimal: not a multiple
        return False


def choice_key(value: Scalar) -> str:
    """The ``map:`` key of a value: ``true``/``false`` for bools, ``str()`` otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_key = choice_key


def same_value(a: Any, b: Any) -> bool:
    """Equal as parameter values: 1 == 1.0, but True is not 1 and "1" is not 1."""
    return (
        type(a) is type(b)
        and a == b
        or (
            not isinstance(a, bool)
            and not isinstance(b, bool)
            and isinstance(a, int | float)
            and isinstance(b, int | float)
            and a == b
        )
    )


ConfigKey = tuple[tuple[str, str, Any], ...]


def _value_key(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int | float):
        return "number", int(value) if float(value).is_integer() else float(value)
    if value is None or isinstance(value, str):
        return type(value).__name__, value
    return "repr", repr(value)


def config_key(config: Mapping[str, Any]) -> ConfigKey:
    """What "the same configuration" means everywhere: the same parameters, each with a value
    that ``same_value`` takes as the same (1 and 1.0 alike; True, 1 and "1" apart). Hashable:
    a key to group or look up launches by."""
    return tuple((name, *_value_key(config[name])) for name in sorted(config))


class Fixed(Launch):
    """Arguments and environment every trial gets: after the engine's command, before the
    parameters' own."""


def _env_str(value: Any) -> Any:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return str(value)
    return value


class ObjectiveMetric(_Strict):
    """One objective of a multi-objective study."""

    metric: str
    """A metric name (a key of ``Metrics.flat()``)."""
    direction: Direction
    """Whether larger or smaller is better."""


class Objective(_Strict):
    """The metric to optimise (a key of ``Metrics.flat()``) and its direction, or several.

    One objective: ``metric`` and ``direction``. Several (a multi-objective study that finds
    the Pareto front, e.g. throughput against p99 time to first token): ``metrics``, a list
    of ``{metric, direction}``; the first is the primary one (the gain against the baseline,
    confirmation and the default export are about it), and ``metric``/``direction`` are set
    from it.
    """

    metric: str = "output_tok_s"
    """A metric name: output_tok_s, request_s, ttft_p99_ms, e2e_mean_ms, ..."""
    direction: Direction = Direction.MAXIMIZE
    """Whether larger or smaller is better."""
    metrics: list[ObjectiveMetric] | None = None
    """Several objectives, the primary first, e.g. [{metric: output_tok_s, direction:
    maximize}, {metric: ttft_p99_ms, direction: minimize}]."""

    @model_validator(mode="before")
    @classmethod
    def _primary(cls, data: Any) -> Any:
        """``metric``/``direction`` follow the first of ``metrics`` (or must agree with it)."""
        if not isinstance(data, dict) or not isinstance(data.get("metrics"), list):
            return data
        items = data["metrics"]
        if not items:
            raise LocatedError(
                "metrics is empty (list at least one {metric, direction}, or use metric:)",
                ("metrics",),
            )
        first = items[0] if isinstance(items[0], dict) else {}
        out = dict(data)
        for key in ("metric", "direction"):
            if key in first and key in data and data[key] != first[key]:
                raise LocatedError(
                    f"{key} {data[key]!r} disagrees with the first of metrics "
                    f"({first[key]!r}); give one of them (the first of metrics is the primary)",
                    (key,),
                )
            if key in first:
                out[key] = first[key]
        return out

    @model_validator(mode="after")
    def _unique(self) -> Objective:
        seen: list[str] = []
        for i, m in enumerate(self.metrics or []):
            if m.metric in seen:
                raise LocatedError(
                    f"metric {m.metric!r} is listed twice (each objective once)",
                    ("metrics", i, "metric"),
                )
            seen.append(m.metric)
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Without ``metrics`` when there is one objective: a study keeps its space as JSON and
        a resume compares it, so a single-objective space dumps as it did before."""
        data: dict[str, Any] = handler(self)
        if data.get("metrics") is None:
            data.pop("metrics", None)
        return data

    @property
    def objectives(self) -> list[tuple[str, Direction]]:
        """``(metric, direction)`` of every objective, the primary first."""
        if self.metrics:
            return [(m.metric, m.direction) for m in self.metrics]
        return [(self.metric, self.direction)]

    @property
    def multi(self) -> bool:
        """Whether this is a multi-objective study (two or more metrics)."""
        return len(self.objectives) > 1


class Budget(_Strict):
    """When the study stops."""

    trials: int = Field(default=20, ge=1)
    """Trials to run (the baseline counts as one)."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """Stop starting trials after this many seconds, or once the study's median launch
    would end after them."""
    max_crash_streak: int | None = Field(default=None, ge=1)
    """Stop after this many crashed trials in a row."""
    baseline_launches: int | None = Field(default=None, ge=1)
    """Launches of the baseline at the start, for its launch-to-launch noise (default 3;
    ``--baseline-launches`` overrides)."""
    confirm: int | None = Field(default=None, ge=0)
    """Candidates relaunched against the baseline in interleaved rounds at the end (default 3;
    0: no confirmation; ``--confirm``/``--no-confirm`` override)."""
    confirm_rounds: int | None = Field(default=None, ge=2)
    """Most confirmation rounds; it stops earlier once settled (default 5;
    ``--confirm-rounds`` overrides)."""
    crash_budget: float = Field(default=0.0, ge=0, le=1)
    """The share of the trials that may crash before the study stops taking chances: once
    that many have crashed, a proposal the crash model gives a 40% chance or more of crashing
    is not launched (0, the default: no such limit). It trades reach for crashes (decision
    0002 in docs/decisions)."""


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


class CombineSpec(_Strict):
    """How the objective metric over several scenarios becomes one value."""

    how: Literal["weighted_sum", "weighted_mean", "worst"] = "weighted_mean"
    """weighted_sum or weighted_mean of the scenarios' values, or the worst scenario (the
    minimum of a metric maximised, the maximum of one minimised)."""
    weights: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    """Weight of each scenario, by name (every scenario, or none for equal weights)."""


class StudySpec(_Strict):
    """A whole space file."""

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Default study name."""
    description: str = ""
    """Free text."""
    engine: EngineSpec
    """Which server to launch and how."""
    model: str
    """Model path or hub id passed to the engine."""
    fixed: Fixed = Field(default_factory=Fixed)
    """Arguments and environment every trial gets."""
    parameters: Annotated[list[Parameter], Field(min_length=1)]
    """The searched settings."""
    constraints: list[str] = Field(default_factory=list)
    """Expressions over active parameters that must hold; a violating config is never launched."""
    baseline: dict[str, Scalar] | None = None
    """Today's launch config, run first; parameters it does not name stay unset."""
    objective: Objective = Field(default_factory=Objective)
    """The metric to optimise."""
    slo: dict[str, float] = Field(default_factory=dict)
    """Upper bounds on metrics, e.g. {ttft_p99_ms: 2000}; a run that misses one is infeasible."""
    workload: Workload = Field(default_factory=Workload)
    """What the benchmark sends."""
    scenarios: list[Scenario] | None = None
    """Several named traffic shapes (name, workload, slo, sweep, goodput), measured one after
    another on each trial's server; their metrics are named ``<scenario>.<metric>``."""
    sweep: Sweep | None = None
    """Load steps on the running server, or the highest load meeting the SLO (bisection)."""
    goodput: Goodput | None = None
    """Per-request bounds; adds goodput_req_s and goodput_miss_pct."""
    combine: CombineSpec | None = None
    """How the objective metric over several scenarios becomes one value."""
    budget: Budget = Field(default_factory=Budget)
    """When the study stops."""
    rules: list[UserRule] = Field(default_factory=list)
    """Failure rules, tried before the engine's own."""
    source: str | None = Field(None, exclude=True)
    """The file it came from (set by load)."""

    @model_validator(mode="after")
    def _check(self) -> StudySpec:
        names = [p.name for p in self.parameters]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise LocatedError(
                    f"duplicate parameter name {name!r} (each name must be unique)",
                    ("parameters", i, "name"),
                )
        self._check_expressions(names)
        self._check_refs()
        scenarios.check(self)
        if self.baseline:
            by_name = {p.name: p for p in self.parameters}
            for key, value in self.baseline.items():
                if key not in by_name:
                    raise LocatedError(
                        f"baseline names unknown parameter {key!r}{_did_you_mean(key, names)} "
                        f"(known: {', '.join(names)})",
                        ("baseline", key),
                    )
                if not by_name[key].contains(value):
                    raise LocatedError(
                        f"baseline value {value!r} of {key!r} is outside its "
                        f"{_describe(by_name[key])} (widen the parameter or fix the baseline)",
                        ("baseline", key),
                    )
                self._check_baseline_ref(by_name[key], value)
        return self

    def _check_baseline_ref(self, p: Parameter, value: Any) -> None:
        ref = p.ref()
        if ref is None or self.baseline is None:
            return
        key, other = ref
        if other not in self.baseline:
            raise LocatedError(
                f"baseline sets {p.name!r} but not {other!r}, whose value is its {key} "
                f"(add {other} to the baseline or drop {p.name})",
                ("baseline", p.name),
            )
        bound = self.baseline[other]
        if (key == "high" and value > bound) or (key == "low" and value < bound):
            word = "above" if key == "high" else "below"
            raise LocatedError(
                f"baseline value {value!r} of {p.name!r} is {word} the baseline's "
                f"{other}={bound!r}, its {key} (fix the baseline)",
                ("baseline", p.name),
            )

    def _check_refs(self) -> None:
        """Bounds taken from another parameter: it exists, is numeric like this one, is active
        whenever this one is, and leaves a non-empty range for every value it can take."""
        by_name = {p.name: p for p in self.parameters}
        for i, p in enumerate(self.parameters):
            ref = p.ref()
            if ref is None:
                continue
            key, name = ref
            at: tuple[str | int, ...] = ("parameters", i, key, "param")
            other = by_name.get(name)
            if other is None:
                raise LocatedError(
                    f"'{key}' names unknown parameter {name!r}{_did_you_mean(name, by_name)} "
                    f"(known: {', '.join(by_name)})",
                    at,
                )
            if other.type != p.type:
                raise LocatedError(
                    f"'{key}' of {p.name!r} ({p.type}) names {name!r}, a {other.type} "
                    f"parameter (a bound must be a {p.type} parameter)",
                    at,
                )
            if other.ref() is not None:
                raise LocatedError(
                    f"{name!r} has a bound from another parameter itself; chains of bounds are "
                    f"not supported (give {name} numbers)",
                    at,
                )
            if other.when is not None and other.when != p.when:
                raise LocatedError(
                    f"{name!r} is conditional (when: {other.when}), so {p.name!r} could have "
                    f"no {key}; give {p.name} the same 'when' or a number",
                    at,
                )
            lo, _ = self.static_range(p)
            o_low, o_high = self.static_range(other)
            if key == "high" and isinstance(p.low, int | float) and p.low > o_low:
                raise LocatedError(
                    f"low ({p.low:g}) is above {name}'s smallest value ({o_low:g}), which "
                    f"would leave {p.name} no value (use low: {o_low:g} or less)",
                    ("parameters", i, "low"),
                )
            if key == "low" and isinstance(p.high, int | float) and p.high < o_high:
                raise LocatedError(
                    f"high ({p.high:g}) is below {name}'s largest value ({o_high:g}), which "
                    f"would leave {p.name} no value (use high: {o_high:g} or more)",
                    ("parameters", i, "high"),
                )
            if p.log and lo <= 0:
                raise LocatedError(
                    f"log scale needs low > 0, but {name} can be {lo:g}", ("parameters", i, "log")
                )

    def static_range(self, p: Parameter) -> tuple[float, float]:
        """The widest range an int/float parameter can take (a bound from another parameter
        is that parameter's own range end)."""
        low, high = p.low, p.high
        if isinstance(low, ParamRef):
            low = self.parameter(low.param).low
        if isinstance(high, ParamRef):
            high = self.parameter(high.param).high
        assert isinstance(low, int | float) and isinstance(high, int | float)
        return float(low), float(high)

    def range_in(self, p: Parameter, values: Mapping[str, Any]) -> tuple[float, float]:
        """The range of ``p`` given the values chosen so far (its bound parameter's value)."""
        low, high = self.static_range(p)
        ref = p.ref()
        if ref is not None and ref[1] in values:
            bound = float(values[ref[1]])
            if ref[0] == "high":
                high = bound
            else:
                low = bound
        return low, high

    def in_range(self, config: Mapping[str, Any]) -> list[str]:
        """Values of ``config`` outside the range that another parameter's value sets."""
        out = []
        for p in self.parameters:
            ref = p.ref()
            if ref is None or p.name not in config or ref[1] not in config:
                continue
            low, high = self.range_in(p, config)
            if not low <= config[p.name] <= high:
                out.append(f"{p.name}={config[p.name]!r} is outside {low:g}..{high:g}")
        return out

    def _check_expressions(self, names: list[str]) -> None:
        from autotune.space.expr import parse, topo_order

        known = set(names)
        deps: dict[str, frozenset[str]] = {}
        for i, p in enumerate(self.parameters):
            if p.when is None:
                deps[p.name] = frozenset()
                continue
            at: tuple[str | int, ...] = ("parameters", i, "when")
            expr = _parse(parse, p.when, at)
            _check_names(expr.names, known, at, "condition")
            if p.name in expr.names:
                raise LocatedError(
                    f"the condition of {p.name!r} refers to {p.name!r} itself "
                    "(a condition may only name other parameters)",
                    at,
                )
            deps[p.name] = expr.names
        for p in self.parameters:
            ref = p.ref()
            if ref is not None and ref[1] in known:
                deps[p.name] = deps[p.name] | {ref[1]}
        try:
            topo_order(deps)
        except ValueError as exc:
            first = str(exc).split(" -> ")[0]
            raise LocatedError(
                f"conditions and bounds form a cycle: {exc} (break it: one of them must not "
                "depend on the others)",
                ("parameters", names.index(first), "when"),
            ) from None
        for i, text in enumerate(self.constraints):
            expr = _parse(parse, text, ("constraints", i))
            _check_names(expr.names, known, ("constraints", i), "constraint")

    def parameter(self, name: str) -> Parameter:
        """The parameter called ``name``.

        Raises:
            KeyError: no such parameter.
        """
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)


def _parse(parse: Any, text: str, at: tuple[str | int, ...]) -> Any:
    from autotune.errors import ConfigError

    try:
        return parse(text)
    except ConfigError as exc:
        raise LocatedError(exc.message, at) from None


def _check_names(
    used: frozenset[str], known: set[str], at: tuple[str | int, ...], what: str
) -> None:
    for name in sorted(used - known):
        raise LocatedError(
            f"{what} names unknown parameter {name!r}{_did_you_mean(name, known)} "
            f"(known: {', '.join(sorted(known))}; quote strings: 'value')",
            at,
        )


def _did_you_mean(name: str, known: Any) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _describe(p: Parameter) -> str:
    if p.type in ("int", "float"):
        step = f" step {p.step:g}" if p.step is not None else ""
        low = p.low.param if isinstance(p.low, ParamRef) else f"{p.low:g}"
        high = p.high.param if isinstance(p.high, ParamRef) else f"{p.high:g}"
        return f"range {low}..{high}{step}"
    return f"values {p.values()!r}"
