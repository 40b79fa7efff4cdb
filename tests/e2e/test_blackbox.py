"""Real studies against a black-box server the search defaults were never tuned on.

``tests/study/servers/blackbox.py`` is launched by the ``command`` engine for every trial (5
settings as flags and environment variables, 3 crash regions with real-looking errors).
``bench/search_blackbox.py`` runs 5 seeds x 30 launches of the same (docs/benchmarks.md);
this test runs one small study and checks what must hold whatever the seed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bench.search_blackbox import BASELINE, space_file, truth
from bench.steering import make_driver

from autotune.core.records import budget_launches
from autotune.study.ledger import Ledger

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def test_a_small_study_improves_on_the_baseline_and_names_its_crashes(tmp_path: Path) -> None:
    driver = make_driver(space_file(tmp_path / "space.yaml", 14), tmp_path / "s", seed=0)
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    trials = driver.study.get_trials(deepcopy=False)
    launched = [t for t in trials if t.user_attrs.get("outcome") in ("ok", "crashed")]
    # The search's 14 launches, the baseline once; its extra launches and confirmation on top.
    assert budget_launches(Ledger(driver.study).trials()) == 14
    base = next(t for t in trials if t.user_attrs.get("baseline"))
    assert base.user_attrs["config"] == BASELINE and base.user_attrs["outcome"] == "ok"
    best = driver.study.best_trial
    assert truth(best.user_attrs["config"]) > 1.5 * truth(BASELINE)  # type: ignore[operator]
    for t in launched:
        if t.user_attrs["outcome"] == "crashed":  # only the crash regions crash
            assert truth(t.user_attrs["config"]) is None
            # The OOM and the graph capture are recognised by the common rules; the launch
            # error has no rule for a custom command (unknown), which the crash-region model
            # learns from all the same.
            assert t.user_attrs["cause"] in ("cuda_oom", "cuda_graph_capture", "unknown")
            assert t.user_attrs["evidence"] or t.user_attrs["message"]


def test_a_baseline_with_a_bad_flag_stops_the_study_after_one_launch(tmp_path: Path) -> None:
    path = space_file(tmp_path / "space.yaml", 10)
    space = yaml.safe_load(path.read_text())
    space["fixed"] = {"args": ["--max-batchh", "8"]}  # misspelled: argparse refuses it
    path.write_text(yaml.safe_dump(space))
    events = []
    driver = make_driver(path, tmp_path / "s", seed=0)
    driver.on_event = events.append
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    launched = [e for e in events if e.kind == "launch"]
    stop = next(e for e in events if e.kind == "stop")
    assert len(launched) == 1
    assert stop.message.startswith("the baseline failed with invalid_argument")
    assert "--max-batchh" in stop.message and "\n" not in stop.message


def test_in_process_runs_start_at_the_first_seed() -> None:
    """``--first-seed`` shifts in-process runs as it does real ones: seeds 1-2 from 1 are
    seeds 1-2 of a run from 0 (each study is seeded by its seed alone)."""
    from bench.search_blackbox import in_process

    from_zero = in_process(3, 12, "random", "blackbox6")
    assert in_process(2, 12, "random", "blackbox6", first=1) == from_zero[1:]
