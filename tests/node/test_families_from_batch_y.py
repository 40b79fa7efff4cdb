"""Families read in any engine's words, from the misses of batch y's tuning part (issue 51).

Batch y (the eleventh blind set) joined with its tuning part as rule data (MANIFEST.md). Each
test names a family the way at least two engines or libraries word it; every line is written
for the test, none is copied from the corpus.
"""

from __future__ import annotations

import pytest
from tests.node.corpus_helpers import cause_of

# --- a value above the limit its own setting allows ----------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # vLLM: an adapter's rank above the LoRA rank the engine was started for
        ["ValueError: LoRA rank 128 is greater than max_lora_rank 32."],
        # SGLang: more adapters in a batch than the server was started for
        [
            "[2026-01-05 10:00:00] Scheduler hit an exception: Traceback (most recent call last):",
            "ValueError: The number of adapters (12) is larger than max_loras_per_batch (8).",
        ],
        # an engine's speculative settings: more draft tokens than its setting allows
        ["RuntimeError: num_draft_tokens=16 exceeds max_draft_tokens (8) set at start-up"],
    ],
)
def test_a_value_above_the_limit_its_setting_allows_is_an_invalid_argument(
    lines: list[str],
) -> None:
    """A value checked against a ``max_*`` setting is the setting's refusal: the flag that sets
    the limit (or the value) is what to change, whatever else the message mentions (a LoRA
    "rank" is no process rank of a collective)."""
    assert cause_of(lines) == "invalid_argument"
