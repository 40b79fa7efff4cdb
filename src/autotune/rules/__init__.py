"""Failure rules shipped with autotune: one YAML file per engine plus ``common.yaml``.

A rule file has two ordered lists, ``rules`` (specific causes) and ``fallback`` (catch-all
lines such as "Scheduler hit an exception" that only say *that* something failed)::

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
so every specific cause is tried before any catch-all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from autotune.errors import ConfigError
from autotune.models import Rule

__all__ = ["load_rule_file", "load_rules", "user_rules"]

_SECTIONS = ("rules", "fallback")
_ENGINE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class _LineLoader(yaml.SafeLoader):  # type: ignore[misc]
    """A safe loader that remembers the line of every mapping (for error messages)."""


def _mapping_with_line(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def _parse(text: str, file: str) -> tuple[list[Rule], list[Rule]]:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"not valid YAML: {exc}", file=file, line=line) from None
    if data is None:
        return [], []
    if not isinstance(data, dict):
        raise ConfigError("a rule file is a mapping with `rules:` and `fallback:` lists", file=file)
    data.pop("__line__", None)
    unknown = set(data) - set(_SECTIONS)
    if unknown:
        raise ConfigError(
            f"unknown section(s) {sorted(unknown)} (allowed: rules, fallback)", file=file
        )
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
    return out


def load_rule_file(path: str | Path) -> list[Rule]:
    """Read and validate one rule file: its ``rules`` then its ``fallback`` list.

    Raises:
        ConfigError: the file is not valid YAML, or a rule is invalid (names file:line, field).
    """
    specific, fallback = _parse(Path(path).read_text(encoding="utf-8"), str(path))
    return specific + fallback


@lru_cache(maxsize=32)
def _bundled(name: str) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    resource = resources.files(__name__) / f"{name}.yaml"
    if not resource.is_file():
        return (), ()
    specific, fallback = _parse(resource.read_text(encoding="utf-8"), f"{name}.yaml")
    return tuple(specific), tuple(fallback)


def load_rules(engine: str) -> list[Rule]:
    """The bundled rules for ``engine``, most specific first, common rules included.

    An engine without its own file (or an unknown name) gets the common rules only.
    """
    common, common_fallback = _bundled("common")
    if engine == "common" or not _ENGINE_NAME.match(engine):
        return [*common, *common_fallback]
    own, own_fallback = _bundled(engine)
    return [*own, *common, *own_fallback, *common_fallback]


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
