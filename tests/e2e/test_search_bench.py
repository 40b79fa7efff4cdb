"""The search benchmark runs end to end in its CI size and prints its tables.

``python -m bench.search --quick``: 3 landscapes x 2 seeds x 30 launches through the real
driver with the in-process executor (docs/benchmarks.md has the full figures).
"""

from __future__ import annotations

import pytest
from bench.search.__main__ import main

pytestmark = pytest.mark.slow


def test_quick_run_prints_both_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "Landscapes the defaults were chosen on" in out
    assert "Held-out landscapes" in out
    for name in ("box", "catnum", "five"):
        assert f"| {name} | autotune |" in out
        assert f"| {name} | random |" in out


def test_the_in_process_executor_hands_windows_to_the_pruner() -> None:
    """With ``--prune`` each launch that runs is measured in windows the driver's pruner sees,
    as a node's are; one the pruner stops comes back pruned with the windows it measured."""
    from bench.search.harness import InProcessExecutor
    from bench.search.landscapes import ok

    from autotune.models import Outcome, TrialSpec

    spec = TrialSpec(
        study="s", number=1, engine="command", params={"x": 1}, argv=["server"], log_dir="logs"
    )
    seen: list[int] = []

    def stop_first(index: int, flat: dict[str, float]) -> bool:
        seen.append(index)
        return True

    pruning = InProcessExecutor(lambda ts: ok(100.0), seed=0, windows=3)
    result = pruning.submit(spec, on_window=stop_first).result()
    assert result.outcome is Outcome.PRUNED and len(result.windows) == 1 and seen == [0]
    assert pruning.launches[0].value is None and not pruning.launches[0].crashed
    plain = InProcessExecutor(lambda ts: ok(100.0), seed=0)  # the published figures: no windows
    assert plain.submit(spec, on_window=stop_first).result().outcome is Outcome.OK
    assert seen == [0]


def test_generated_landscapes_are_the_same_every_time_and_spare_the_baseline() -> None:
    """``generated(i)`` is a pure function of ``i``; its baseline serves, its optimum is at
    least the baseline's value, indices from 1000 are held out, and across the family every
    crash-region shape and numeric scale occurs."""
    import random

    from bench.search.generated import HELD_OUT_FROM, generated

    kinds: set[str] = set()
    for i in range(12):
        a, b = generated(i), generated(i)
        assert a.parameters == b.parameters and a.baseline == b.baseline
        assert a._optimum == b._optimum
        base = a.evaluate(dict(a.baseline), random.Random(0))
        assert base.truth is not None, f"gen{i}: the baseline crashes"
        assert (a._optimum or 0.0) >= base.truth
        assert not a.held_out
        probe = random.Random(i)
        for _ in range(200):  # crashes name a cause and a log line
            config = {
                p["name"]: probe.choice(p["choices"])
                if p["type"] == "categorical"
                else probe.random() < 0.5
                if p["type"] == "bool"
                else probe.choice([p["low"], p["high"]])
                for p in a.parameters
            }
            point = a.evaluate(config, probe)
            if point.truth is None:
                assert point.cause and point.message
                kinds.add(point.cause)
    assert len(kinds) >= 4
    assert generated(HELD_OUT_FROM).held_out


def test_generated_runs_pool_every_landscape_and_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--generated", "0:2", "--seeds", "1", "--trials", "12"]) == 0
    out = capsys.readouterr().out
    assert "Generated landscapes 0:2" in out
    assert "| autotune |" in out and "| random |" in out


def test_the_crash_model_learns_that_a_pruned_launch_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A launch the pruner stopped after its first window still started and served: the
    crash model counts it among the configurations that ran (as a resumed study does), or
    its explanations of a crash lean on values that in truth ran fine."""
    from bench.search import harness
    from bench.search.landscapes import by_name

    from autotune.models import Outcome
    from autotune.study.driver import Driver

    seen: list[Outcome] = []
    observe = Driver._observe

    def spy(self: Driver, t: object) -> None:
        seen.append(t.outcome)  # type: ignore[attr-defined]
        observe(self, t)  # type: ignore[arg-type]

    monkeypatch.setattr(Driver, "_observe", spy)
    monkeypatch.setattr(harness, "WINDOWS", 3)
    launches = harness.run_driver(by_name("box"), 0, 20)
    assert Outcome.PRUNED in seen
    search = [la for la in launches if la.kind == "search"]
    assert len(seen) >= len(search), (len(seen), len(search))
