"""Logs of real engines on the GPU test machine: `autotune diagnose` names each one right.

tests/data/gpu-crashlogs holds every server log the GPU studies produced that is worth keeping
(labels.csv: engine, version, GPU, flags, the cause a serving engineer names, the flag that
fixes it, and which study and trial produced it). Healthy logs are kept too: they end with the
engine's own shutdown messages after autotune's SIGTERM, which are not a crash.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotune.cli.app import app

CORPUS = Path(__file__).resolve().parents[1] / "data" / "gpu-crashlogs"
with (CORPUS / "labels.csv").open(encoding="utf-8", newline="") as fh:
    ROWS = list(csv.DictReader(fh))


def test_every_log_is_labelled_with_its_source() -> None:
    assert {r["id"] for r in ROWS} == {p.stem for p in CORPUS.glob("*.log")}
    for row in ROWS:
        assert row["engine"] and row["version"] and row["gpu"] and row["source"], row


# Logs the classifier still reads wrong, with why; strict: a fix makes the test fail until the
# entry goes.
KNOWN_MISSES = {
    "vllm-0.26.0-capture-sizes-above-batch-limit": (
        "vLLM's engine-init line counts as ready, so a failure after it and before the server's "
        "own ready line reads as serving (benchmark)"
    ),
}


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[r["id"]]))
        if r["id"] in KNOWN_MISSES
        else r
        for r in ROWS
    ],
    ids=[r["id"] for r in ROWS],
)
def test_diagnose_names_the_cause_and_the_flag_that_fixes_it(row: dict[str, str]) -> None:
    # In process, through the command's own code (the remedy test below runs the real entry
    # point in a subprocess): a Python start per log would be most of this file's time.
    log = str(CORPUS / f"{row['id']}.log")
    result = CliRunner().invoke(app, ["diagnose", log, "--engine", row["engine"], "--json"])
    answer = json.loads(result.stdout)
    assert answer["cause"] == row["cause"], answer
    if row["cause"] != "ok":
        assert answer["phase"] == row["phase"], answer
        assert row["fix_flag"] in answer["hint"], answer["hint"]
    # What the engine refused is said, not only that it refused (a validation error's header,
    # "1 validation error for VllmConfig", names no setting).
    assert row["says"] in answer["message"], answer["message"]


def test_the_engines_own_remedy_leads_the_hint() -> None:
    """SGLang computes the least memory share that would have worked; the hint says it first."""
    proc = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "diagnose",
         str(CORPUS / "sglang-0.5.17-mem-fraction-too-small.log"), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    hint = json.loads(proc.stdout)["hint"]
    assert hint.startswith("The engine says: Raise --mem-fraction-static above 0.192"), hint


@pytest.mark.parametrize(
    ("message", "advice"),
    [
        ("ValueError: No available memory for the cache blocks. Try increasing "
         "`gpu_memory_utilization` when initializing the engine.",
         "Try increasing `gpu_memory_utilization` when initializing the engine."),
        ("Raise --mem-fraction-static above 0.192 (minimum viable = 0.1915). If using x",
         "Raise --mem-fraction-static above 0.192 (minimum viable = 0.1915)."),
        # Words of a remedy without a setting they name, or no remedy at all: nothing.
        ("Found ulimit of 20000 and failed to automatically increase with error", ""),
        ("Please increase the timeout and try again.", ""),
        ("RuntimeError: CUDA error: out of memory", ""),
    ],
)  # fmt: skip
def test_engine_advice(message: str, advice: str) -> None:
    from autotune.node.failures.hints import engine_advice

    assert engine_advice(message) == advice
