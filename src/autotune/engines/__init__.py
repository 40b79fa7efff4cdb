"""Engines: one plug-in per kind of server (or job), chosen by ``engine.name`` in the space.

sglang        SGLangEngine        python -m sglang.launch_server (version-aware flags)
sim           SimEngine           the SGLang stand-in, python -m autotune.sim
vllm          VLLMEngine          vllm serve MODEL
transformers  TransformersEngine  transformers serve MODEL (CPU quickstart, tiny-llama)
command       CommandEngine       any server from an argv template with {port}
collective    CollectiveEngine    all-reduce latency job under torch.distributed.run

Each registers itself in :data:`ENGINES` next to its class; a new engine is a module here
(or in another package, named by an ``autotune.engines`` entry point) plus its rule file.
The classes above are re-exported for convenience; nothing needs to list a new one.
"""

from __future__ import annotations

from autotune.engines.base import ENGINES, Engine
from autotune.engines.collective import CollectiveEngine
from autotune.engines.command import CommandEngine
from autotune.engines.preflight import Finding, engine_help, preflight
from autotune.engines.sglang import SGLangEngine, SimEngine
from autotune.engines.transformers import TransformersEngine
from autotune.engines.vllm import VLLMEngine
from autotune.models import EngineSpec


def get_engine(spec: EngineSpec, *, simulate: bool = False) -> Engine:
    """The engine named by ``spec.name``.

    Raises:
        ConfigError: unknown engine name, or an engine that cannot be simulated
            (field ``engine.name``).
    """
    return ENGINES.get_class(spec.name)(spec, simulate=simulate)


def guess_engine(text: str) -> str | None:
    """The engine whose log ``text`` is: the one whose marks (its rule file's ``marks``)
    appear first; None when no engine's do.

    Engines that borrow another's rule file (``sim`` reads as ``sglang``) are not guessed.
    """
    found: list[tuple[int, str]] = []
    for name, cls in ENGINES.items():
        if (cls.rules_name or name) != name:
            continue
        hits = [text.find(mark) for mark in cls.log_profile().marks if mark in text]
        if hits:
            found.append((min(hits), name))
    return min(found)[1] if found else None


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
    "guess_engine",
    "preflight",
]
