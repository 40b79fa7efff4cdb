"""Any HTTP server given as an argv template (``engine.command``).

The template may use ``{host}``, ``{port}`` and ``{model}`` and must use ``{port}`` (the
node picks a free port per trial). Placeholders are filled with ``str.format_map`` over a
fixed dict of those three names: attribute access, indexing, conversions and format specs
are refused, and nothing is ever evaluated.
"""

from __future__ import annotations

import string
from typing import ClassVar

from autotune.engines.base import ENGINES, Engine
from autotune.errors import ConfigError
from autotune.models import EngineSpec

PLACEHOLDERS = ("host", "port", "model")
_FIELD = "engine.command"


def check_template(template: list[str] | None) -> list[str]:
    """Validate a command template.

    Raises:
        ConfigError: missing or empty, no ``{port}``, an unknown or decorated placeholder,
            or unbalanced braces (field ``engine.command``).
    """
    if not template:
        raise ConfigError(
            "the command engine needs 'command': an argv list such as "
            "[my-server, --port, '{port}', --model, '{model}']",
            field=_FIELD,
        )
    seen: set[str] = set()
    for index, part in enumerate(template):
        try:
            fields = list(string.Formatter().parse(part))
        except ValueError as exc:
            raise ConfigError(
                f"item {index} {part!r}: {exc}; write a literal brace as '{{{{' or '}}}}'",
                field=_FIELD,
            ) from None
        for _, name, spec, conversion in fields:
            if name is None:
                continue
            if name not in PLACEHOLDERS:
                raise ConfigError(
                    f"item {index} {part!r}: unknown placeholder {{{name}}}; "
                    f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}",
                    field=_FIELD,
                )
            if spec or conversion:
                raise ConfigError(
                    f"item {index} {part!r}: placeholders take no format spec or conversion; "
                    f"write {{{name}}}",
                    field=_FIELD,
                )
            seen.add(name)
    if "port" not in seen:
        raise ConfigError(
            "the command must contain {port}: the node picks a free port for each trial",
            field=_FIELD,
        )
    return list(template)


@ENGINES.register
class CommandEngine(Engine):
    """A server started from ``engine.command``; health at ``engine.health_path`` or /health."""

    name: ClassVar[str] = "command"

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        if simulate:
            raise ConfigError(
                "--simulate runs the SGLang stand-in; it cannot stand in for a custom command",
                field="engine.name",
            )
        super().__init__(spec, simulate=simulate)
        self.template = check_template(spec.command)

    def base_command(self, model: str) -> list[str]:
        # {host}/{port} stay placeholders for the node; only {model} is known here.
        values = {"host": "{host}", "port": "{port}", "model": model}
        return [part.format_map(values) for part in self.template]

    def gpus(self, args: list[str]) -> int:
        return self.spec.gpus

    def help_command(self) -> list[str] | None:
        """The command up to its first option, plus ``--help`` (``my-server serve --help``).

        Options and placeholders are left out so that a command that ignores ``--help`` does
        not start serving on a real port; preflight then finds no flags and checks nothing.
        """
        head: list[str] = []
        for part in self.template:
            if part.startswith("-") and part not in ("-m",) or "{" in part:
                break
            head.append(part)
        if head and head[-1] == "-m":
            head.pop()
        return [*head, "--help"] if head else None
