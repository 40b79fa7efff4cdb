"""The claims autotune makes, on a server it has never seen, launched by the ``command`` engine.

Mirrors the checks an outside reviewer runs, with ``autotune start``'s defaults (3 baseline
launches, confirmation of the top 3, 3 to 5 rounds): a stdlib streaming server
(tests/study/servers/scenario.py), not the stand-in, whose launches differ by about 8%:

- its flags change nothing: autotune must not claim a gain, and exports the baseline;
- ``--level 3`` is a real 3x optimum: a significant gain whose interval lies above zero.

bench/claims_command.py runs both over many seeds (the false-claim rate) and the third check,
a fixed-rate server read beside a minimal client (a timing figure, so a bench, not a test).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from tests.e2e.claims_studies import run_study

pytestmark = pytest.mark.slow

Study = tuple[dict[str, Any], dict[str, Any], str]


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Study]:
    """Both studies at once (their servers mostly sleep between tokens): half the wall time."""
    root = tmp_path_factory.mktemp("claims")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AUTOTUNE_NODE_STATE": str(root / "ns")}
    with ThreadPoolExecutor(2) as pool:
        null = pool.submit(run_study, root / "null", env, ignore_flags=True, seed=1)
        real = pool.submit(run_study, root / "real", env, ignore_flags=False, seed=1)
        return {"null": null.result(), "real": real.result()}


def test_flags_that_change_nothing_under_launch_noise_claim_no_gain(
    studies: dict[str, Study],
) -> None:
    status, exported, _ = studies["null"]
    s = status["summary"]
    assert s["gain"] is not None and s["gain"]["significant"] is False, s["verdict"]
    assert s["verdict"].startswith("no configuration beat the baseline beyond noise")
    assert s["confirmed"] and exported["is_baseline"] is True
    assert exported["config"] == {"level": 1}


def test_a_real_3x_optimum_under_launch_noise_is_a_significant_gain(
    studies: dict[str, Study],
) -> None:
    status, exported, _ = studies["real"]
    s = status["summary"]
    gain = s["gain"]
    assert gain is not None and gain["significant"] is True, s["verdict"]
    assert 0 < gain["ci95_pct"][0] < gain["pct"]
    assert s["confirmed"] and exported["config"] == {"level": 3}
    # Tied candidates are not confirmed to the last round (5) once the gain is settled: the
    # stop rule ends it, at the minimum 3 rounds or soon after when a launch reads low.
    assert s["confirmation"]["rounds"] < 5, s["confirmation"]
    assert "beats the baseline" in s["confirmation"]["stop_reason"], s["confirmation"]
