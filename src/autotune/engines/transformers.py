"""Hugging Face ``transformers serve``: a real engine that runs on the CPU and on one GPU.

The model is passed as ``serve``'s FORCE_MODEL argument, so it is loaded at startup (load
time counts as startup, not as the first request) and every request must name exactly that
model. ``tiny-llama`` / ``tiny-llama:gpu`` are built on the spot (see ``tinymodel``). Its
log (ready line, milestones, failure rules) is described in ``rules/transformers.yaml``.
"""

from __future__ import annotations

from typing import ClassVar

from autotune.engines import tinymodel
from autotune.engines.base import ENGINES, Engine
from autotune.errors import ConfigError
from autotune.models import EngineSpec

# `python -m` form of the `transformers` console script: engine.python's interpreter runs it.
CLI_MODULE = "transformers.cli.transformers"


@ENGINES.register
class TransformersEngine(Engine):
    """``transformers serve MODEL``; flags such as ``--continuous-batching`` are searched."""

    name: ClassVar[str] = "transformers"

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        if simulate:
            raise ConfigError(
                "transformers serve runs for real on a CPU; --simulate is for sglang spaces",
                field="engine.name",
            )
        super().__init__(spec, simulate=simulate)

    def resolve(self, model: str) -> str:
        """The path or hub id the server loads (a tiny model's cache folder; built or not)."""
        return str(tinymodel.model_dir(model)) if tinymodel.is_tiny(model) else model

    def prepare(self, model: str) -> str:
        if tinymodel.is_tiny(model):
            return str(tinymodel.ensure_tiny_model(model))
        return super().prepare(model)

    def base_command(self, model: str) -> list[str]:
        return [
            self.spec.python, "-m", CLI_MODULE, "serve", self.resolve(model),
            "--host", "{host}", "--port", "{port}",
        ]  # fmt: skip

    def default_env(self) -> dict[str, str]:
        return {
            # No network on test machines: no update check, no hub lookups for a local path.
            "HF_HUB_DISABLE_UPDATE_CHECK": "1",
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }

    def request_model(self, model: str) -> str:
        # The server is pinned to FORCE_MODEL and rejects any other "model" field.
        return self.resolve(model)

    def gpus(self, args: list[str]) -> int:
        return self.spec.gpus

    def help_command(self) -> list[str] | None:
        return [self.spec.python, "-m", CLI_MODULE, "serve", "--help"]
