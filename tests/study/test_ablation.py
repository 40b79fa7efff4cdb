"""The winner's ablation: each change reverted alone, relaunched interleaved with the winner."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from autotune.space.load import load
from autotune.space.schema import StudySpec
from autotune.study import ablation
from autotune.study.confirm import Sample

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quickstart() -> StudySpec:
    return load(ROOT / "search_spaces" / "quickstart.yaml")


WINNER = {
    "continuous_batching": True,
    "dtype": "float32",
    "cb_block_size": 16,
    "cb_max_batch_tokens": 1002,
}


def test_a_switch_reverted_takes_what_hangs_on_it(quickstart: StudySpec) -> None:
    found = {
        c.param: c for c in ablation.changes(quickstart, WINNER, {"continuous_batching": False})
    }
    # The baseline leaves dtype, the block size and the batch tokens unset: each is reverted
    # to unset (the engine's default) alone; continuous batching off drops both cb_ settings.
    assert set(found) == {"continuous_batching", "dtype", "cb_block_size", "cb_max_batch_tokens"}
    assert found["continuous_batching"].config == {"continuous_batching": False, "dtype": "float32"}
    assert found["dtype"].config == {k: v for k, v in WINNER.items() if k != "dtype"}
    assert found["dtype"].baseline_value is None and found["dtype"].winner_value == "float32"
    # attn_implementation is inactive with continuous batching on: no revert separates it.
    both = ablation.changes(
        quickstart, WINNER, {"continuous_batching": False, "attn_implementation": "sdpa"}
    )
    assert "attn_implementation" not in {c.param for c in both}
    assert (
        ablation.changes(quickstart, {"continuous_batching": False}, {"continuous_batching": False})
        == []
    )


def _fake(rates: dict[str, float], noise: float = 0.02, seed: int = 0) -> Any:
    rng = random.Random(seed)
    calls: list[tuple[str, int]] = []

    def measure(key: str, config: dict[str, Any], round_no: int) -> Sample:
        calls.append((key, round_no))
        rate = rates[key]
        if rate <= 0:
            return Sample(None, reason="crashed: cuda_oom")
        return Sample(rate * math.exp(rng.gauss(0, noise)), server_s=10.0)

    measure.calls = calls  # type: ignore[attr-defined]
    return measure


def test_a_change_shows_its_contribution_on_a_drifting_machine(quickstart: StudySpec) -> None:
    # The block size pays 15%, 2% launch noise, and the machine gives 3% more every launch
    # (a fresh GPU machine warmed this way in the 512-stream SGLang study): within rounds the
    # drift cancels; across launches it was the spread and hid the contribution.
    found = [c for c in ablation.changes(quickstart, WINNER, {}) if c.param == "cb_block_size"]
    inner = _fake({ablation.WINNER: 1150.0, "cb_block_size": 1000.0})

    def drifting(key: str, config: dict[str, Any], round_no: int) -> Sample:
        s = inner(key, config, round_no)
        assert s.value is not None
        return Sample(s.value * math.exp(0.03 * len(inner.calls)), server_s=s.server_s)

    a = ablation.ablate(quickstart, 7, WINNER, found, drifting, "maximize", rounds=4)
    contribution = a.steps[0].contribution
    assert contribution is not None and contribution.significant, contribution
    assert 5 < contribution.pct < 25


def test_each_change_gets_its_contribution_with_an_interval(quickstart: StudySpec) -> None:
    found = ablation.changes(quickstart, WINNER, {"continuous_batching": False})
    rates = {
        ablation.WINNER: 1300.0,
        "continuous_batching": 400.0,  # the big switch: the winner is 3.25x without it
        "dtype": 1300.0,  # does nothing
        "cb_block_size": 1150.0,
        "cb_max_batch_tokens": 0.0,  # the reverted one crashes: needed to run at all
    }
    measure = _fake(rates)
    a = ablation.ablate(quickstart, 7, WINNER, found, measure, "maximize", rounds=3)
    steps = {s.param: s for s in a.steps}
    cb = steps["continuous_batching"].contribution
    assert cb is not None and cb.significant and cb.ci95_pct[0] < 225 < cb.ci95_pct[1]
    dtype = steps["dtype"].contribution
    assert dtype is not None and not dtype.significant  # no change, no claim
    assert steps["cb_max_batch_tokens"].contribution is None
    assert steps["cb_max_batch_tokens"].failed.startswith("failed in round 1: crashed")
    # Interleaved in mirrored pairs: round 2 is round 1 backwards (the winner last), round 3
    # starts with the winner, the others rotated; a failed one is not launched again.
    calls = measure.calls
    first, second, third = ([k for k, r in calls if r == n] for n in (1, 2, 3))
    assert first[0] == ablation.WINNER and third[0] == ablation.WINNER
    assert second == [k for k in first[::-1] if k != "cb_max_batch_tokens"]
    assert third[1] != first[1]
    assert sum(1 for k, _ in calls if k == "cb_max_batch_tokens") == 1
    assert a.launches == len(calls) == 3 * 5 - 2 and len(a.winner_values) == 3


def test_a_revert_that_breaks_a_constraint_is_not_launched(tmp_path: Path) -> None:
    space = tmp_path / "s.yaml"
    space.write_text(
        """
engine: {name: sglang}
model: m
parameters:
  - {name: tp, type: int, low: 1, high: 8, flag: --tp}
  - {name: dp, type: int, low: 1, high: 8, flag: --dp}
constraints: ["tp * dp <= 8"]
baseline: {tp: 8, dp: 1}
"""
    )
    spec = load(space)
    found = ablation.changes(spec, {"tp": 2, "dp": 4}, {"tp": 8, "dp": 1})
    measure = _fake({ablation.WINNER: 100.0, "tp": 50.0, "dp": 50.0})
    a = ablation.ablate(spec, 3, {"tp": 2, "dp": 4}, found, measure, "maximize", rounds=2)
    steps = {s.param: s for s in a.steps}
    assert steps["tp"].failed.startswith("breaks constraint tp * dp <= 8")  # tp 8, dp 4
    assert all(k != "tp" for k, _ in measure.calls)
    assert steps["dp"].contribution is not None


def test_skipped_says_why_in_one_line() -> None:
    a = ablation.skipped("the baseline is the answer", 0)
    assert a.skipped == "not run: the baseline is the answer" and a.steps == []
    assert "\n" not in a.skipped


@pytest.mark.slow  # two whole studies on toy servers (~20 launches); the units above are fast
def test_the_driver_ablates_the_winner_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real driver on the toy server: the winner (backend b, x 1.0, y 5: 220 tok/s) over
    the baseline (a, 0.1, 1: 102); each change reverted alone and relaunched interleaved."""
    from tests.study.study_helpers import make_driver, toy_space

    from autotune.core.records import budget_launches
    from autotune.study.ledger import Ledger

    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))
    params = [
        {"name": "backend", "type": "categorical", "choices": ["a", "b"], "flag": "--backend"},
        {"name": "x", "type": "float", "low": 0.1, "high": 1.0, "step": 0.1, "flag": "--x"},
        {"name": "y", "type": "int", "low": 1, "high": 5, "flag": "--y"},
    ]
    winner = {"backend": "b", "x": 1.0, "y": 5}
    space = toy_space(
        tmp_path / "toy.yaml", parameters=params, baseline={"backend": "a", "x": 0.1, "y": 1}
    )

    def drive(**options: Any) -> Ledger:
        driver = make_driver(
            space,
            tmp_path / options.pop("where"),
            n_trials=2,
            seed=0,
            sampler="random",
            baseline_launches=2,
            confirm=1,
            confirm_rounds=(2, 2),
            **options,
        )
        driver.study.enqueue_trial(winner)
        try:
            driver.run()
        finally:
            driver.executor.shutdown()
        return Ledger(driver.study)

    ledger = drive(where="a", ablation_rounds=2, ablation_launches=8)
    trials = ledger.trials()
    launched = [t for t in trials if t.ablation_round is not None]
    assert len(launched) == 2 * (3 + 1) and budget_launches(trials) == 2
    assert [t.ablation_key for t in launched if t.ablation_round == 1][0] == "winner"
    a = ledger.summary().ablation
    assert a is not None and not a.skipped and a.winner is not None
    steps = {s.param: s for s in a.steps}
    assert set(steps) == {"backend", "x", "y"}
    x = steps["x"].contribution  # 220 against 121: the winner is ~80% faster with x at 1.0
    assert x is not None and x.significant, a
    assert steps["x"].config == {"backend": "b", "x": 0.1, "y": 5}

    # The same study with a budget too small: nothing is launched, one line says why.
    small = drive(where="b", ablation_rounds=2, ablation_launches=7)
    assert not [t for t in small.trials() if t.ablation_round is not None]
    line = small.summary().ablation
    assert line is not None and line.skipped.startswith("not run: 3 change(s) x 2 rounds")


@pytest.mark.slow  # a whole study on toy servers, then a launch of its ablation cut short
def test_ctrl_c_during_the_ablation_stops_it_at_once_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.study.study_helpers import make_driver, toy_space

    from autotune.models import Outcome
    from autotune.study.events import Event, EventKind
    from autotune.study.ledger import Ledger

    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))
    params = [
        {"name": "x", "type": "float", "low": 0.1, "high": 1.0, "step": 0.1, "flag": "--x"},
        {"name": "y", "type": "int", "low": 1, "high": 5, "flag": "--y"},
    ]
    space = toy_space(tmp_path / "toy.yaml", parameters=params, baseline={"x": 0.1, "y": 1})
    driver = make_driver(
        space,
        tmp_path / "study",
        n_trials=2,
        seed=0,
        sampler="random",
        baseline_launches=1,
        confirm=1,
        confirm_rounds=(2, 2),
        ablation_rounds=2,
        ablation_launches=8,
    )
    driver.study.enqueue_trial({"x": 1.0, "y": 5})

    def on_event(event: Event) -> None:  # Ctrl-C while the first ablation launch runs
        if event.kind is EventKind.LAUNCH and event.message.startswith("ablation"):
            driver.interrupt()

    driver.on_event = on_event
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    ledger = Ledger(driver.study)
    trials = ledger.trials()
    cut = [t for t in trials if t.ablation_round is not None]
    assert [t.outcome for t in cut] == [Outcome.INTERRUPTED]  # one launch, not the rounds
    assert not [t for t in trials if t.state == "WAITING"]  # nor queued for the search
    assert ledger.confirmation() is not None  # the answer stands
    a = ledger.summary().ablation
    assert a is not None and a.skipped == "not run: cut short by Ctrl-C"
