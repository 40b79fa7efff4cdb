"""vLLM (``vllm serve MODEL``), the second engine (its log: ``rules/vllm.yaml``)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from autotune.engines._args import has_flag, int_flag, logged_flags
from autotune.engines.base import ENGINES, Engine
from autotune.errors import ConfigError
from autotune.models import EngineSpec

_TP = ("--tensor-parallel-size", "-tp")
_PP = ("--pipeline-parallel-size", "-pp")
_DP = ("--data-parallel-size", "-dp")
# What a launch's log says vLLM chose (``resolved_flags``).
_ENGINE_CONFIG = re.compile(r"Initializing a V1 LLM engine .*? with config: (.*)$", re.MULTILINE)
_BATCHED_TOKENS = re.compile(r"max_num_batched_tokens=(\d+)")
_GRAPH_SIZE = re.compile(r"'max_cudagraph_capture_size': (\d+)")


@ENGINES.register
class VLLMEngine(Engine):
    """vLLM's OpenAI-compatible server, launched through the interpreter of ``engine.python``."""

    name: ClassVar[str] = "vllm"
    versioned: ClassVar[bool] = True
    dummy_weights_args: ClassVar[tuple[str, ...]] = ("--load-format", "dummy")

    def __init__(self, spec: EngineSpec, *, simulate: bool = False) -> None:
        if simulate:
            raise ConfigError(
                "the stand-in server speaks SGLang's flags only; use engine.name: sglang "
                "(or sim) to dry-run, or run vllm for real",
                field="engine.name",
            )
        super().__init__(spec, simulate=simulate)

    def base_command(self, model: str) -> list[str]:
        # The module form of the `vllm` console script, so engine.python picks the venv.
        return [
            self.spec.python, "-m", "vllm.entrypoints.cli.main", "serve", model,
            "--host", "{host}", "--port", "{port}",
        ]  # fmt: skip

    def command(
        self, model: str, args: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        argv, full_env = super().command(model, args, env)
        if self.spec.gpus > 1 and not has_flag(args, _TP):
            argv += ["--tensor-parallel-size", str(self.spec.gpus)]
        return argv, full_env

    def gpus(self, args: list[str]) -> int:
        """tp x pp x dp from the arguments, else ``engine.gpus`` (at least 1)."""
        tp, pp, dp = int_flag(args, _TP), int_flag(args, _PP), int_flag(args, _DP)
        if tp is None and pp is None and dp is None:
            return self.spec.gpus or 1
        return (tp or self.spec.gpus or 1) * (pp or 1) * (dp or 1)

    def request_fields(self) -> dict[str, Any]:
        return {"ignore_eos": True}

    def resolved_flags(self, log_text: str) -> dict[str, str]:
        # The engine's config line (``Initializing a V1 LLM engine ... with config: ...``),
        # then what the scheduler and the compiler decided.
        config = _ENGINE_CONFIG.search(log_text)
        out = logged_flags(config.group(1)) if config else {}
        if tokens := _BATCHED_TOKENS.search(log_text):
            out["--max-num-batched-tokens"] = tokens.group(1)
        if graphs := _GRAPH_SIZE.search(log_text):
            out["--max-cudagraph-capture-size"] = graphs.group(1)
        return out

    def help_command(self) -> list[str] | None:
        # `serve --help` is a compact summary; `--help=all` lists every flag.
        return [self.spec.python, "-m", "vllm.entrypoints.cli.main", "serve", "--help=all"]
