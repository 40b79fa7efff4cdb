"""The engine interface: how one kind of server is launched, watched and diagnosed.

An engine is pure: it turns a model and the rendered arguments/environment of one
configuration into the exact argv and env of a server, and it knows that server's health
path, startup milestones, failure rules and flags. It launches nothing itself.
"""

from __future__ import annotations

import abc
from typing import ClassVar, Literal

from autotune.models import Milestone, Rule
from autotune.space.schema import EngineSpec


class Engine(abc.ABC):
    """One kind of inference server.

    Args:
        spec: the ``engine:`` section of the space file.
        simulate: launch the stand-in server (``python -m autotune.sim``) instead of the real one.
    """

    name: ClassVar[str]
    # An instance attribute (not a ClassVar) so that ``engine.health_path`` in the space wins.
    health_path: str = "/health"
    ready_pattern: ClassVar[str | None] = None

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        self.spec = spec
        self.simulate = simulate
        if spec.health_path:
            self.health_path = spec.health_path

    @abc.abstractmethod
    def base_command(self, model: str) -> list[str]:
        """The server command before the configuration's arguments.

        May hold ``{host}``/``{port}`` placeholders (filled in on the node).
        """

    def translate(self, args: list[str]) -> tuple[list[str], list[str]]:
        """Rewrite arguments for this engine's version (renamed flags).

        Returns:
            The arguments to launch with, and one warning per rewrite.
        """
        return list(args), []

    def default_env(self) -> dict[str, str]:
        """Environment every launch of this engine gets unless the space sets it."""
        return {}

    def enforced_env(self) -> dict[str, str]:
        """Environment every launch gets even if the space sets it otherwise (wins over ``env``)."""
        return {}

    def command(
        self, model: str, args: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """The full argv and env for one configuration (``{host}``/``{port}`` left as is)."""
        translated, _ = self.translate(args)
        return self.base_command(model) + translated, {
            **self.default_env(),
            **env,
            **self.enforced_env(),
        }

    def help_command(self) -> list[str] | None:
        """The argv that prints the engine's ``--help`` (for preflight), or None if it has none."""
        return None

    def failure_rules(self) -> list[Rule]:
        """Rules for this engine's logs, most specific first (common rules included)."""
        from autotune.rules import load_rules

        return load_rules(self.name)

    def milestones(self) -> list[Milestone]:
        """Startup milestones in this engine's log, in order."""
        return []

    def gpus(self, args: list[str]) -> int:
        """GPUs one trial holds, given its full argument list (e.g. tp x dp for SGLang)."""
        return self.spec.gpus

    def mode(self) -> Literal["server", "job"]:
        """``server`` (HTTP benchmark) or ``job`` (runs to completion, prints AUTOTUNE_METRICS)."""
        return "server"

    def known_flags(self) -> set[str] | None:
        """The engine's flags from the bundled table (for preflight), or None if unknown."""
        return None

    def prepare(self, model: str) -> str:
        """Driver-side preparation of the model (e.g. build a tiny test model); returns its path."""
        return model

    def request_model(self, model: str) -> str:
        """The ``model`` field to send in completion requests."""
        return model
