"""``Failure.by_words``: whether the cause is the word scorer's (node/families.py) rather than a
rule's own (issue 51: the benches compare the scorer's answers with the learnt model's).

The flag changes no answer; it only says where an answer came from. Each log is written for
this test, shaped as the logs the scorer reads.
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text
from autotune.models import Cause

FRAMES = ["Traceback (most recent call last):", '  File "serve.py", line 12, in <module>']


@pytest.mark.parametrize(
    ("last", "cause", "rule", "by_words"),
    [
        # a generic rule (a failed check) whose words name a narrower family: the scorer's
        (
            "AssertionError: not enough free blocks for the kv cache; raise the memory share",
            Cause.KV_POOL_OOM,
            "common.assertion",
            True,
        ),
        # no rule names it: the scorer reads the exception's words
        (
            "ValueError: max_model_len is larger than the maximum the model allows",
            Cause.INVALID_ARGUMENT,
            None,
            True,
        ),
        # a rule of its own family: not the scorer's
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
            Cause.CUDA_OOM,
            "common.cuda_oom",
            False,
        ),
        # a bare failed check: the generic rule's own answer
        ("AssertionError", Cause.ASSERTION, "common.assertion", False),
    ],
)
def test_the_word_scorers_answers_are_marked(
    last: str, cause: Cause, rule: str | None, by_words: bool
) -> None:
    failure = diagnose_text("\n".join([*FRAMES, last]), learnt=False).failure
    assert failure is not None
    assert failure.cause == cause
    assert failure.rule == rule
    assert failure.by_words is by_words


def test_a_failure_nothing_names_is_not_the_scorers() -> None:
    failure = diagnose_text("\n".join([*FRAMES, "ValueError: frob"]), learnt=False).failure
    assert failure is not None
    assert failure.cause == Cause.UNKNOWN
    assert not failure.by_words


def test_the_flag_is_not_stored() -> None:
    lines = [*FRAMES, "ValueError: max_model_len is larger than the maximum the model allows"]
    failure = diagnose_text("\n".join(lines), learnt=False).failure
    assert failure is not None and failure.by_words
    assert "by_words" not in failure.model_dump()
    assert "by_words" not in failure.model_dump_json()
