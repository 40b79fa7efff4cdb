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
