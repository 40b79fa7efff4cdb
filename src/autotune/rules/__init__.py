"""What autotune knows about a server's log: ``common.yaml``, plus one file per engine.

``common.yaml`` recognises every family of failure from the messages of the engines and
libraries autotune meets (SGLang, vLLM, TensorRT-LLM, transformers, PyTorch, NCCL, Ray, the
kernel), so an engine with no file of its own, the ``command`` engine included, still gets
them all. An engine's file adds to them: rules that need its flags (to blame them), the
engine's own hints, which name the flags *that* engine has, and how its log reads while it
starts: ``marks`` (strings that tell its log from other engines', for ``autotune diagnose``
without ``--engine``), ``ready`` (the line that says the server is up) and ``milestones``
(startup progress, in log order)::

    marks: [sglang, 'TP0] ']
    ready: 'The server is fired up and ready to roll!'
    milestones:
      - {phase: load, pattern: 'Load weight end', label: weights_loaded}
    rules:                          # specific causes, most specific first
      - id: sglang.flashinfer_arch
        pattern: 'No supported CUDA architectures found'
        cause: arch_unsupported     # a models.Cause value
        phase: graph_capture        # optional; default: inferred from the log
        near: 'capture'             # optional; must also match within a few lines
        hint: ...
        permanent: true             # false: may pass on a retry
        blame: [--some-flag, SOME_ENV]
        fatal: true                 # false: evidence only, does not end a trial by itself
    fallback: [...]                 # catch-all lines ("Scheduler hit an exception")
    hints:                          # engine files only
      kv_pool_oom: '...'            # by cause: replaces the hint of every rule of that cause
      common.cuda_oom:              # by rule id (wins over the cause)
        default: '...'
        graph_capture: '...'        # by phase: used when the failure happened then

:func:`load_rules` orders them engine rules, common rules, engine fallback, common fallback,
so every specific cause is tried before any catch-all, and applies the engine's hints.
:func:`load_log` gives the whole file as a :class:`LogProfile` (the engine's ``ready`` line
is also its last milestone, ``ready``). An engine outside this package keeps its file in its
own package.
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
from autotune.models import Cause, Milestone, Phase, Rule

__all__ = [
    "Hints",
    "bundled_rule_files",
    "LogProfile",
    "engine_hints",
    "load_log",
    "load_rule_file",
    "load_rules",
    "user_rules",
]

_SECTIONS = ("rules", "fallback", "hints")
_LOG_SECTIONS = ("marks", "ready", "milestones")
_ENGINE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_CAUSES = {c.value for c in Cause}
_PHASES = {p.value for p in Phase}

# key (a cause value or a rule id) -> (default hint or None, ((phase, hint), ...))
Hints = dict[str, tuple[str | None, tuple[tuple[Phase, str], ...]]]


class _LineLoader(yaml.SafeLoader):  # type: ignore[misc]
    """A safe loader that remembers the line of every mapping (for error messages)."""


def _mapping_with_line(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


@dataclass(frozen=True)
class RuleFile:
    """One rule file as written: its two rule lists, its hints and its log description."""

    rules: tuple[Rule, ...] = ()
    fallback: tuple[Rule, ...] = ()
    hints: tuple[tuple[str, tuple[str | None, tuple[tuple[Phase, str], ...]]], ...] = ()
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


def _invalid(exc: ValidationError, file: str, line: int | None, where: str) -> ConfigError:
    """Pydantic's first complaint, at ``file:line``, its field under ``where``."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    return ConfigError(first["msg"], file=file, line=line, field=f"{where}.{loc}" if loc else where)


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
            raise _invalid(exc, file, line, where) from None
        _regex(milestone.pattern, file, line, f"{where}.pattern")
        milestones.append(milestone)
    return {"marks": tuple(marks), "ready": ready, "milestones": tuple(milestones)}


def _rule(item: Any, file: str, where: str) -> tuple[Rule, int | None]:
    if not isinstance(item, dict):
        raise ConfigError("each rule is a mapping", file=file, field=where)
    line = item.pop("__line__", None)
    try:
        rule = Rule.model_validate(item)
        re.compile(rule.pattern)
        if rule.near is not None:
            re.compile(rule.near)
            if rule.fatal:
                # The log watcher sees one line at a time and cannot check `near`.
                raise ConfigError(
                    "a rule with `near` must be `fatal: false`", file=file, line=line, field=where
                )
    except ValidationError as exc:
        raise _invalid(exc, file, line, where) from None
    except re.error as exc:
        raise ConfigError(
            f"not a valid regular expression: {exc}", file=file, line=line, field=where
        ) from None
    return rule, line


def _hints(data: Any, file: str) -> Hints:
    if not isinstance(data, dict):
        raise ConfigError("must map a cause or rule id to a hint", file=file, field="hints")
    line = data.pop("__line__", None)
    out: Hints = {}
    for key, value in data.items():
        where = f"hints.{key}"
        if isinstance(value, str):
            out[str(key)] = (value, ())
            continue
        if not isinstance(value, dict):
            raise ConfigError(
                "a hint is a string or a phase -> hint mapping", file=file, line=line, field=where
            )
        value.pop("__line__", None)
        default = value.pop("default", None)
        bad = sorted(set(value) - _PHASES)
        if bad or (default is not None and not isinstance(default, str)):
            raise ConfigError(
                f"unknown phase(s) {bad} (allowed: default, {', '.join(sorted(_PHASES))})",
                file=file,
                line=line,
                field=where,
            )
        out[str(key)] = (default, tuple((Phase(p), str(h)) for p, h in value.items()))
    return out


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
    for section, target in (("rules", out[0]), ("fallback", out[1])):
        items = data.get(section) or []
        if not isinstance(items, list):
            raise ConfigError("must be a list of rules", file=file, field=section)
        for index, item in enumerate(items):
            rule, line = _rule(item, file, f"{section}[{index}]")
            if rule.id in seen:
                raise ConfigError(f"duplicate rule id {rule.id!r}", file=file, line=line)
            seen.add(rule.id)
            target.append(rule)
    hints = _hints(data["hints"], file) if data.get("hints") is not None else {}
    return RuleFile(
        rules=tuple(out[0]),
        fallback=tuple(out[1]),
        hints=tuple(hints.items()),
        **_log_sections(data, file),
    )


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


def bundled_rule_files() -> list[str]:
    """The names of the rule files bundled with autotune (``sglang``, ``tgi``, ``common``, ...).

    Engines with a rule file but no engine class (TGI, TensorRT-LLM, lmdeploy, llama.cpp, ...)
    give ``autotune diagnose`` their hints for the logs they write.
    """
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".yaml")
    )


def engine_hints(engine: str, package: str = __name__) -> Hints:
    """The hints section of ``engine``'s rule file (empty for an unknown engine)."""
    if engine == "common" or not _ENGINE_NAME.match(engine):
        return {}
    return dict(_bundled(engine, package).hints)


# Common rules whose cause is a family but whose own hint fits every engine better than the
# engine's hint for that family: a CPU without AVX is arch_unsupported, not a GPU build; a
# process that sees no GPU is a launch to fix (invalid_argument), not a flag.
OWN_HINT_RULES = frozenset({"common.cpu_arch", "common.no_device"})


def _with_hints(rule: Rule, hints: Hints, *, own: bool) -> Rule:
    """``rule`` with the engine's hint for its id, or (for a common rule) for its cause.

    An engine's own rules keep their own hints unless the engine names them by id.
    """
    found = hints.get(rule.id)
    if found is None and not own and rule.id not in OWN_HINT_RULES:
        found = hints.get(rule.cause.value)
    if found is None:
        return rule
    default, by_phase = found
    return rule.model_copy(
        update={"hint": default or rule.hint, "phase_hints": by_phase or rule.phase_hints}
    )


@lru_cache(maxsize=64)  # rule files are immutable: read and merged once
def load_log(engine: str, package: str = __name__) -> LogProfile:
    """Everything the rule file ``<package>/<engine>.yaml`` says, common rules included.

    An engine without its own file (or an unknown name) gets the common rules only, with
    their engine-neutral hints; an engine's ``hints`` replace those of the rules they name.

    Args:
        engine: the rule file's name (usually the engine's name).
        package: the package holding it (an engine from another package keeps its file there).

    Raises:
        ConfigError: the file (or common.yaml) is invalid, or its hints name neither a cause
            nor a rule.
    """
    common = _bundled("common")
    if engine == "common" or not _ENGINE_NAME.match(engine):
        return LogProfile(rules=(*common.rules, *common.fallback))
    own = _bundled(engine, package)
    hints = dict(own.hints)
    mine = {r.id for r in (*own.rules, *own.fallback)}
    ordered = (*own.rules, *common.rules, *own.fallback, *common.fallback)
    ids = {r.id for r in ordered}
    stray = sorted(k for k in hints if k not in _CAUSES and k not in ids)
    if stray:
        raise ConfigError(
            f"hints for {stray}: neither a cause nor a rule id",
            file=f"{engine}.yaml",
            field="hints",
        )
    milestones = own.milestones
    if own.ready is not None:
        milestones = (*milestones, Milestone(phase=Phase.READY, pattern=own.ready, label="ready"))
    return LogProfile(
        rules=tuple(_with_hints(rule, hints, own=rule.id in mine) for rule in ordered),
        marks=own.marks,
        ready=own.ready,
        milestones=milestones,
    )


def load_rules(engine: str) -> list[Rule]:
    """The bundled rules for ``engine``, most specific first, common rules included.

    An engine without its own file (or an unknown name) gets the common rules only, with
    their engine-neutral hints; an engine's ``hints`` replace those of the rules they name.
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
