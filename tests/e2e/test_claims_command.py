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

from pathlib import Path

import pytest
from bench.claims_command import run_study

pytestmark = pytest.mark.slow


def test_flags_that_change_nothing_under_launch_noise_claim_no_gain(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    status, exported, _ = run_study(tmp_path, cli_env, ignore_flags=True, seed=1)
    s = status["summary"]
    assert s["gain"] is not None and s["gain"]["significant"] is False, s["verdict"]
    assert s["verdict"].startswith("no configuration beat the baseline beyond noise")
    assert s["confirmed"] and exported["is_baseline"] is True
    assert exported["config"] == {"level": 1}


def test_a_real_3x_optimum_under_launch_noise_is_a_significant_gain(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    status, exported, _ = run_study(tmp_path, cli_env, ignore_flags=False, seed=1)
    s = status["summary"]
    gain = s["gain"]
    assert gain is not None and gain["significant"] is True, s["verdict"]
    assert 0 < gain["ci95_pct"][0] < gain["pct"]
    assert s["confirmed"] and exported["config"] == {"level": 3}
    # Three tied-or-better candidates are not confirmed to the last round once the gain is
    # settled (the stop rule).
    assert s["confirmation"]["rounds"] == 3, s["confirmation"]
