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
