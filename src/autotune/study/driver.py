"""The study driver: propose a configuration, launch it, collect its result, decide to stop.

The driver owns the Optuna study and decides everything: what to launch next, what to skip,
when to stop. The loop reads like Optuna's ``_optimize`` -> ``_run_trial``: ``_optimize``
runs small named steps (``_propose``, ``_screen``, ``_launch``, ``_collect``, ``_stop``);
what a result means for the sampler is told in ``tell.py``; everything kept in storage is
written and read through ``ledger.py``. The driver never parses a server log (the node
classifies) and never renders anything (the CLI subscribes to its events).
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from autotune.core.records import (
    CRASHES,
    LAUNCHED,
    SkipKind,
    SkipLog,
    SkipRecord,
    StudyInfo,
    StudyRecord,
    TrialLog,
    TrialRecord,
    budget_launches,
)
from autotune.core.redact import redact_argv, redact_env
from autotune.core.summary import Ablation, StudySummary
from autotune.dispatch.base import Executor, WindowHook
from autotune.engines.base import Engine
from autotune.errors import StudyError
from autotune.models import (
    BOUNDED_RATES,
    Limits,
    Outcome,
    Rule,
    TrialResult,
    TrialSpec,
    Workload,
)
from autotune.search import CrashModel, adapter, read
from autotune.search.space import encode
from autotune.space import scenarios
from autotune.space.expr import compiled
from autotune.space.render import render, violations
from autotune.space.schema import StudySpec, config_key
from autotune.space.suggest import suggest
from autotune.study import ablation, evidence
from autotune.study.confirm import BASELINE as CONFIRM_BASELINE
from autotune.study.confirm import (
    Candidate,
    Confirmation,
    ConfirmOptions,
    Progress,
    Sample,
    confirm,
)
from autotune.study.deadends import DeadEnds, Doom
from autotune.study.events import Event, EventKind
from autotune.study.ledger import Ledger
from autotune.study.noise import LEVEL, better, gain
from autotune.study.outcome import CRASH
from autotune.study.pareto import front
from autotune.study.prune import IncumbentPruner, margin_for
from autotune.study.storage import make_sampler, open_storage, storage_url, study_lock
from autotune.study.tell import Told, tell_repeat, tell_result, tell_skip
from autotune.tracking.base import Tracker

_logger = logging.getLogger(__name__)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(max(0.0, seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


# Proposals in a row that are skipped (dead ends, repeats, constraints) before the space is
# taken as exhausted: a small discrete space runs out of new configurations.
MAX_SKIPS_IN_A_ROW = 200
EXHAUSTED = "no launchable configuration left in the space"
PREDICTED = "predicted crash"  # a predicted crash's reason starts with this
# once the crash budget is spent, a proposal this likely to crash is not launched
CRASH_CAP = 0.4


@dataclass(frozen=True)
class _Relaunch:
    """One launch of a confirmation or an ablation round: what it launches, its label, and
    what the ledger keeps on its trial (its round and key)."""

    config: dict[str, Any]
    label: str
    round_no: int
    baseline: bool
    marks: dict[str, Any]


INTERRUPT_POLL_S = 0.2  # how often a confirmation launch's wait looks for Ctrl-C


class _Interrupted(Exception):
    """Ctrl-C during the confirmation or ablation rounds: they stop, nothing is concluded."""


class _OutOfTime(_Interrupted):
    """The time limit leaves no room for another relaunch: the rounds stop where they are."""


@dataclass
class DriverOptions:
    """How to run a study (everything the CLI's ``start`` takes)."""

    study: str
    study_dir: Path
    storage: str | None = None  # default: sqlite in study_dir
    n_trials: int | None = None
    parallel: int | None = None
    simulate: bool = False
    seed: int | None = None
    sampler: str = "search"  # search | tpe | random (study/storage.make_sampler)
    max_infra_retries: int = 2
    heartbeat_s: float = 30.0
    # Crash steering (autotune.search): proposals weigh the crash regions the study has
    # learned, and one every explanation of a crash covers is not launched; False: neither.
    steer: bool = True
    # Noise (study/noise.py): the baseline's launches at the start (launch-to-launch spread;
    # all but the first on top of the budget, records.budget_launches), and how often one
    # configuration may be launched when the sampler proposes it again (each a new sample);
    # past that, the median of its launches is reused.
    baseline_launches: int = 3
    max_launches_per_config: int = 3
    # Confirmation (study/confirm.py): the top ``confirm`` candidates and the baseline are
    # relaunched interleaved at the end (on top of the budget); 0 turns it off.
    confirm: int = 3
    confirm_rounds: tuple[int, int] = (3, 5)  # (min, max) rounds
    # Ablation (study/ablation.py): each change of the winner reverted, relaunched in this
    # many rounds interleaved with the winner (on top of the budget); 0 turns it off. It runs
    # only within ``ablation_launches`` launches (None: as many as the search's budget).
    ablation_rounds: int = 0
    ablation_launches: int | None = None
    # Early stopping on per-window intermediate values (study/prune.py).
    prune: bool = True


@dataclass
class _Loop:
    """The state of one run of the loop (what Optuna's ``_optimize`` keeps in locals)."""

    target: int  # launched trials the study should hold
    launched: int  # launches counted against the budget so far (records.budget_launches)
    inflight: dict[Future[TrialResult], tuple[optuna.Trial, dict[str, Any]]] = field(
        default_factory=dict
    )
    skips: int = 0  # proposals in a row that were not launched
    crash_streak: int = 0
    stopping: bool = False
    stop_reason: str = "budget reached"
    last_beat: float = field(default_factory=time.monotonic)
    phases: dict[int, str] = field(default_factory=dict)  # trial number -> last phase seen


class Driver:
    """Runs one study to its budget.

    Args:
        spec: the validated space.
        engine: the engine that launches trials (the stand-in server when simulating).
        real_engine: the engine whose command is stored and exported (same as ``engine`` unless
            simulating).
        executor: where trials run.
        tracker: where results are recorded.
        options: study name, folder, budget, parallelism.
        on_event: called for every event (progress display); must not raise.
    """

    def __init__(
        self,
        spec: StudySpec,
        *,
        engine: Engine,
        real_engine: Engine,
        executor: Executor,
        tracker: Tracker,
        options: DriverOptions,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.spec = spec
        self.engine = engine
        self.real_engine = real_engine
        self.executor = executor
        self.tracker = tracker
        self.options = options
        self.on_event = on_event or (lambda e: None)
        self.parallel = max(1, min(options.parallel or executor.capacity(), executor.capacity()))
        self.options.study_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.options.study_dir / "logs"
        self.log_dir.mkdir(exist_ok=True)
        self.storage = open_storage(storage_url(options.storage, options.study_dir))
        # What the pruner compares a running trial with (refreshed after every result).
        self._incumbent: float | None = None
        self._launch_cv: float | None = None
        self._baseline_median: float | None = None
        self._trial_s: float | None = None  # the median launch's length, for the time limit
        self._deadline: float | None = None  # time.monotonic() of the time limit, if any
        self.study = self._open_study()
        self.ledger = Ledger(self.study)
        self.deadends = DeadEnds(spec, self.ledger.dead_ends())
        self._crashes: tuple[tuple[int, int], CrashModel, Any] | None = None
        self.doom = Doom()  # a study that cannot succeed stops at once, saying why
        self.model_path = engine.prepare(spec.model)
        self.rules = [Rule(**r.model_dump()) for r in spec.rules] + engine.failure_rules()
        self.flags = engine.message_flags()  # for hints: the same for every trial
        self.interrupted = False  # set by interrupt() (Ctrl-C), from a signal handler

    def interrupt(self) -> None:
        """Stop now (Ctrl-C): launch nothing more, tear the running trials down and record
        them as interrupted; ``run`` then returns. Safe to call from a signal handler."""
        self.interrupted = True

    # -- study ------------------------------------------------------------------------------

    def _open_study(self) -> optuna.Study:
        o = self.options
        objective = self.spec.objective
        sampler = make_sampler(
            o.sampler, o.seed, self.parallel, len(objective.objectives), self._feasible, o.steer
        )
        pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
        if o.prune and not objective.multi:  # Optuna prunes single-objective trials only
            pruner = IncumbentPruner(
                lambda: self._incumbent,
                self.spec.objective.direction,
                lambda: margin_for(self._launch_cv),
            )
        try:
            study = optuna.load_study(
                study_name=o.study, storage=self.storage, sampler=sampler, pruner=pruner
            )
        except KeyError:  # a new study
            study = optuna.create_study(
                study_name=o.study,
                storage=self.storage,
                sampler=sampler,
                pruner=pruner,
                directions=[d.value for _, d in objective.objectives],
            )
            ledger = Ledger(study)
            ledger.write_study(
                StudyRecord(
                    name=o.study,
                    metric=self.spec.objective.metric,
                    direction=self.spec.objective.direction,
                    engine=self.real_engine.name,
                    space=self.spec.model_dump(mode="json"),
                    space_file=self.spec.source or "",
                    simulated=o.simulate,
                    objectives=[{"metric": m, "direction": d} for m, d in objective.objectives]
                    if objective.multi
                    else [],
                )
            )
            if self.spec.baseline is not None:
                # Several launches of the baseline: the study's launch-to-launch noise.
                for _ in range(max(1, o.baseline_launches)):
                    ledger.enqueue(self.spec.baseline, baseline=True)
            return study
        self._check_resume(Ledger(study).study_record())
        return study

    def _check_resume(self, stored: StudyRecord) -> None:
        new = self.spec.model_dump(mode="json")
        # What the objective means: a study made before scenarios has none of the last four,
        # and a space without them dumps them as null, so it still resumes.
        keys = ("engine", "model", "parameters", "constraints", "fixed", "objective")
        for key in (*keys, "scenarios", "sweep", "goodput", "combine"):
            if stored.space.get(key) != new.get(key):
                raise StudyError(
                    f"study {self.options.study!r} was made from a different space "
                    f"({key} differs); start a new study with --study NAME"
                )
        # What a launch is measured with (fields a newer version added keep their defaults).
        was, now = stored.space.get("workload") or {}, new.get("workload") or {}
        changed = [k for k in was if was[k] != now.get(k)]
        if changed:
            k = changed[0]
            raise StudyError(
                f"study {self.options.study!r} was measured with another workload (workload."
                f"{k}: {was[k]!r}, now {now.get(k)!r}); its figures would not compare: start a "
                "new study with --study NAME, or put the workload back"
            )
        if stored.simulated != self.options.simulate:
            kind = "simulated" if stored.simulated else "real"
            raise StudyError(
                f"study {self.options.study!r} holds {kind} trials; do not mix simulated and real "
                "trials in one study: use --study NAME for a new one"
            )

    def _reap(self) -> None:
        """Kill trial servers a dead driver or worker left, wherever trials run."""
        log_dir = str(self.log_dir.resolve())
        try:
            self.executor.reap_orphans(log_dir)
        except Exception:  # best effort: every trial re-checks its node before launch
            _logger.warning("reaping orphaned trial servers failed", exc_info=True)

    # -- configuration -> TrialSpec ---------------------------------------------------------

    def build_spec(self, number: int, config: dict[str, Any], attempt: int = 0) -> TrialSpec:
        """The ``TrialSpec`` that launches ``config`` as trial ``number``."""
        args, env = render(self.spec, config)
        argv, env = self.engine.command(self.model_path, args, env)
        workload = self._for_engine(self.spec.workload)
        plan = [
            s.model_copy(update={"workload": self._for_engine(s.workload)})
            for s in scenarios.plan(self.spec)
        ]
        if plan:  # the warm-up runs the first scenario's workload
            workload = plan[0].workload
        return TrialSpec(
            study=self.options.study,
            number=number,
            engine=self.engine.name,
            params=config,
            argv=argv,
            env=env,
            mode=self.engine.mode(),
            host=self.spec.engine.host,
            health_path=self.spec.engine.health_path or self.engine.health_path,
            workload=workload,
            limits=Limits(startup_s=self.spec.engine.startup_timeout_s),
            rules=self.rules,
            milestones=self.engine.milestones(),
            flags=self.flags,
            ready_pattern=self.engine.ready_pattern,
            gpus=self.engine.gpus(argv),
            log_dir=str(self.log_dir.resolve()),
            simulated=self.options.simulate,
            attempt=attempt,
            scenarios=plan,
            combine=scenarios.combine(self.spec),
        )

    def _for_engine(self, workload: Workload) -> Workload:
        """``workload`` with the engine's request model name when it names none, and the
        engine's request fields under the space's own ``extra_body``."""
        model = workload.model or self.engine.request_model(self.model_path)
        # /generate (SGLang's own) carries its sampling fields in the body autotune builds.
        fields = {} if workload.endpoint == "/generate" else self.engine.request_fields()
        extra_body = {**fields, **workload.extra_body}
        return workload.model_copy(update={"model": model, "extra_body": extra_body})

    def real_command(self, config: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
        """The command a person would run for ``config`` (the real engine even when simulating)."""
        args, env = render(self.spec, config)
        argv, full_env = self.real_engine.command(self.model_path, args, env)
        # The interpreter that runs autotune also has the engine (same image on every node).
        argv = [a.replace("{python}", sys.executable) for a in argv]
        return redact_argv(argv), redact_env(full_env)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        """Run the study until its budget is spent, its time is up or its space exhausted."""
        with study_lock(self.options.study_dir, self.options.study):
            self._optimize()

    def _optimize(self) -> None:
        loop = self._begin()
        while True:
            self._stop(loop)
            if self.interrupted:
                self._abort(loop)
                break
            while self._room(loop):
                self._propose(loop)
            if loop.skips >= MAX_SKIPS_IN_A_ROW:
                loop.stop_reason = EXHAUSTED
            if not loop.inflight:
                break
            self._collect(loop)
        self._end(loop)

    def _begin(self) -> _Loop:
        """Recover what a dead driver left, open the tracker, replay history: the loop's state."""
        o, spec = self.options, self.spec
        recovered = self.ledger.recover_interrupted()
        self._reap()
        run_id = self.tracker.start_study(
            StudyInfo(
                study=o.study,
                engine=self.real_engine.name,
                model=spec.model,
                metric=spec.objective.metric,
                direction=spec.objective.direction,
                simulated=o.simulate,
                space_file=spec.source,
                run_id=self.ledger.study_record().tracker_run,
                parallel=self.parallel,
                storage=storage_url(o.storage, o.study_dir),
                parameters=[p.name for p in spec.parameters],
                engine_version=spec.engine.version or "",
            )
        )
        if run_id:
            self.ledger.set_tracker_run(run_id)
        trials = self.ledger.trials()
        self._deadline = (time.monotonic() + limit) if (limit := spec.budget.time_limit_s) else None
        loop = _Loop(
            target=o.n_trials or spec.budget.trials,
            launched=budget_launches(trials),
        )
        self._refresh_incumbent(trials)
        message = f"{recovered} interrupted trial(s) queued again" if recovered else ""
        self._emit(loop, EventKind.START, trials=trials, message=message)
        return loop

    def _abort(self, loop: _Loop) -> None:
        """Record the running trials as interrupted (queued again for the resume), then tear
        them down: their late results are not told."""
        loop.stop_reason = "interrupted"
        if loop.inflight:
            self.ledger.recover_interrupted()
            for fut in loop.inflight:
                fut.cancel()
            loop.inflight.clear()
            self.executor.shutdown()

    def _stop(self, loop: _Loop) -> None:
        """Decide whether to stop launching (the trials in flight still finish)."""
        loop.stopping = False
        late = self._late()
        if late:
            loop.stopping, loop.stop_reason = True, late
        if loop.skips >= MAX_SKIPS_IN_A_ROW:
            loop.stopping, loop.stop_reason = True, EXHAUSTED
        streak = self.spec.budget.max_crash_streak
        if streak and loop.crash_streak >= streak:
            loop.stopping, loop.stop_reason = True, f"{loop.crash_streak} crashes in a row"
        if self.doom.reason:
            loop.stopping, loop.stop_reason = True, self.doom.reason

    def _room(self, loop: _Loop) -> bool:
        """Whether to propose another configuration now."""
        return (
            not loop.stopping
            and loop.skips < MAX_SKIPS_IN_A_ROW
            and len(loop.inflight) < self.parallel
            and loop.launched + len(loop.inflight) < loop.target
        )

    def _propose(self, loop: _Loop) -> None:
        """Ask Optuna for one configuration, then launch it or tell why not."""
        with warnings.catch_warnings():
            # Our heartbeats are recorded by hand (_heartbeat), not by Study.optimize.
            warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
            trial = self.study.ask()
        fixed = self.ledger.fixed_params(adapter.trial_id(trial))
        config = suggest(trial, self.spec, fixed=fixed)
        enqueued = fixed is not None  # the baseline or a recovered trial: asked for by name
        earlier = None if enqueued else self.ledger.measured(config)
        if earlier is not None:
            group = evidence.gather(self.ledger.trials(), self.spec.objective.metric).get(
                config_key(config)
            )
            launches = len(group.trials) + len(group.failures) if group else 1
            if launches >= self.options.max_launches_per_config or earlier.outcome != Outcome.OK:
                # Launched enough (small discrete spaces): reuse the median of its launches
                # instead of paying for another; the sampler sees the same result.
                loop.skips += 1
                median = group.median if group is not None else None
                others = [m for m, _ in self.spec.objective.objectives[1:]]
                repeat = tell_repeat(
                    self.study, self.ledger, trial, config, earlier, median, others
                )
                self._emit_skip(trial, config, repeat)
                return
            # Proposed again: a new launch adds a sample (one lucky launch must not stay the
            # best); bounded by max_launches_per_config, so an exhausted space still stops.
            self.ledger.mark_repeat(adapter.trial_id(trial), earlier.number)
            enqueued = True  # measured before: no need to ask the crash-risk model
        skip = self._screen(config, enqueued)
        if skip is not None:
            loop.skips += 1
            tell_skip(self.study, self.ledger, trial, config, skip)
            self._emit_skip(trial, config, skip)
            return
        loop.skips = 0
        # Only the sampler's proposals may be pruned: enqueued ones were asked for.
        self._launch(loop, trial, config, prunable=fixed is None)
        self.on_event(Event(EventKind.LAUNCH, trial.number, config))

    def _screen(self, config: dict[str, Any], enqueued: bool) -> SkipRecord | None:
        """Why ``config`` should not be launched, or None to launch it."""
        broken = violations(self.spec, config)
        if broken:
            return SkipRecord(kind=SkipKind.CONSTRAINT, reason=f"breaks constraint {broken[0]}")
        why = self.deadends.why(config)
        if why is not None:
            return SkipRecord(kind=SkipKind.DEAD_END, reason=why)
        if not enqueued and self.options.steer:  # enqueued ones were asked for by name
            why = self._predicted_crash(config)
            if why is not None:
                return SkipRecord(kind=SkipKind.PREDICTED_CRASH, reason=f"{PREDICTED}: {why}")
        return None

    def _feasible(self, config: Mapping[str, Any]) -> bool:
        """What the sampler may propose: no constraint broken, no value known to fail, and
        once the crash budget is spent, no even chance of crashing."""
        if violations(self.spec, dict(config)) or self.deadends.why(dict(config)) is not None:
            return False
        return not (self.options.steer and self._over_budget(config) is not None)

    def _crash_model(self) -> tuple[CrashModel, Any, int]:
        """The crash regions the study's trials show (rebuilt when a trial is added or
        finishes), the parameters it encodes, and the crashes launched."""
        trials = self.study.get_trials(deepcopy=False)
        stamp = (len(trials), sum(t.state.is_finished() for t in trials))
        if self._crashes is None or self._crashes[0] != stamp:
            h = read(self.study, trials)
            params = list(h.params.values())
            model = CrashModel(params, h.launches, h.failed)
            crashed = sum(s is not None for _, s in h.launches)
            self._crashes = (stamp, model, (params, crashed))
        _, model, (params, crashed) = self._crashes
        return model, params, crashed

    def _predicted_crash(self, config: Mapping[str, Any]) -> str | None:
        """Why the study's crashes say ``config`` will crash (None: they do not)."""
        model, params, _ = self._crash_model()
        x = encode(params, [config])
        for signature in model.regions:
            if model.within(x, signature)[0]:
                return (
                    f"meets every explanation of an earlier crash ({signature}); no "
                    "configuration that ran had it"
                )
        return self._over_budget(config)

    def _over_budget(self, config: Mapping[str, Any]) -> str | None:
        """Once ``budget.crash_budget`` of the trials crashed: why ``config`` is too likely to
        crash to launch (``CRASH_CAP`` or more)."""
        share = self.spec.budget.crash_budget
        if share <= 0:
            return None
        allowed = max(1, round(share * (self.options.n_trials or self.spec.budget.trials)))
        model, params, crashed = self._crash_model()
        if crashed < allowed:
            return None
        p = float(model.probability(encode(params, [config]))[0])
        if p < CRASH_CAP:
            return None
        return (
            f"a {p:.0%} chance of crashing after {crashed} crashes (crash budget {allowed}: "
            "budget.crash_budget in the space file)"
        )

    def _launch(
        self,
        loop: _Loop,
        trial: optuna.Trial,
        config: dict[str, Any],
        attempt: int = 0,
        avoid: list[str] | None = None,
        prunable: bool = False,
    ) -> None:
        ts = self.build_spec(trial.number, config, attempt=attempt)
        if avoid:
            ts = ts.model_copy(update={"avoid_nodes": avoid})
        prune = prunable and self.options.prune and not self.spec.objective.multi
        hook = self._window_hook(trial) if prune else None
        floor = self._floor() if prune else None
        if floor is not None:
            ts = ts.model_copy(update={"give_up_below": {self.spec.objective.metric: floor}})
        loop.inflight[self.executor.submit(ts, on_window=hook)] = (trial, config)
        _logger.info("trial %d launched (attempt %d): %s", trial.number, attempt, config)

    def _collect(self, loop: _Loop) -> None:
        """Wait (up to a second) for results; tell the finished trials; keep heartbeats."""
        done, _ = wait(list(loop.inflight), timeout=1.0, return_when=FIRST_COMPLETED)
        self._phases(loop)
        if time.monotonic() - loop.last_beat > self.options.heartbeat_s:
            self._heartbeat(loop)
        for fut in done:
            trial, config = loop.inflight.pop(fut)
            self._finish(loop, trial, config, fut.result())

    def _phases(self, loop: _Loop) -> None:
        """Tell the progress view where running trials are (launch, load, warmup, benchmark).

        The node notes each phase beside the trial's log; only trials on this host (or a
        shared log folder) are seen: elsewhere the view just says the trial is running.
        """
        for trial, _config in loop.inflight.values():
            notes = sorted(self.log_dir.glob(f"trial-{trial.number:04d}-a*.phase"))
            if not notes:
                continue
            try:
                phase = notes[-1].read_text().strip()
            except OSError:  # being rewritten or gone: read at the next pass
                continue
            if phase and loop.phases.get(trial.number) != phase:
                loop.phases[trial.number] = phase
                self.on_event(Event(EventKind.PHASE, trial.number, message=phase))

    def _heartbeat(self, loop: _Loop) -> None:
        for trial, _config in loop.inflight.values():
            self.ledger.heartbeat(adapter.trial_id(trial))
        self.ledger.recover_interrupted(running=False)  # e.g. another host's dead driver
        loop.last_beat = time.monotonic()

    def _finish(
        self, loop: _Loop, trial: optuna.Trial, config: dict[str, Any], result: TrialResult
    ) -> None:
        """One result: retry it elsewhere (infrastructure failure) or tell and record it."""
        if result.outcome is Outcome.INFRA and result.attempt < self.options.max_infra_retries:
            self._launch(loop, trial, config, result.attempt + 1, [n for n in [result.node] if n])
            message = result.failure.message if result.failure else ""
            _logger.warning(
                "trial %d: infrastructure failure on node %r, retrying elsewhere: %s",
                trial.number,
                result.node,
                message,
            )
            self.on_event(Event(EventKind.RETRY, trial.number, config, result, message=message))
            return
        told = self._record(trial, config, result, self.ledger.is_baseline(adapter.trial_id(trial)))
        cause = f" ({result.failure.cause.value})" if result.failure else ""
        _logger.info(
            "trial %d: %s%s, value %s", trial.number, told.outcome.value, cause, told.value
        )
        trials = self.ledger.trials()
        # The baseline's extra launches are not the search's: they do not count (a pruned
        # trial was launched and does).
        loop.launched = budget_launches(trials)
        record = next(t for t in trials if t.number == trial.number)
        if record.launched:
            crashed = told.outcome in CRASHES
            baseline = self.ledger.is_baseline(adapter.trial_id(trial))
            self.doom.observe(baseline=baseline, failure=result.failure, crashed=crashed)
        loop.crash_streak = loop.crash_streak + 1 if told.outcome in CRASHES else 0
        self._refresh_incumbent(trials)
        self._emit(
            loop,
            EventKind.RESULT,
            trial.number,
            config,
            result=result,
            outcome=told.outcome,
            value=told.value,
        )

    def _record(
        self, trial: optuna.Trial, config: dict[str, Any], result: TrialResult, baseline: bool
    ) -> Told:
        """Tell a launched trial's result (study, ledger, dead ends) and log it to the tracker."""
        if baseline and result.outcome is Outcome.OK and not self.ledger.has_defaults():
            # where the search's screen starts (read once: later launches ran the same)
            self.ledger.mark_defaults(trial, self._chosen_by_engine(config, result.log_path))
        command = self.real_command(config)
        told = tell_result(
            self.study, self.ledger, self.deadends, self.spec, trial, config, result, command
        )
        self.tracker.log_trial(
            TrialLog(
                study=self.options.study,
                result=told.result,
                config=config,
                argv=command[0],
                env=command[1],
                baseline=baseline,
                proposed_by=self.ledger.proposed_by(adapter.trial_id(trial)),
            )
        )
        return told

    def _chosen_by_engine(self, config: dict[str, Any], log_path: str | None) -> dict[str, Any]:
        """The values the engine chose for the settings ``config`` leaves unset, as the space
        writes them, read from the launch's log (``Engine.resolved_flags``)."""
        try:
            text = Path(log_path).read_text(errors="replace") if log_path else ""
        except OSError:  # no log on the driver: the screen starts from reference values
            return {}
        flags = self.engine.resolved_flags(text) if text else {}
        out: dict[str, Any] = {}
        for p in self.spec.parameters:
            raw = flags.get(p.flag or "")
            if p.name in config or raw is None or p.map:
                continue
            try:
                if p.type == "bool":
                    value: Any = {"True": True, "False": False}[raw]
                elif p.type == "categorical":
                    value = next(c for c in p.choices or [] if str(c) == raw)
                else:
                    value = int(float(raw)) if p.type == "int" else float(raw)
            except (KeyError, StopIteration, ValueError):  # not a value the space can write
                continue
            out[p.name] = value
        # Only what the configuration switches on (a draft length without speculation is not).
        values = {**out, **config}
        when = {p.name: p.when for p in self.spec.parameters}
        return {n: v for n, v in out.items() if when[n] is None or compiled(when[n]).holds(values)}

    def _end(self, loop: _Loop) -> None:
        _logger.info("study %r stops: %s", self.options.study, loop.stop_reason)
        if self.options.confirm > 0 and self.spec.baseline is not None:
            self._confirm()
        if not self.interrupted:
            try:
                self.ledger.write_ablation(self._ablate(loop.target))
            except _Interrupted as stop:  # the answer stands; the ablation says it was cut
                why = "the time limit" if isinstance(stop, _OutOfTime) else "Ctrl-C"
                self.ledger.write_ablation(ablation.skipped(f"cut short by {why}"))
        self._reap()
        trials = self.ledger.trials()
        summary = self.ledger.summary(trials)
        self.tracker.finish(summary)
        self.on_event(Event(EventKind.VERDICT, message=summary.verdict))
        self._emit(loop, EventKind.STOP, trials=trials, message=loop.stop_reason)

    # -- noise, pruning, confirmation (study/noise.py, prune.py, confirm.py, evidence.py) --

    def _refresh_incumbent(self, trials: list[TrialRecord] | None = None) -> None:
        """The best median so far and the launch noise: what the pruner compares with."""
        trials = self.ledger.trials() if trials is None else trials
        groups = evidence.gather(trials, self.spec.objective.metric)
        top = evidence.ranked(groups, self.spec.objective.direction)
        self._incumbent = top[0].median if top else None
        self._launch_cv = evidence.noise_model(groups).launch_cv
        base = evidence.baseline_of(groups)
        self._baseline_median = base.median if base is not None else None
        took = [t.duration_s for t in trials if t.launched and t.duration_s]
        self._trial_s = statistics.median(took) if took else None

    def _floor(self) -> float | None:
        """The rate below which a window of a prunable trial stops at once: where the pruner
        would stop the trial after it (None: a metric with no such bound, or nothing known
        to compare with yet)."""
        margin = margin_for(self._launch_cv)
        objective = self.spec.objective
        if (
            objective.metric not in BOUNDED_RATES
            or objective.direction != "maximize"
            or self.spec.scenarios
            or not self._incumbent
            or margin is None
        ):
            return None
        return self._incumbent * (1.0 - margin)

    def _window_hook(self, trial: optuna.Trial) -> WindowHook:
        """Per-window intermediate values to Optuna; True (stop) when the pruner says so."""
        metric = self.spec.objective.metric

        def hook(index: int, flat: dict[str, float]) -> bool:
            value = flat.get(metric)
            if value is None:
                return False
            try:
                trial.report(float(value), step=index)
                return bool(trial.should_prune())
            except Exception:  # runs on the trial's thread: never break the trial
                _logger.warning("pruning check of trial %s failed", trial.number, exc_info=True)
                return False

        return hook

    def _confirm(self) -> Confirmation | None:
        """Relaunch the top candidates and the baseline, interleaved; store the record."""
        o = self.options
        groups = evidence.gather(self.ledger.trials(), self.spec.objective.metric)
        base = evidence.baseline_of(groups)
        top = [g for g in evidence.ranked(groups, self.spec.objective.direction) if g is not base]
        if self.spec.objective.multi:
            # Several objectives: the candidates are the Pareto front's members, confirmed
            # against the baseline on the primary objective (docs/objectives.md).
            on_front = {
                p.trial for p in front(self.ledger.trials(), self.spec.objective.objectives)
            }
            top = [g for g in top if g.first_trial in on_front]
        if base is None or not top:
            return None
        direction = self.spec.objective.direction
        if base.values and not self.spec.objective.multi:
            # A candidate the baseline already beat beyond noise cannot turn that around in
            # a few relaunches: spend no launches on it.
            hopeful = [g for g in top if not better(base.values, g.values, direction, LEVEL)]
            if not hopeful:
                lost = gain(base.values, top[0].values, direction, candidates=len(top))
                self.on_event(
                    Event(
                        EventKind.CONFIRM,
                        message="not confirming: the baseline beat every candidate beyond "
                        f"noise (the best: {lost.interval_text()})",
                    )
                )
                return None
            top = hopeful
        waiting = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
        if waiting:
            # Optuna hands out queued trials first: a confirmation launch would get one of
            # them. They run when the study is resumed with a larger budget; confirm then.
            self.on_event(
                Event(
                    EventKind.CONFIRM,
                    message=f"not confirming: {len(waiting)} queued trial(s) still wait for "
                    "the budget (resume with a larger --n-trials)",
                )
            )
            return None
        candidates = [
            Candidate(key=f"trial {g.first_trial}", config=g.config, trial=g.first_trial)
            for g in top[: o.confirm]
        ]
        earlier = self.ledger.confirmation()
        if earlier is not None and [c.key for c in earlier.candidates] == [
            c.key for c in candidates
        ]:
            # Resumed with nothing new at the top: the earlier rounds still answer.
            self.on_event(
                Event(EventKind.CONFIRM, message="already confirmed: the same candidates lead")
            )
            return earlier
        progress = self._confirm_plan(candidates, base.config)
        configs = {c.key: c.config for c in progress.candidates}
        configs[CONFIRM_BASELINE] = progress.baseline
        kept = len(progress.launches)
        self.on_event(
            Event(
                EventKind.CONFIRM,
                message=f"confirming {', '.join(configs)} in interleaved rounds"
                + (f" (going on after {kept} launch(es) already made)" if kept else ""),
            )
        )
        lo, hi = o.confirm_rounds

        def launch(c: Candidate, round_no: int) -> _Relaunch:
            marks = {"confirm_round": round_no, "confirm_key": c.key}
            baseline = c.key == CONFIRM_BASELINE
            return _Relaunch(configs[c.key], f"confirm {c.key}", round_no, baseline, marks)

        def measure_round(batch: Sequence[tuple[Candidate, int]]) -> list[Sample]:
            # Launches an earlier, interrupted run made answer again; the rest are launched,
            # each stored as soon as it is measured.
            known = {i: progress.sample(c.key, r) for i, (c, r) in enumerate(batch)}
            todo = [i for i, sample in known.items() if sample is None]

            def done(j: int, sample: Sample) -> None:
                c, r = batch[todo[j]]
                progress.add(c.key, r, sample)
                self.ledger.write_confirm_progress(progress)

            fresh = self._measure([launch(*batch[i]) for i in todo], on_sample=done)
            made = dict(zip(todo, fresh, strict=True))
            return [known[i] or made[i] for i in range(len(batch))]

        try:
            record = confirm(
                progress.candidates,
                lambda c, round_no: measure_round([(c, round_no)])[0],
                self.spec.objective.direction,
                ConfirmOptions(min_rounds=lo, max_rounds=hi),
                measure_round=measure_round,
            )
        except _Interrupted as stop:  # nothing is concluded; the resume goes on from here
            why = (
                "the time limit leaves no room for a launch"
                if isinstance(stop, _OutOfTime)
                else "interrupted"
            )
            self.on_event(
                Event(
                    EventKind.CONFIRM,
                    message=f"{why}: confirmation goes on from its last launch on resume",
                )
            )
            return None
        self.ledger.write_confirmation(record)
        self.ledger.write_confirm_progress(None)
        return record

    def _confirm_plan(self, candidates: list[Candidate], baseline: dict[str, Any]) -> Progress:
        """The confirmation under way when it was interrupted with no search trial since, or
        a new plan of ``candidates`` against ``baseline`` (stored before its first launch)."""
        search = sum(1 for t in self.ledger.trials() if t.searched)
        earlier = self.ledger.confirm_progress()
        if earlier is not None and earlier.search_trials == search:
            return earlier
        progress = Progress(search_trials=search, candidates=candidates, baseline=baseline)
        self.ledger.write_confirm_progress(progress)
        return progress

    def _wait(self, fut: Future[TrialResult]) -> TrialResult:
        """The result of one launch, or ``_Interrupted`` as soon as Ctrl-C comes: the trial is
        recorded as interrupted and torn down (as ``_abort`` does for the search)."""
        while True:
            try:
                return fut.result(timeout=INTERRUPT_POLL_S)
            except FutureTimeout:  # still running: look for Ctrl-C, then wait again
                if not self.interrupted:
                    continue
            self.ledger.recover_interrupted()
            fut.cancel()
            self.executor.shutdown()
            raise _Interrupted

    def _ablate(self, target: int) -> Ablation:
        """Revert each change of the winner in turn, relaunched interleaved with the winner;
        or say in one line why not. ``target``: the search's budget, the default ceiling."""
        o = self.options
        v = self.ledger.verdict()
        if o.ablation_rounds <= 0:
            return ablation.skipped("the ablation is off (--ablation-rounds 0)")
        if self.spec.objective.multi:
            return ablation.skipped("a study with several objectives has a front, not a winner")
        winner = v.winner
        if winner is None or winner.first_trial is None or v.baseline is None:
            return ablation.skipped("no winner and baseline to compare")
        if winner is v.baseline:
            reason = "the baseline is the answer (nothing beat it beyond noise): nothing to weigh"
            return ablation.skipped(reason, winner.first_trial)
        found = ablation.changes(self.spec, winner.config, v.baseline.config)
        need = o.ablation_rounds * (len(found) + 1)
        ceiling = o.ablation_launches if o.ablation_launches is not None else target
        if need > ceiling:
            return ablation.skipped(
                f"{len(found)} change(s) x {o.ablation_rounds} rounds with the winner need "
                f"{need} launches, more than the ablation's budget of {ceiling} "
                "(raise it with --ablation-launches)",
                winner.first_trial,
            )
        self.on_event(
            Event(
                EventKind.CONFIRM,
                message=f"ablation: reverting {', '.join(c.param for c in found)} one at a "
                f"time, interleaved with trial {winner.first_trial}",
            )
        )

        def measure(key: str, config: dict[str, Any], round_no: int) -> Sample:
            marks = {"ablation_round": round_no, "ablation_key": key}
            return self._measure([_Relaunch(config, f"ablation {key}", round_no, False, marks)])[0]

        return ablation.ablate(
            self.spec,
            winner.first_trial,
            winner.config,
            found,
            measure,
            self.spec.objective.direction,
            o.ablation_rounds,
        )

    def _late(self) -> str:
        """Why no launch may start now ("": it may): the time limit is past, or the median
        launch would end after it."""
        if self._deadline is None:
            return ""
        now = time.monotonic()
        if now > self._deadline:
            return "time limit reached"
        if self._trial_s and now + self._trial_s > self._deadline:
            return (
                f"time limit: a trial takes about {_clock(self._trial_s)} (the median launch) "
                f"and {_clock(self._deadline - now)} is left"
            )
        return ""

    def _check_time(self) -> None:
        """Raise ``_OutOfTime`` where no launch may start (``_late``)."""
        if self._late():
            raise _OutOfTime

    def _measure(
        self,
        relaunches: list[_Relaunch],
        on_sample: Callable[[int, Sample], None] | None = None,
    ) -> list[Sample]:
        """Relaunches of a confirmation or an ablation, each an Optuna trial of its own, asked
        for in order and launched on as many workers as the study has (one at a time with
        one): their samples, in that order. ``on_sample(i, sample)``: as each one ends."""
        report = on_sample or (lambda i, sample: None)
        if self.parallel <= 1:
            out_in_order = []
            for i, r in enumerate(relaunches):
                self._check_time()
                out_in_order.append(self._finish_relaunch(r, *self._start_relaunch(r), None))
                report(i, out_in_order[-1])
            return out_in_order
        self._check_time()
        started = [self._start_relaunch(r) for r in relaunches]
        waiting = list(range(len(relaunches)))
        out: dict[int, Sample] = {}
        running: dict[Future[TrialResult], int] = {}
        while waiting or running:
            while waiting and len(running) < self.parallel:
                i = waiting.pop(0)
                trial, config = started[i]
                running[self.executor.submit(self.build_spec(trial.number, config))] = i
            done, _ = wait(list(running), timeout=INTERRUPT_POLL_S, return_when=FIRST_COMPLETED)
            if not done and self.interrupted:
                self.ledger.recover_interrupted()
                for fut in running:
                    fut.cancel()
                self.executor.shutdown()
                raise _Interrupted
            for fut in done:
                i = running.pop(fut)
                out[i] = self._finish_relaunch(relaunches[i], *started[i], fut.result())
                report(i, out[i])
        return [out[i] for i in range(len(relaunches))]

    def _start_relaunch(self, r: _Relaunch) -> tuple[optuna.Trial, dict[str, Any]]:
        """A relaunch's trial, asked for by name (``r.marks``: what the ledger keeps on it)."""
        if self.interrupted:
            raise _Interrupted
        self.ledger.enqueue(r.config, baseline=r.baseline, **r.marks)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
            trial = self.study.ask()
        config = suggest(trial, self.spec, fixed=self.ledger.fixed_params(adapter.trial_id(trial)))
        self.on_event(Event(EventKind.LAUNCH, trial.number, config, message=r.label))
        return trial, config

    def _finish_relaunch(
        self,
        r: _Relaunch,
        trial: optuna.Trial,
        config: dict[str, Any],
        result: TrialResult | None,
    ) -> Sample:
        """Launch a relaunch (``result``: its first launch's, where it already ran), again
        where the infrastructure failed, and record it."""
        label, round_no, baseline = r.label, r.round_no, r.baseline
        attempt = 0
        while True:
            if result is None:
                result = self._wait(
                    self.executor.submit(self.build_spec(trial.number, config, attempt))
                )
            if result.outcome is not Outcome.INFRA or attempt >= self.options.max_infra_retries:
                break
            attempt += 1
            result = None
        told = self._record(trial, config, result, baseline)
        metric = self.spec.objective.metric
        value = told.value if told.outcome is Outcome.OK else None
        reason = "" if value is not None else told.outcome.value
        if result.failure is not None and value is None:
            reason = f"{told.outcome.value}: {result.failure.cause.value}"
        if result.peak is not None and not result.peak.survived:
            value, reason = None, f"{result.peak.failed} failed requests at peak load"
        self.on_event(
            Event(
                EventKind.RESULT,
                trial.number,
                config,
                result=result,
                outcome=told.outcome,
                value=value,
                message=f"{label}, round {round_no}",
            )
        )
        windows = tuple(float(w[metric]) for w in result.windows if metric in w)
        return Sample(value, windows, result.timings.total_s, trial.number, reason)

    # -- events -----------------------------------------------------------------------------

    def _emit_skip(self, trial: optuna.Trial, config: dict[str, Any], skip: SkipRecord) -> None:
        _logger.info("trial %d not launched (%s): %s", trial.number, skip.kind.value, skip.reason)
        self.tracker.log_skip(
            SkipLog(study=self.options.study, number=trial.number, config=config, skip=skip)
        )
        self.on_event(
            Event(
                EventKind.SKIP,
                trial.number,
                config,
                outcome=Outcome.PRUNED,
                message=skip.reason,
                skip=skip,
            )
        )

    def _emit(
        self,
        loop: _Loop,
        kind: EventKind,
        number: int | None = None,
        config: dict[str, Any] | None = None,
        *,
        trials: list[TrialRecord] | None = None,
        **fields: Any,
    ) -> None:
        """An event with the study's progress: launched, target, best and baseline values."""
        if trials is not None:
            self._refresh_incumbent(trials)
        # The best median so far against the baseline's median (the verdict, with its
        # interval, comes at the end).
        self.on_event(
            Event(
                kind,
                number,
                config or {},
                launched=loop.launched,
                target=loop.target,
                best=self._incumbent,
                baseline=self._baseline_median,
                **fields,
            )
        )

    def summary(self) -> StudySummary:
        """Counts and headline numbers of the study so far."""
        return self.ledger.summary()


__all__ = [
    "CRASH",
    "EXHAUSTED",
    "LAUNCHED",
    "MAX_SKIPS_IN_A_ROW",
    "Driver",
    "DriverOptions",
    "Event",
    "EventKind",
]
