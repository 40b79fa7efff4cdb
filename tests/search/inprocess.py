"""The real study driver over a landscape, in this process: what the search's tests and the
search benchmark (``bench/search``) run.

``InProcessExecutor`` answers each ``TrialSpec`` from a landscape's function instead of
starting a server; ``run_study`` runs the real ``study.Driver`` (Optuna study over in-memory
storage, ``space.suggest``, dead ends, steering, relaunches, the baseline first and
confirmation rounds at the end) with it, and returns the launches in order.
"""

from __future__ import annotations

import math
import random
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from tests.search.landscapes import Landscape, Point

from autotune.dispatch.base import WindowHook
from autotune.models import Cause, Failure, Metrics, Outcome, Phase, TrialResult, TrialSpec

WINDOW_NOISE = 0.02  # spread (log) of a window's reading around its launch's value


@dataclass(frozen=True)
class Launch:
    """One launched configuration and what it did."""

    config: dict[str, Any]
    value: float | None  # measured
    truth: float | None
    crashed: bool
    seconds: float
    # search: a launch of the search (counts against the budget); extra: the baseline's extra
    # launches and confirmation rounds (on top of it); answer: not a launch, the configuration
    # the study reports as its winner at the end (autotune's driver only).
    kind: str = "search"
    # the kind of proposal (the study's ``proposed_by``), or baseline, relaunch, confirm, or
    # sampler (another sampler's own proposal); "" for the competitors' loops
    source: str = ""
    number: int = -1  # the trial's number (-1: not a trial of the study)
    end: float = 0.0  # when it ended, in server-seconds since the study started (its workers')


class InProcessExecutor:
    """An executor whose trials are answered by a function, in this process: at once, or with
    ``parallel`` > 1 on that many threads, each answer after a pause in proportion to the
    launch's start-up and measuring seconds (1/2000 of them, longer than the driver takes to
    ask), so that several trials are in flight together and the quicker ones (a crash at
    load) come back first, as on nodes."""

    def __init__(
        self,
        evaluate: Callable[[TrialSpec], Point],
        seed: int,
        windows: int = 0,
        parallel: int = 1,
        window_noise: float = WINDOW_NOISE,
    ) -> None:
        self.evaluate = evaluate
        self.parallel = parallel
        self._pool = ThreadPoolExecutor(parallel) if parallel > 1 else None
        self._lock = threading.Lock()
        self.launches: list[Launch] = []
        self.numbers: list[int] = []  # the trial number of each launch
        # windows > 0: a launch that runs is measured in that many windows (``window_noise``
        # around its value), each handed to the driver's pruner as a node would; 0: one
        # value, no windows, nothing to prune on.
        self.windows = windows
        self.window_noise = window_noise
        self.rng = random.Random(seed * 31 + 7)
        self._pauses = random.Random(seed)
        # The study's clock in server-seconds: a launch starts when it is submitted (a worker
        # is free then: the driver submits no more than there are) and ends its seconds later;
        # the clock is the latest end handed back. Its last value is the study's wall time.
        self.clock = 0.0

    def capacity(self) -> int:
        return self.parallel

    def submit(self, spec: TrialSpec, on_window: WindowHook | None = None) -> Future[TrialResult]:
        point = self.evaluate(spec)
        with self._lock:
            start = self.clock
        if self._pool is None:
            fut: Future[TrialResult] = Future()
            fut.set_result(self._answer(spec, point, on_window, start))
            return fut
        pause = point.seconds / 2000 * self._pauses.uniform(0.8, 1.25)

        def later() -> TrialResult:
            time.sleep(pause)
            return self._answer(spec, point, on_window, start)

        return self._pool.submit(later)

    def _answer(
        self, spec: TrialSpec, point: Point, on_window: WindowHook | None, start: float = 0.0
    ) -> TrialResult:
        """Record the launch and what the node would return (under the lock: the pool's
        threads share the records and the window noise)."""
        with self._lock:
            self.numbers.append(spec.number)
            if point.value is not None and on_window is not None and self.windows:
                seen: list[dict[str, float]] = []
                for i in range(self.windows):
                    value = point.value * math.exp(self.rng.gauss(0.0, self.window_noise))
                    seen.append({"output_tok_s": value, "duration_s": 60.0})
                    if on_window(i, seen[-1]) and i + 1 < self.windows:  # stopped by the pruner
                        spent = point.seconds * (i + 1) / self.windows
                        self.clock = max(self.clock, start + spent)
                        self.launches.append(
                            Launch(
                                dict(spec.params),
                                None,
                                point.truth,
                                False,
                                spent,
                                end=start + spent,
                            )
                        )
                        mean = sum(w["output_tok_s"] for w in seen) / len(seen)
                        return TrialResult(
                            study=spec.study,
                            number=spec.number,
                            outcome=Outcome.PRUNED,
                            metrics=Metrics(output_tok_s=mean, completed=1),
                            windows=seen,
                            simulated=True,
                        )
            self.clock = max(self.clock, start + point.seconds)
            self.launches.append(
                Launch(
                    dict(spec.params),
                    point.value,
                    point.truth,
                    point.value is None,
                    point.seconds,
                    end=start + point.seconds,
                )
            )
            return to_result(spec, point)

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def reap_orphans(self, log_dir: str) -> None:  # no servers: nothing to reap
        pass


def to_result(spec: TrialSpec, point: Point) -> TrialResult:
    """What the node would have returned for this launch."""
    if point.value is not None:
        return TrialResult(
            study=spec.study,
            number=spec.number,
            outcome=Outcome.OK,
            metrics=Metrics(output_tok_s=point.value, completed=1),
            simulated=True,
        )
    timeout = point.cause == Cause.STARTUP_TIMEOUT
    failure = Failure(
        cause=Cause(point.cause),
        phase=Phase(point.phase),
        evidence=[point.message],
        message=point.message,
    )
    return TrialResult(
        study=spec.study,
        number=spec.number,
        outcome=Outcome.TIMEOUT if timeout else Outcome.CRASHED,
        failure=failure,
        simulated=True,
    )


def in_process_driver(spec: Any, executor: InProcessExecutor, options: Any) -> Any:
    """The real ``study.Driver`` over ``spec`` whose launches ``executor`` answers, with no
    tracker (``options``: its DriverOptions)."""
    from autotune.engines import get_engine
    from autotune.study.driver import Driver
    from autotune.tracking.none import NullTracker

    engine = get_engine(spec.engine)
    return Driver(
        spec,
        engine=engine,
        real_engine=engine,
        executor=executor,
        tracker=NullTracker(),
        options=options,
    )


def run_study(
    land: Landscape,
    seed: int,
    trials: int,
    *,
    windows: int = 0,
    parallel: int = 1,
    window_noise: float = WINDOW_NOISE,
    **defaults: Any,
) -> tuple[list[Launch], Any]:
    """autotune's real driver on ``land`` (``defaults``: DriverOptions fields to change): its
    launches, each tagged, then the study's answer; and the driver."""
    from autotune.space.load import load_text
    from autotune.study.driver import DriverOptions
    from autotune.study.ledger import Ledger

    spec = load_text(yaml.safe_dump(land.space(trials), sort_keys=False), f"<{land.name}>")
    rng = random.Random(seed * 7919 + 1)
    executor = InProcessExecutor(
        lambda ts: land.evaluate(dict(ts.params), rng), seed, windows, parallel, window_noise
    )
    with tempfile.TemporaryDirectory(prefix="autotune-search-") as tmp:
        options = DriverOptions(
            study=f"{land.name}-{seed}",
            study_dir=Path(tmp),
            storage=":memory:",
            seed=seed,
            **defaults,
        )
        driver = in_process_driver(spec, executor, options)
        try:
            driver.run()
        finally:
            executor.shutdown()
        return tagged(executor, Ledger(driver.study), land, rng), driver


def tagged(
    executor: InProcessExecutor, ledger: Any, land: Landscape, rng: random.Random
) -> list[Launch]:
    """The executor's launches tagged search or extra, then the study's answer."""
    records = {t.number: t for t in ledger.trials()}
    out: list[Launch] = []
    baselines = 0
    for number, la in zip(executor.numbers, executor.launches, strict=True):
        t = records[number]
        extra = t.confirm_round is not None or (t.baseline and baselines > 0)
        baselines += t.baseline and t.confirm_round is None
        source = (
            "confirm"
            if t.confirm_round is not None
            else "baseline"
            if t.baseline
            else t.proposed_by or ("relaunch" if t.repeat_of is not None else "sampler")
        )
        out.append(replace(la, kind="extra" if extra else "search", source=source, number=number))
    best = ledger.best()
    if best is not None:
        truth = land.evaluate(dict(best.config), rng).truth
        out.append(Launch(dict(best.config), best.value, truth, False, 0.0, kind="answer"))
    return out
