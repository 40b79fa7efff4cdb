"""Families read in any engine's words, from the misses of batch zc's tuning part (issue 51).

Batch zc (the fifteenth blind set) joined with its tuning part as rule data (MANIFEST.md).
Each test names a family the way at least two engines, runtimes or supervisors word it; every
line is written for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

from autotune.node.logparse import parse_log

# --- a structured record pasted cut short or without its brace: its level is read ----------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # a Python service's JSON logger, pasted from the middle of the record
        (
            '"timestamp": "2026-02-01 09:00:00,120", "level": "ERROR", "message": "Error: '
            "engine failed to start: CUDA error: out of memory",
            "Error: engine failed to start: CUDA error: out of memory",
        ),
        # a Go or Node service's record (zap, pino), cut before its closing brace
        (
            '{"level":"error","ts":1767000000.5,"msg":"failed to load model: CUDA error: out of '
            "memory",
            "failed to load model: CUDA error: out of memory",
        ),
    ],
)
def test_a_cut_structured_record_gives_its_level_and_message(line: str, message: str) -> None:
    """A record whose level and message fields are there is read as the logger wrote it,
    though the thread cut it short or dropped its opening brace."""
    record = parse_log([line])[0]
    assert (record.text, record.level) == (message, "error")
    assert cause_of([line]) == "cuda_oom"


def test_fields_without_a_level_stay_as_written() -> None:
    """A line of fields with no level (a config dump) is not a record to read a level from."""
    line = '"model": "llama-3-8b", "max_batch_size": 8, "message": "loaded"'
    record = parse_log([line])[0]
    assert (record.text, record.level) == (line, None)

