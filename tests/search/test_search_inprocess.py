"""The in-process executor the search's tests and benchmark run the real driver with."""

from __future__ import annotations

from tests.search.inprocess import InProcessExecutor
from tests.search.landscapes import Point, crash, ok

from autotune.models import Outcome, TrialSpec


def spec(n: int) -> TrialSpec:
    return TrialSpec(
        study="s", number=n, engine="command", params={"n": n}, argv=["s"], log_dir="l"
    )


def test_windows_go_to_the_pruner_and_a_stopped_launch_comes_back_pruned() -> None:
    seen: list[int] = []

    def stop_first(index: int, flat: dict[str, float]) -> bool:
        seen.append(index)
        return True

    pruning = InProcessExecutor(lambda ts: ok(100.0), seed=0, windows=3)
    result = pruning.submit(spec(1), on_window=stop_first).result()
    assert result.outcome is Outcome.PRUNED and len(result.windows) == 1 and seen == [0]
    assert pruning.launches[0].value is None and not pruning.launches[0].crashed
    plain = InProcessExecutor(lambda ts: ok(100.0), seed=0)  # no windows: nothing to prune on
    assert plain.submit(spec(1), on_window=stop_first).result().outcome is Outcome.OK
    assert seen == [0]


def test_several_launches_run_at_once_and_the_clock_counts_a_study_s_wall_time() -> None:
    def answer(ts: TrialSpec) -> Point:
        return ok(100.0) if ts.number == 0 else crash("invalid_argument", "launch", "bad flag")

    executor = InProcessExecutor(answer, seed=0, parallel=2)
    assert executor.capacity() == 2
    slow, quick = executor.submit(spec(0)), executor.submit(spec(1))
    assert quick.result().outcome is Outcome.CRASHED
    assert not slow.done()  # still in flight
    assert slow.result().outcome is Outcome.OK
    executor.shutdown()
    assert executor.numbers == [1, 0]  # the crash at launch came back first
    # both started at 0: the wall time is the longer launch, not the sum
    assert executor.clock == max(la.seconds for la in executor.launches)
    serial = InProcessExecutor(answer, seed=0)
    serial.submit(spec(0)).result()
    serial.submit(spec(1)).result()
    assert serial.clock == sum(la.seconds for la in serial.launches)
