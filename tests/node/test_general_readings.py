"""Mechanisms every engine shares, read by what they are (issue 51, fourteenth round).

Written from the mechanisms that failed on the tuning part of batch s (the fifth blind set,
tests/data/crashlogs/MANIFEST.md), each case in the shape such logs take, not copied from
the corpus:

- a server that **lists the HTTP routes it serves** (`Route: /health, Methods: GET`, one line
  per route) has built its application and started: the list is no start-up cut short;
"""

from __future__ import annotations

from autotune.diagnosis import diagnose_text


def _cause_phase(lines: list[str]) -> tuple[str, str] | None:
    """The failure's cause and phase, or None for a healthy log."""
    failure = diagnose_text("\n".join(lines)).failure
    return None if failure is None else (failure.cause.value, failure.phase.value)


ROUTES = [
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /healthz, Methods: GET",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /v1/models, Methods: GET",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /v1/embeddings, Methods: POST",
    "(Frontend pid=311) INFO 02-11 09:00:02 [routes.py:58] Route: /tokenize, Methods: POST",
]


def test_a_server_that_lists_its_routes_has_started() -> None:
    assert _cause_phase(ROUTES) is None
    loading = "INFO 02-11 08:59:40 [loader.py:12] Loading weights took 31.20 seconds"
    assert _cause_phase([loading, *ROUTES]) is None
    # a failure after the list is still read
    crash = [
        *ROUTES,
        "Traceback (most recent call last):",
        '  File "/srv/app/engine.py", line 40, in step',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    assert _cause_phase(crash) == ("runtime_crash", "benchmark")
    # a log that stops while loading is still a start-up cut short
    assert _cause_phase([loading]) == ("startup_timeout", "load")
