"""Mechanisms every engine shares, read by what they are (issue 51, thirteenth round).

Written from the mechanisms that failed on the tuning part of batch r (the fourth blind set,
tests/data/crashlogs/MANIFEST.md), each case in the shape such logs take, not copied from
the corpus:

- a server's own **access log** answering a request with a 5xx status failed while serving;
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text


def _cause_phase(lines: list[str]) -> tuple[str, str] | None:
    """The failure's cause and phase, or None for a healthy log."""
    failure = diagnose_text("\n".join(lines)).failure
    return None if failure is None else (failure.cause.value, failure.phase.value)


SERVING = [
    "INFO:     Started server process [4242]",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://0.0.0.0:9000 (Press CTRL+C to quit)",
    'INFO:     10.1.2.3:40112 - "GET /v1/models HTTP/1.1" 200 OK',
]


@pytest.mark.parametrize(
    "answer",
    [
        'INFO:     10.1.2.3:40118 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        '10.1.2.3 - - [02/Mar/2025:09:15:02 +0000] "POST /generate HTTP/1.1" 503 212 "-" "curl"',
        '[GIN] 2025/03/02 - 09:15:02 | 500 |  2.118s |  10.1.2.3 | POST     "/api/chat"',
    ],
)
def test_a_servers_own_5xx_answer_is_a_failure_while_serving(answer: str) -> None:
    assert _cause_phase([*SERVING, answer]) == ("runtime_crash", "benchmark")
    # and in an excerpt that shows nothing before it: a failure, never `ok` (gin's record says
    # no more than that: Ollama loads a model on the first request, so it places no phase)
    alone = _cause_phase([answer, "DEBUG 03-02 09:15:02 freed the request's cache blocks"])
    assert alone is not None
    if "GIN" not in answer:
        assert alone == ("runtime_crash", "benchmark")


def test_answers_with_2xx_statuses_only_stay_healthy() -> None:
    ok = 'INFO:     10.1.2.3:40118 - "POST /v1/completions HTTP/1.1" 200 OK'
    assert _cause_phase([*SERVING, ok, ok]) is None
