"""The engine interface: how one kind of server is launched, watched and diagnosed.

An engine is pure: it turns a model and the rendered arguments/environment of one
configuration into the exact argv and env of a server, and it knows that server's health
path and flags. What its log says (failure rules, startup milestones, the ready line, the
marks that tell its log apart) lives in its rule file, ``autotune/rules/<name>.yaml``. It
launches nothing itself.

Engines register by name next to their class and are found by module listing (or an entry
point in the ``autotune.engines`` group for engines in other packages), so adding one is a
module plus a rule file (docs/architecture.md)::

    @ENGINES.register
    class MyEngine(Engine):
        name = "my-engine"
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Literal

from autotune.core.registry import Registry
from autotune.engines import dummymodel
from autotune.engines._args import has_flag
from autotune.engines.flagtable import FlagTable, load_table, message_flags
from autotune.errors import ConfigError
from autotune.models import EngineSpec, Milestone, Rule
from autotune.rules import LogProfile, load_log


class Engine(abc.ABC):
    """One kind of inference server.

    Args:
        spec: the ``engine:`` section of the space file.
        simulate: launch the stand-in server (``python -m autotune.sim``) instead of the real one.

    Raises:
        ConfigError: ``simulate`` for an engine the stand-in server cannot stand in for.
    """

    name: ClassVar[str]
    # An instance attribute (not a ClassVar) so that ``engine.health_path`` in the space wins.
    health_path: str = "/health"
    # The rule file: ``<rules_package>/<rules_name or name>.yaml``.
    rules_name: ClassVar[str | None] = None
    # The bundled flag table: ``engines/flags/<flags_name or name>-<version>.json``.
    flags_name: ClassVar[str | None] = None
    rules_package: ClassVar[str] = "autotune.rules"
    # Whether the stand-in SGLang server (``--simulate``) can stand in for this engine.
    can_simulate: ClassVar[bool] = False
    # Arguments that make the engine fill the weights with random values (``--load-format
    # dummy``): set where the engine can serve ``model: dummy:<shape>`` (engines/dummymodel).
    dummy_weights_args: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        if simulate and not self.can_simulate:
            raise ConfigError(
                f"--simulate runs the stand-in SGLang server, which cannot stand in for "
                f"engine {self.name!r}; drop --simulate",
                field="engine.name",
            )
        self.spec = spec
        self.simulate = simulate
        if spec.health_path:
            self.health_path = spec.health_path

    @classmethod
    def log_profile(cls) -> LogProfile:
        """What this engine's rule file says about its log (common rules included)."""
        return load_log(cls.rules_name or cls.name, cls.rules_package)

    @property
    def ready_pattern(self) -> str | None:
        """A log line that says the server is up (the rule file's ``ready``), if it has one."""
        return self.log_profile().ready

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
        if (
            self.dummy_weights_args
            and dummymodel.is_dummy(model)
            and not has_flag(translated, (self.dummy_weights_args[0],))
        ):
            translated += self.dummy_weights_args
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
        return list(self.log_profile().rules)

    def milestones(self) -> list[Milestone]:
        """Startup milestones in this engine's log, in order (the ready line last)."""
        return list(self.log_profile().milestones)

    def flag_table(self) -> FlagTable | None:
        """The bundled flag table of this engine at its version, or None without one."""
        return load_table(self.flags_name or self.name, self.spec.version)

    def message_flags(self) -> dict[str, list[str]]:
        """This engine's flags with the choices an error message may quote ({} without a flag
        table): what a crash's hint may name (engines/flagtable.py ``message_flags``)."""
        return {k: list(v) for k, v in message_flags(self.flag_table()).items()}

    def gpus(self, args: list[str]) -> int:
        """GPUs one trial holds, given its full argument list (e.g. tp x dp for SGLang)."""
        return self.spec.gpus

    def mode(self) -> Literal["server", "job"]:
        """``server`` (HTTP benchmark) or ``job`` (runs to completion, prints AUTOTUNE_METRICS)."""
        return "server"

    def known_flags(self) -> set[str] | None:
        """The engine's flags from the bundled table (for preflight), or None if unknown."""
        table = self.flag_table()
        return table.names() if table else None

    def prepare(self, model: str) -> str:
        """Driver-side preparation of the model (e.g. build a tiny test model); returns its path.

        ``dummy:<shape>`` becomes a folder with the shape's config and a tokenizer, for an
        engine that loads random weights (``dummy_weights_args``).

        Raises:
            ConfigError: a dummy shape for an engine that cannot load random weights.
        """
        if model.startswith(dummymodel.PREFIX) and not self.simulate:
            if not self.dummy_weights_args:
                raise ConfigError(
                    f"engine {self.name!r} cannot load random weights for {model!r}; "
                    "name a real model path (or use sglang or vllm)",
                    field="model",
                )
            return str(dummymodel.ensure(model))
        return model

    def request_model(self, model: str) -> str:
        """The ``model`` field to send in completion requests."""
        return model

    def request_fields(self) -> dict[str, Any]:
        """Fields every benchmark request carries unless the space's ``extra_body`` sets them.

        Engines that can ignore the end-of-sequence token say so here, so every configuration
        generates the output length asked for: a configuration whose kernels round differently
        would otherwise stop at another length and be measured on other work.
        """
        return {}

    def resolved_flags(self, log_text: str) -> dict[str, str]:
        """``{flag: value}`` of the settings the engine chose itself, read from a launch's log
        (a share of memory, a batch limit derived from the GPU): what a launch that left
        them unset ran with. The search starts its screen from them. None known: empty."""
        return {}


ENGINES: Registry[Engine] = Registry(
    "engine", "autotune.engines", "autotune.engines", "engine.name"
)
