"""The driver's loop through its events, on the real driver and the toy server."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from tests.study.study_helpers import make_driver, toy_space

from autotune.core.records import SkipKind
from autotune.models import Outcome
from autotune.study.events import Event, EventKind
from autotune.study.ledger import Ledger


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def test_a_constraint_skip_is_its_own_kind_and_the_loop_reports_each_step(
    tmp_path: Path,
) -> None:
    space = toy_space(tmp_path / "toy.yaml", trials=1, constraints=["y <= 4"])
    driver = make_driver(space, tmp_path / "study", n_trials=1, seed=0)
    events: list[Event] = []
    driver.on_event = events.append
    driver.study.enqueue_trial({"backend": "a", "x": 0.5, "y": 8})  # breaks y <= 4
    driver.study.enqueue_trial({"backend": "a", "x": 0.5, "y": 2})  # launched, serves
    try:
        driver.run()
    finally:
        driver.executor.shutdown()

    # PHASE events (where the running trial is) come between its LAUNCH and its RESULT.
    phases = [e.message for e in events if e.kind is EventKind.PHASE]
    assert all(e.number == 1 for e in events if e.kind is EventKind.PHASE), phases
    events = [e for e in events if e.kind is not EventKind.PHASE]
    assert [e.kind for e in events] == [
        EventKind.START,
        EventKind.SKIP,
        EventKind.LAUNCH,
        EventKind.RESULT,
        EventKind.VERDICT,
        EventKind.STOP,
    ]
    skip = events[1].skip
    assert skip is not None and skip.kind is SkipKind.CONSTRAINT and "y <= 4" in skip.reason
    assert events[3].outcome is Outcome.OK and events[3].value is not None
    assert events[5].launched == 1 and events[5].message == "budget reached"
    assert events[5].best == events[3].value

    first, second = Ledger(driver.study).trials()
    assert first.skip is not None and first.skip.kind is SkipKind.CONSTRAINT
    assert first.cause == "constraint" and not first.launched
    assert second.outcome is Outcome.OK and second.launched and second.argv


def test_resume_runs_a_dead_drivers_trial_again_once(tmp_path: Path) -> None:
    space = toy_space(tmp_path / "toy.yaml", trials=2)
    first = make_driver(space, tmp_path / "study", n_trials=1, seed=0)
    first.study.enqueue_trial({"backend": "a", "x": 0.5, "y": 2})
    try:
        first.run()
    finally:
        first.executor.shutdown()
    # A driver that died mid-trial: asked, never told (RUNNING in storage).
    first.study.enqueue_trial({"backend": "b", "x": 0.1, "y": 1})
    with warnings.catch_warnings():  # asked by hand, as the driver does: no heartbeat thread
        warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
        lost = first.study.ask()

    again = make_driver(space, tmp_path / "study", n_trials=2, seed=0)
    events: list[Event] = []
    again.on_event = events.append
    try:
        again.run()
    finally:
        again.executor.shutdown()

    start = events[0]
    assert start.kind is EventKind.START and start.launched == 1
    assert start.message == "1 interrupted trial(s) queued again"
    trials = Ledger(again.study).trials()
    assert trials[lost.number].outcome is Outcome.INTERRUPTED
    (retry,) = [t for t in trials if t.retry_of == lost.number]
    assert retry.launched and retry.config == {"backend": "b", "x": 0.1, "y": 1}
    assert sum(t.launched for t in trials) == 2


def test_the_search_s_sampler_is_told_what_may_be_proposed_and_weighs_crashes_unless_off(
    tmp_path: Path,
) -> None:
    """The default sampler is the search's: it asks the driver which configurations may be
    proposed at all (constraints, dead ends, the crash budget), and with --no-steer it does
    not weigh crashes."""
    from autotune.search import Sampler
    from autotune.search.sampler import RISK

    space = toy_space(tmp_path / "toy.yaml", trials=1)
    steered = make_driver(space, tmp_path / "a", n_trials=1, seed=0)
    off = make_driver(space, tmp_path / "b", n_trials=1, seed=0, steer=False)
    try:
        sampler = steered.study.sampler
        assert isinstance(sampler, Sampler)
        assert sampler.feasible == steered._feasible
        assert sampler._risk == RISK > 0
        unsteered = off.study.sampler
        assert isinstance(unsteered, Sampler) and unsteered._risk == 0.0
    finally:
        steered.executor.shutdown()
        off.executor.shutdown()
