"""VLLMEngine and CommandEngine: exact argv/env tables and template validation."""

from __future__ import annotations

import re
import sys

import pytest

from autotune.engines import CommandEngine, VLLMEngine
from autotune.errors import ConfigError
from autotune.models import EngineSpec

PY = sys.executable


def vllm(gpus: int = 0) -> VLLMEngine:
    return VLLMEngine(EngineSpec(name="vllm", python=PY, gpus=gpus))


@pytest.mark.parametrize(
    ("gpus", "args", "tail"),
    [
        (0, [], []),
        (1, ["--max-num-seqs", "64"], ["--max-num-seqs", "64"]),
        (4, ["--max-num-seqs", "64"], ["--max-num-seqs", "64", "--tensor-parallel-size", "4"]),
        (4, ["-tp", "2"], ["-tp", "2"]),  # the space's own TP wins; nothing added
    ],
)
def test_vllm_argv(gpus: int, args: list[str], tail: list[str]) -> None:
    argv, env = vllm(gpus).command("Qwen/Qwen3-8B", args, {"VLLM_X": "1"})
    head = [
        PY, "-m", "vllm.entrypoints.cli.main", "serve", "Qwen/Qwen3-8B",
        "--host", "{host}", "--port", "{port}",
    ]  # fmt: skip
    assert argv == head + tail
    assert env == {"VLLM_X": "1"}


@pytest.mark.parametrize(
    ("args", "spec_gpus", "gpus"),
    [
        ([], 0, 1),
        ([], 2, 2),
        (["--tensor-parallel-size", "4"], 0, 4),
        (["-tp", "2", "-dp", "2"], 0, 4),
    ],
)
def test_vllm_gpus(args: list[str], spec_gpus: int, gpus: int) -> None:
    assert vllm(spec_gpus).gpus(args) == gpus


def test_vllm_milestones_match_its_log() -> None:
    log = [  # noqa: E501
        "INFO 01-01 10:00:00 [gpu_model_runner.py:1] Starting to load model Qwen/Qwen3-8B...",
        "INFO 01-01 10:00:09 [gpu_model_runner.py:2] Model loading took 15.27 GiB and 8.1 seconds",  # noqa: E501
        "INFO 01-01 10:00:12 [kv_cache_utils.py:3] GPU KV cache size: 353,712 tokens",
        "INFO 01-01 10:00:30 [gpu_model_runner.py:4] Graph capturing finished in 17 secs, took 0.6 GiB",  # noqa: E501
        "INFO 01-01 10:00:31 [core.py:5] init engine (profile, create kv cache, warmup model) took 21.5 seconds",  # noqa: E501
        "INFO:     Application startup complete.",
    ]
    milestones = vllm().milestones()
    assert len(milestones) == len(log)
    for milestone, line in zip(milestones, log, strict=True):
        assert re.search(milestone.pattern, line), (milestone.label, line)


def command(template: list[str], **extra: object) -> CommandEngine:
    return CommandEngine(
        EngineSpec.model_validate({"name": "command", "command": template, **extra})
    )


def test_command_renders_model_only() -> None:
    engine = command(
        ["my-server", "--port={port}", "--bind", "{host}", "--model", "{model}", "{{x}}"]
    )
    argv, env = engine.command("/models/m", ["--fast"], {"K": "v"})
    assert argv == [
        "my-server",
        "--port={port}",
        "--bind",
        "{host}",
        "--model",
        "/models/m",
        "{x}",
        "--fast",
    ]
    assert env == {"K": "v"}
    assert engine.health_path == "/health"


def test_command_health_path_from_spec() -> None:
    assert command(["srv", "{port}"], health_path="/v1/models").health_path == "/v1/models"


@pytest.mark.parametrize(
    ("template", "needle"),
    [
        (None, "needs 'command'"),
        ([], "needs 'command'"),
        (["srv", "--model", "{model}"], "must contain {port}"),
        (["srv", "{port}", "{gpu}"], "unknown placeholder {gpu}"),
        (["srv", "{port}", "{model.__class__}"], "unknown placeholder"),
        (["srv", "{port}", "{model[0]}"], "unknown placeholder"),
        (["srv", "{port!r}"], "no format spec"),
        (["srv", "{port:>8}"], "no format spec"),
        (["srv", "{port}", "{"], "literal brace"),
    ],
)
def test_command_template_errors(template: list[str] | None, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        command(template)  # type: ignore[arg-type]
    assert info.value.field == "engine.command"
    assert needle in info.value.message
