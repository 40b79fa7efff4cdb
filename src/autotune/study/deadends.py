"""Dead-end memory: configurations that crashed for a permanent reason are never launched again.

Three kinds of memory, all persisted in the study (they survive resume):

- the exact configuration that crashed;
- a blamed value: a failure rule named the flag or variable responsible (FlashInfer fusion on
  an unsupported architecture), or a module the configuration needs is missing and only it had
  that choice (``INHERENT_CAUSES``: fa3 without its kernels), so no configuration with that
  parameter value is launched;
- memory dominance: after a memory failure, a configuration that uses at least as much memory
  on every parameter declared monotone (``memory: increasing|decreasing``; a categorical
  one in the order of its choices) and equals the crashed one on every other parameter cannot
  fit either.

Also ``Doom``: a study whose every launch will fail (its baseline's command is wrong, or one
cause repeats from the first launch on) is stopped with one line that says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from autotune.models import MEMORY_CAUSES, Cause, Failure
from autotune.space.render import render_value
from autotune.space.schema import ConfigKey, StudySpec, config_key, same_value

# Causes a value carries whatever its company: a module the value needs is missing.
INHERENT_CAUSES = frozenset({Cause.IMPORT_ERROR})


class DeadEnd(BaseModel):
    """One remembered failure (stored on the study as its JSON, ``model_dump``)."""

    model_config = ConfigDict(frozen=True)

    trial: int
    cause: str
    config: dict[str, Any]
    blame: dict[str, Any] = Field(default_factory=dict)  # {param: value} held responsible
    memory: bool = False  # a memory failure: dominating configurations are dead too


def blamed_params(spec: StudySpec, config: Mapping[str, Any], failure: Failure) -> dict[str, Any]:
    """Map the flags/variables a rule blamed back to the parameter values that produced them."""
    if not failure.blame:
        return {}
    out: dict[str, Any] = {}
    for name, value in config.items():
        try:
            args, env = render_value(spec.parameter(name), value)
        except KeyError:  # a parameter no longer in the space
            continue
        flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
        if any(b in flags or b in env for b in failure.blame):
            out[name] = value
    return out


class DeadEnds:
    """The dead ends of one study."""

    def __init__(self, spec: StudySpec, records: list[DeadEnd] | None = None) -> None:
        self.spec = spec
        self.records: list[DeadEnd] = list(records or [])
        # each record's config_key, by the record's id: ``why`` runs for every candidate the
        # sampler weighs (thousands a proposal), so each record's key is made once
        self._keys: dict[int, tuple[DeadEnd, ConfigKey]] = {}

    def add(
        self,
        trial: int,
        config: Mapping[str, Any],
        failure: Failure,
        ran: Sequence[Mapping[str, Any]] = (),
    ) -> DeadEnd | None:
        """Remember a failure if it is permanent; returns the record, or None if not kept.

        ``ran``: configurations that served. A cause the value itself carries (a module it
        needs is missing: ``INHERENT_CAUSES``) that no rule blamed on a flag blames the choices
        of ``config`` that none of them had, together.
        """
        if not failure.permanent or failure.cause in (Cause.DEAD_END, Cause.CONSTRAINT):
            return None
        # A learnt guess (Failure.learnt) marks its own configuration only: no rule is built
        # on a cause read from words alone.
        cause = Cause.UNKNOWN if failure.learnt else failure.cause
        blame = blamed_params(self.spec, config, failure)
        if not blame and cause in INHERENT_CAUSES:
            blame = self._novel_choices(config, ran)
        record = DeadEnd(
            trial=trial,
            cause=failure.cause.value,
            config=dict(config),
            blame=blame,
            memory=cause in MEMORY_CAUSES,
        )
        self.records.append(record)
        return record

    def _novel_choices(
        self, config: Mapping[str, Any], ran: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The categorical and bool values of ``config`` that no configuration in ``ran``
        had (none where ``ran`` is empty: nothing to tell them by)."""
        if not ran:
            return {}
        choices = {p.name for p in self.spec.parameters if p.type in ("categorical", "bool")}
        return {
            name: value
            for name, value in config.items()
            if name in choices and not any(same_value(r.get(name), value) for r in ran)
        }

    def why(self, config: Mapping[str, Any]) -> str | None:
        """The reason ``config`` is a known dead end, or None if it may be launched."""
        mine = config_key(config) if self.records else None
        for r in self.records:
            if mine == self._key(r):
                return f"same configuration as trial {r.trial}, which failed with {r.cause}"
            if r.blame and all(same_value(config.get(k), v) for k, v in r.blame.items()):
                held = ", ".join(f"{k}={v!r}" for k, v in r.blame.items())
                return f"{held} caused {r.cause} in trial {r.trial}"
            if r.memory and self._dominates(config, r.config):
                return (
                    f"uses at least as much memory as trial {r.trial}, which failed with {r.cause}"
                )
        return None

    def _key(self, record: DeadEnd) -> ConfigKey:
        known = self._keys.get(id(record))
        if known is None or known[0] is not record:
            known = self._keys[id(record)] = (record, config_key(record.config))
        return known[1]

    def _dominates(self, config: Mapping[str, Any], crashed: Mapping[str, Any]) -> bool:
        monotone = {p.name: p.memory for p in self.spec.parameters if p.memory}
        rank = {p.name: p.values() for p in self.spec.parameters if p.type == "categorical"}
        if not monotone or set(config) != set(crashed):
            return False
        for name, value in config.items():
            other = crashed[name]
            direction = monotone.get(name)
            if direction is None:
                if not same_value(value, other):
                    return False
                continue
            if name in rank:  # categorical: its order in choices is its memory order
                value, other = _index(rank[name], value), _index(rank[name], other)
                if value is None or other is None:
                    return False
            if direction == "increasing":
                if value < other:
                    return False
            elif value > other:
                return False
        return True


def _index(choices: list[Any], value: Any) -> int | None:
    for i, c in enumerate(choices):
        if same_value(c, value):
            return i
    return None


# Causes that no searched value can fix when the baseline hits them: the command itself is
# wrong (a misspelled flag, a missing package), so every configuration will fail the same way.
COMMAND_CAUSES = frozenset({Cause.INVALID_ARGUMENT, Cause.IMPORT_ERROR})
SAME_CAUSE_STOP = 5  # launches in a row, from the first, failing with one cause: stop


class Doom:
    """Notices a study that cannot succeed, so it stops at once with one line saying why.

    A baseline that fails with ``invalid_argument`` or ``import_error`` (the command is wrong,
    not a value; read by a rule, not guessed: ``Failure.learnt``), or the first launches all
    failing with the same cause (3 for those causes, ``SAME_CAUSE_STOP`` for others) with no
    success in between.
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self._causes: list[str | None] = []  # per launch: None = ran
        self._first_message = ""

    def observe(self, *, baseline: bool, failure: Failure | None, crashed: bool) -> str | None:
        """Learn one launched trial; returns the reason to stop, once there is one."""
        cause = (failure.cause.value if failure else Cause.UNKNOWN.value) if crashed else None
        if crashed and not self._causes and failure is not None:
            self._first_message = failure.message or (failure.evidence or [""])[0]
        self._causes.append(cause)
        if self.reason is not None:
            return self.reason
        said = f": {self._first_message}" if self._first_message else ""
        command = failure is not None and failure.cause in COMMAND_CAUSES and not failure.learnt
        if baseline and crashed and failure is not None and command:
            msg = failure.message or (failure.evidence or [""])[0]
            self.reason = (
                f"the baseline failed with {failure.cause.value}{': ' + msg if msg else ''}; "
                "every configuration shares that command, so fix the space (engine command, "
                "fixed args, flag names) and start again"
            )
        elif cause is not None and None not in self._causes:
            same = all(c == cause for c in self._causes)
            need = 3 if cause in COMMAND_CAUSES else SAME_CAUSE_STOP
            if same and len(self._causes) >= need:
                self.reason = (
                    f"all {len(self._causes)} launches so far failed with {cause}{said}; "
                    "the cause repeats whatever the values, so fix it and start again"
                )
        return self.reason
