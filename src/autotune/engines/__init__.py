"""Engines: one plug-in per kind of server (or job), chosen by ``engine.name`` in the space.

sglang        SGLangEngine        python -m sglang.launch_server (version-aware flags)
sim           SimEngine           the SGLang stand-in, python -m autotune.sim
vllm          VLLMEngine          vllm serve MODEL
transformers  TransformersEngine  transformers serve MODEL (CPU quickstart, tiny-llama)
command       CommandEngine       any server from an argv template with {port}
collective    CollectiveEngine    all-reduce latency job under torch.distributed.run
"""

from __future__ import annotations

from autotune.engines.base import Engine
from autotune.engines.collective import CollectiveEngine
from autotune.engines.command import CommandEngine
from autotune.engines.preflight import Finding, engine_help, preflight
from autotune.engines.sglang import SGLangEngine, SimEngine
from autotune.engines.transformers import TransformersEngine
from autotune.engines.vllm import VLLMEngine
from autotune.errors import ConfigError
from autotune.space.schema import EngineSpec

ENGINES: dict[str, type[Engine]] = {
    cls.name: cls
    for cls in (
        SGLangEngine,
        SimEngine,
        VLLMEngine,
        TransformersEngine,
        CommandEngine,
        CollectiveEngine,
    )
}


def get_engine(spec: EngineSpec, *, simulate: bool = False) -> Engine:
    """The engine named by ``spec.name``.

    Raises:
        ConfigError: unknown engine name, or an engine that cannot be simulated
            (field ``engine.name``).
    """
    try:
        cls = ENGINES[spec.name]
    except KeyError:
        raise ConfigError(
            f"unknown engine {spec.name!r}; known engines: {', '.join(sorted(ENGINES))}",
            field="engine.name",
        ) from None
    return cls(spec, simulate=simulate)


__all__ = [
    "ENGINES",
    "CollectiveEngine",
    "CommandEngine",
    "Engine",
    "Finding",
    "SGLangEngine",
    "SimEngine",
    "TransformersEngine",
    "VLLMEngine",
    "engine_help",
    "get_engine",
    "preflight",
]
