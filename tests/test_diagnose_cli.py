"""`autotune diagnose` output: `ok` for a healthy log, and log text printed as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotune.cli import main


def test_healthy_log_says_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-11-29 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n"
        "[2026-11-29 10:00:09] The server is fired up and ready to roll!\n"
    )
    assert main(["diagnose", str(log), "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok") and "no failure found" in out and "unknown" not in out
    assert main(["diagnose", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "ok"


def test_no_raw_markup_and_log_brackets_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (
        "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, "
        "mCudaStream->get()): out of memory (/app/tensorrt_llm/runtime/tllmBuffers.h:112)"
    )
    log = tmp_path / "server.log"
    log.write_text(f"[bold]not markup[/bold]\n{line}\n")
    assert main(["diagnose", str(log), "--engine", "command"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cuda_oom at ")
    assert "[dim]" not in out and "[/]" not in out
    assert "[TensorRT-LLM][ERROR]" in out  # the log's own brackets are printed, not parsed
    assert "[bold]not markup[/bold]" in out


def test_json_names_the_engine_and_carries_every_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "tgi-1  | 2024-01-01T00:00:00.000000Z ERROR text_generation_launcher: Method Warmup "
        "encountered an error: Not enough memory to handle 4096 prefill tokens.\n"
        "tgi-1  | Error: ShardCannotStart\n"
    )
    assert main(["diagnose", str(log), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["cause"], out["phase"], out["engine"]) == ("kv_pool_oom", "memory_pool", "tgi")
    assert "--max-batch-prefill-tokens" in out["hint"]
    assert out["evidence"] and out["rule"] == "common.kv_pool_oom" and "exit_code" in out
    assert main(["diagnose", str(log)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("kv_pool_oom at memory_pool") and "engine: tgi" in text


@pytest.mark.parametrize(
    "body",
    [
        "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'x'\n",
        "ERROR 01-01 12:00:00 [core.py:1] the engine gave up\n",
        "[2026-11-29 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n",
    ],
)
def test_a_failed_run_is_never_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str
) -> None:
    log = tmp_path / "server.log"
    log.write_text(body)
    assert main(["diagnose", str(log), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cause"] != "ok" and out["evidence"] and out["phase"]


def test_an_exit_code_makes_a_healthy_looking_log_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("INFO:     Application startup complete.\n")
    assert main(["diagnose", str(log), "--json", "--exit-code", "137"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cause"] != "ok" and out["exit_code"] == 137
