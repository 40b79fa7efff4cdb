"""What autotune knows about a server's log: one YAML file per engine plus ``common.yaml``.

A rule file has two ordered lists, ``rules`` (specific causes) and ``fallback`` (catch-all
lines such as "Scheduler hit an exception" that only say *that* something failed), and
optionally how the engine's log reads while it starts: ``marks`` (strings that tell its log
from other engines', for ``autotune diagnose`` without ``--engine``), ``ready`` (the line
that says the server is up) and ``milestones`` (startup progress, in log order)::

    marks: [sglang, 'TP0] ']
    ready: 'The server is fired up and ready to roll!'
    milestones:
      - {phase: load, pattern: 'Load weight end', label: weights_loaded}
    rules:
      - id: sglang.kv_pool_oom
        pattern: 'Not enough memory\\. Please try to increase --mem-fraction-static'
        cause: kv_pool_oom          # a models.Cause value
        phase: memory_pool          # optional; default: the phase reached
        hint: ...
        permanent: true             # false: may pass on a retry
        blame: [--some-flag, SOME_ENV]
        fatal: true                 # false: evidence only, does not end a trial by itself
    fallback: [...]

:func:`load_rules` orders them engine rules, common rules, engine fallback, common fallback,
so every specific cause is tried before any catch-all. :func:`load_log` gives the whole
file as a :class:`LogProfile` (the engine's ``ready`` line is also its last milestone,
``ready``). An engine outside this package keeps its file in its own package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from autotune.errors import ConfigError
from autotune.models import Milestone, Phase, Rule

__all__ = ["LogProfile", "load_log", "load_rule_file", "load_rules", "user_rules"]

_SECTIONS = ("rules", "fallback")
_LOG_SECTIONS = ("marks", "ready", "milestones")
_ENGINE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class _LineLoader(yaml.SafeLoader):  # type: ignore[misc]
    """A safe loader that remembers the line of every mapping (for error messages)."""


def _mapping_with_line(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


@dataclass(frozen=True)
class RuleFile:
    """One rule file as written: its two rule lists and its log description."""

    rules: tuple[Rule, ...] = ()
    fallback: tuple[Rule, ...] = ()
    marks: tuple[str, ...] = ()
    ready: str | None = None
    milestones: tuple[Milestone, ...] = ()


@dataclass(frozen=True)
class LogProfile:
    """How one engine's log reads: failure rules (common ones included, in the order they
    are tried), the marks that tell its log apart, its ready line and startup milestones."""

    rules: tuple[Rule, ...]
    marks: tuple[str, ...] = ()
    ready: str | None = None
    milestones: tuple[Milestone, ...] = ()


def _regex(value: Any, file: str, line: int | None, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(
            "must be a non-empty string (a regular expression)", file=file, line=line, field=field
        )
    try:
        re.compile(value)
    except re.error as exc:
        raise ConfigError(
            f"not a valid regular expression: {exc}", file=file, line=line, field=field
        ) from None
    return value


def _log_sections(data: dict[str, Any], file: str) -> dict[str, Any]:
    """The ``marks``, ``ready`` and ``milestones`` sections, validated."""
    marks = data.get("marks") or []
    if not isinstance(marks, list) or not all(isinstance(m, str) and m for m in marks):
        raise ConfigError("must be a list of non-empty strings", file=file, field="marks")
    ready = data.get("ready")
    if ready is not None:
        ready = _regex(ready, file, None, "ready")
    items = data.get("milestones") or []
    if not isinstance(items, list):
        raise ConfigError("must be a list of milestones", file=file, field="milestones")
    milestones = []
    for index, item in enumerate(items):
        where = f"milestones[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(
                "each milestone is a mapping with phase, pattern, label", file=file, field=where
            )
        line = item.pop("__line__", None)
        try:
            milestone = Milestone.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                first["msg"], file=file, line=line, field=f"{where}.{loc}" if loc else where
            ) from None
        _regex(milestone.pattern, file, line, f"{where}.pattern")
        milestones.append(milestone)
    return {"marks": tuple(marks), "ready": ready, "milestones": tuple(milestones)}


def _parse(text: str, file: str) -> RuleFile:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"not valid YAML: {exc}", file=file, line=line) from None
    if data is None:
        return RuleFile()
    if not isinstance(data, dict):
        raise ConfigError("a rule file is a mapping with `rules:` and `fallback:` lists", file=file)
    data.pop("__line__", None)
    unknown = set(data) - set(_SECTIONS) - set(_LOG_SECTIONS)
    if unknown:
        allowed = ", ".join((*_SECTIONS, *_LOG_SECTIONS))
        raise ConfigError(f"unknown section(s) {sorted(unknown)} (allowed: {allowed})", file=file)
    out: tuple[list[Rule], list[Rule]] = ([], [])
    seen: set[str] = set()
    for section, target in zip(_SECTIONS, out, strict=True):
        items = data.get(section) or []
        if not isinstance(items, list):
            raise ConfigError("must be a list of rules", file=file, field=section)
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ConfigError("each rule is a mapping", file=file, field=f"{section}[{index}]")
            line = item.pop("__line__", None)
            where = f"{section}[{index}]"
            try:
                rule = Rule.model_validate(item)
                re.compile(rule.pattern)
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"])
                raise ConfigError(
                    first["msg"], file=file, line=line, field=f"{where}.{loc}" if loc else where
                ) from None
            except re.error as exc:
                raise ConfigError(
                    f"not a valid regular expression: {exc}",
                    file=file,
                    line=line,
                    field=f"{where}.pattern",
                ) from None
            if rule.id in seen:
                raise ConfigError(f"duplicate rule id {rule.id!r}", file=file, line=line)
            seen.add(rule.id)
            target.append(rule)
    return RuleFile(rules=tuple(out[0]), fallback=tuple(out[1]), **_log_sections(data, file))


def load_rule_file(path: str | Path) -> list[Rule]:
    """Read and validate one rule file: its ``rules`` then its ``fallback`` list.

    Raises:
        ConfigError: the file is not valid YAML, or a rule is invalid (names file:line, field).
    """
    parsed = _parse(Path(path).read_text(encoding="utf-8"), str(path))
    return [*parsed.rules, *parsed.fallback]


@lru_cache(maxsize=64)
def _bundled(name: str, package: str = __name__) -> RuleFile:
    resource = resources.files(package) / f"{name}.yaml"
    if not resource.is_file():
        return RuleFile()
    return _parse(resource.read_text(encoding="utf-8"), f"{name}.yaml")


def load_log(engine: str, package: str = __name__) -> LogProfile:
    """Everything the rule file ``<package>/<engine>.yaml`` says, common rules included.

    An engine without its own file (or an unknown name) gets the common rules only.

    Args:
        engine: the rule file's name (usually the engine's name).
        package: the package holding it (an engine from another package keeps its file there).

    Raises:
        ConfigError: the file (or common.yaml) is invalid.
    """
    common = _bundled("common")
    if engine == "common" or not _ENGINE_NAME.match(engine):
        return LogProfile(rules=(*common.rules, *common.fallback))
    own = _bundled(engine, package)
    milestones = own.milestones
    if own.ready is not None:
        milestones = (*milestones, Milestone(phase=Phase.READY, pattern=own.ready, label="ready"))
    return LogProfile(
        rules=(*own.rules, *common.rules, *own.fallback, *common.fallback),
        marks=own.marks,
        ready=own.ready,
        milestones=milestones,
    )


def load_rules(engine: str) -> list[Rule]:
    """The bundled rules for ``engine``, most specific first, common rules included.

    An engine without its own file (or an unknown name) gets the common rules only.
    """
    return list(load_log(engine).rules)


def user_rules(rules: Sequence[Any]) -> list[Rule]:
    """Turn the space file's ``rules:`` entries (``space.schema.UserRule``) into Rules.

    User rules go before the engine's: ``user_rules(spec.rules) + engine.failure_rules()``.
    """
    out = []
    for rule in rules:
        data = rule.model_dump() if hasattr(rule, "model_dump") else dict(rule)
        data["blame"] = tuple(data.get("blame") or ())
        out.append(Rule.model_validate(data))
    return out
