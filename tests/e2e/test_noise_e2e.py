"""Answers you can trust, end to end on the stand-in server with about 8% launch noise.

`autotune start --simulate` (the CLI, in a subprocess; real Optuna SQLite storage, the local
executor, the stand-in SGLang server time-scaled 20x) on two servers the tuner has not seen:

- one whose flags change nothing (``AUTOTUNE_SIM_FLAGS_IGNORED=1``): autotune must not claim
  a gain, must say so in plain words and must export the baseline;
- one with a real large optimum (``--max-running-requests`` decides how many of 16 streams
  run at once): a significant gain whose whole 95% interval lies above zero.

Both launch the baseline three times, search two more configurations and confirm the top two
against the baseline in interleaved rounds. Launch draws are seeded (``AUTOTUNE_SIM_SEED``
with a launch counter), so each run is reproducible; bench/noise_claims.py runs the same two
scenarios over many seeds and counts how often a gain is claimed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.e2e.noise_studies import BASELINE, run_study

pytestmark = pytest.mark.slow


def study(
    tmp_path: Path, cli_env: dict[str, str], *, flags_ignored: bool, seed: int
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run one study; return ``status --json``, ``export --format json`` and start's output.

    Up to 5 confirmation rounds (the bench's figures use 3): on a loaded 2-core machine one
    slow window can leave the ranking unsettled after 3, and unsettled is when confirmation
    is meant to go on.
    """
    return run_study(tmp_path, cli_env, flags_ignored=flags_ignored, seed=seed, rounds=5)


def _launches(status: dict[str, Any]) -> tuple[int, int]:
    """(search launches of the baseline, confirmation launches)."""
    trials = status["trials"]
    base = sum(
        1 for t in trials if t["baseline"] and t["confirm_round"] is None and t["outcome"] == "ok"
    )
    return base, sum(1 for t in trials if t["confirm_round"] is not None)


def test_flags_that_change_nothing_claim_no_gain_and_export_the_baseline(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    status, exported, out = study(tmp_path, cli_env, flags_ignored=True, seed=1)
    s = status["summary"]
    gain = s["gain"]
    assert gain is not None and gain["significant"] is False, s["verdict"]
    lo, hi = gain["ci95_pct"]
    assert lo < 0 < hi
    assert gain["launches"]["baseline"] >= 3 and gain["launches"]["best"] >= 3
    assert s["verdict"].startswith("no configuration beat the baseline beyond noise")
    assert "no configuration beat the baseline beyond noise" in out
    assert "noise: launch to launch" in out
    # At least the minimum rounds (a candidate whose launch fails drops out, so the launch
    # count alone can be below rounds x (candidates + 1)).
    assert s["confirmed"] and s["confirmation"]["rounds"] >= 3, s["confirmation"]
    assert _launches(status) == (3, s["confirmation"]["launches"])
    # The answer is the baseline, never the search's (noise) winner.
    assert exported["is_baseline"] is True and exported["config"] == BASELINE
    assert status["best"] == s["best_trial"] == 0


def test_a_real_large_optimum_is_a_significant_gain_above_zero(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    status, exported, out = study(tmp_path, cli_env, flags_ignored=False, seed=1)
    s = status["summary"]
    gain = s["gain"]
    assert gain is not None and gain["significant"] is True, s["verdict"]
    lo, hi = gain["ci95_pct"]
    assert 0 < lo < gain["pct"] < hi
    assert s["verdict"].startswith("gain over the baseline") and "(confirmed)" in s["verdict"]
    assert exported["is_baseline"] is False
    assert exported["config"]["max_running_requests"] > BASELINE["max_running_requests"]
    assert exported["gain"]["significant"] is True
    assert "gain over the baseline" in out and "confirmation:" in out
