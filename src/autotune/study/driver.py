"""The study driver: Optuna ask -> configuration -> TrialSpec -> executor -> tell.

The driver owns the Optuna study and decides everything: what to launch next, what to skip,
what a result means for the sampler, what to remember. It never parses a server log (the node
classifies) and never renders anything (the CLI subscribes to its events).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import psutil

from autotune.dispatch.base import Executor
from autotune.engines.base import Engine
from autotune.errors import ConfigError, StudyError
from autotune.models import (
    Cause,
    Failure,
    Limits,
    Outcome,
    Phase,
    Rule,
    TrialResult,
    TrialSpec,
)
from autotune.redact import redact_argv, redact_env
from autotune.space.render import render, violations
from autotune.space.schema import StudySpec
from autotune.space.suggest import suggest
from autotune.study import attrs
from autotune.study.deadends import DeadEnd, DeadEnds, Doom
from autotune.study.outcome import CRASH, SKIP, verdict
from autotune.study.sampler import LOCAL_SHARE, LocalTPESampler
from autotune.study.steering import SteeringOptions, make_risk
from autotune.tracking.base import Tracker

# Proposals in a row that are skipped (dead ends, repeats, constraints) before the space is
# taken as exhausted: a small discrete space runs out of new configurations.
MAX_SKIPS_IN_A_ROW = 200

LAUNCHED = {Outcome.OK, Outcome.CRASHED, Outcome.TIMEOUT, Outcome.SLO_VIOLATED}


@dataclass(frozen=True)
class Event:
    """Something the driver did, for whoever shows progress."""

    kind: str  # "start", "launch", "skip", "retry", "result", "stop"
    number: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    result: TrialResult | None = None
    outcome: Outcome | None = None
    value: float | None = None
    message: str = ""
    launched: int = 0
    target: int = 0
    best: float | None = None
    baseline: float | None = None


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
    sampler: str = "tpe"  # tpe | random
    max_infra_retries: int = 2
    heartbeat_s: float = 30.0
    # Crash-risk steering (study/steering.py): on by default; SteeringOptions(enabled=False) off.
    steering: SteeringOptions = field(default_factory=SteeringOptions)


def storage_url(options: DriverOptions) -> str:
    return options.storage or f"sqlite:///{(options.study_dir / 'study.db').resolve()}"


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """The study storage, with heartbeats so stale RUNNING trials can be told apart.

    ``:memory:`` is Optuna's in-process storage (benchmarks of the search: nothing survives).
    """
    if url == ":memory:":
        return optuna.storages.InMemoryStorage()
    kwargs: dict[str, Any] = {"heartbeat_interval": 60, "grace_period": 600}
    if url.startswith("sqlite"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    try:
        return optuna.storages.RDBStorage(url, **kwargs)
    except Exception as exc:
        raise StudyError(f"cannot open study storage {url}: {exc}") from exc


def make_sampler(name: str, seed: int | None, parallel: int) -> optuna.samplers.BaseSampler:
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "tpe":
        # constant_liar: with several trials in flight, do not propose what is already running.
        tpe = optuna.samplers.TPESampler(
            seed=seed,
            constant_liar=parallel > 1,
            n_startup_trials=5,
            multivariate=True,
            group=True,
        )
        # Half the proposals move the best configuration a little (chosen on bench/search).
        return LocalTPESampler(tpe, local=LOCAL_SHARE, seed=seed)
    raise ConfigError(f"unknown sampler {name!r}; use tpe or random", field="--sampler")


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
        self.storage = open_storage(storage_url(options))
        self.study = self._open_study()
        self.deadends = DeadEnds(
            spec,
            [DeadEnd.from_json(d) for d in self.study.user_attrs.get(attrs.DEAD_ENDS, [])],
        )
        self.risk = make_risk(spec, options.steering, seed=options.seed)
        self.doom = Doom()  # a study that cannot succeed stops at once
        self.model_path = engine.prepare(spec.model)
        self.rules = [Rule(**r.model_dump()) for r in spec.rules] + engine.failure_rules()

    # -- study ------------------------------------------------------------------------------

    def _open_study(self) -> optuna.Study:
        o = self.options
        direction = self.spec.objective.direction
        sampler = make_sampler(o.sampler, o.seed, self.parallel)
        try:
            study = optuna.load_study(study_name=o.study, storage=self.storage, sampler=sampler)
            existing = True
        except KeyError:
            study = optuna.create_study(
                study_name=o.study, storage=self.storage, sampler=sampler, direction=direction
            )
            existing = False
        if existing:
            self._check_resume(study)
        else:
            study.set_user_attr(attrs.SPACE, self.spec.model_dump(mode="json"))
            study.set_user_attr(attrs.SPACE_FILE, self.spec.source or "")
            study.set_user_attr(attrs.ENGINE, self.real_engine.name)
            study.set_user_attr(attrs.OBJECTIVE, self.spec.objective.model_dump())
            study.set_user_attr(attrs.STUDY_SIMULATED, o.simulate)
            if self.spec.baseline is not None:
                study.enqueue_trial(dict(self.spec.baseline), user_attrs={attrs.BASELINE: True})
        return study

    def _check_resume(self, study: optuna.Study) -> None:
        old = study.user_attrs.get(attrs.SPACE, {})
        new = self.spec.model_dump(mode="json")
        for key in ("engine", "model", "parameters", "constraints", "fixed", "objective"):
            if old.get(key) != new.get(key):
                raise StudyError(
                    f"study {self.options.study!r} was made from a different space "
                    f"({key} differs); start a new study with --study NAME"
                )
        if bool(study.user_attrs.get(attrs.STUDY_SIMULATED)) != self.options.simulate:
            kind = "simulated" if study.user_attrs.get(attrs.STUDY_SIMULATED) else "real"
            raise StudyError(
                f"study {self.options.study!r} holds {kind} trials; do not mix simulated and real "
                "trials in one study: use --study NAME for a new one"
            )

    def _recover_interrupted(self, running: bool = True) -> int:
        """Trials a dead driver left: fail them and queue their configuration again.

        ``running``: also the RUNNING ones (at start, under the study lock, every RUNNING
        trial is a dead driver's). Always: trials Optuna failed for a stale heartbeat, which
        carry no outcome of ours. Queued once per trial, even if a recovery was cut short.
        """
        state = optuna.trial.TrialState
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)
        trials = self.study.get_trials(deepcopy=False)
        queued = {t.user_attrs.get("retry_of") for t in trials}
        n = 0
        for t in trials:
            lost = t.state == state.FAIL and attrs.OUTCOME not in t.user_attrs
            if not (lost or running and t.state == state.RUNNING):
                continue
            if t.state == state.RUNNING:
                self.storage.set_trial_user_attr(t._trial_id, attrs.OUTCOME, "interrupted")
                self.storage.set_trial_state_values(t._trial_id, state.FAIL)
            if t.number in queued:  # a finished trial takes no new attribute: retry_of marks it
                continue
            fixed = t.system_attrs.get("fixed_params") or t.params
            user: dict[str, Any] = {"retry_of": t.number}
            if t.user_attrs.get(attrs.BASELINE):
                user[attrs.BASELINE] = True
            self.study.enqueue_trial(dict(fixed), user_attrs=user)
            n += 1
        return n

    def _reap(self) -> None:
        """Kill trial servers a dead driver or worker left, wherever trials run."""
        log_dir = str(self.log_dir.resolve())
        try:
            reap = getattr(self.executor, "reap_orphans", None)
            if reap is not None:
                reap(log_dir)
            else:  # trials run on this host
                from autotune.node.process import reap_orphans

                reap_orphans()
        except Exception:  # best effort: every trial re-checks its node before launch
            pass

    # -- configuration -> TrialSpec ---------------------------------------------------------

    def build_spec(self, number: int, config: dict[str, Any], attempt: int = 0) -> TrialSpec:
        args, env = render(self.spec, config)
        argv, env = self.engine.command(self.model_path, args, env)
        workload = self.spec.workload
        if workload.model is None:
            workload = workload.model_copy(
                update={"model": self.engine.request_model(self.model_path)}
            )
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
            ready_pattern=self.engine.ready_pattern,
            gpus=self.engine.gpus(argv),
            log_dir=str(self.log_dir.resolve()),
            simulated=self.options.simulate,
            attempt=attempt,
        )

    def real_command(self, config: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
        """The command a person would run for ``config`` (the real engine even when simulating)."""
        args, env = render(self.spec, config)
        argv, full_env = self.real_engine.command(self.model_path, args, env)
        # The interpreter that runs autotune also has the engine (same image on every node).
        argv = [a.replace("{python}", sys.executable) for a in argv]
        return redact_argv(argv), redact_env(full_env)

    # -- the loop ---------------------------------------------------------------------------

    def _counts(self) -> tuple[int, float | None, float | None]:
        launched = 0
        best: float | None = None
        baseline: float | None = None
        sign = 1.0 if self.spec.objective.direction == "maximize" else -1.0
        for t in self.study.get_trials(deepcopy=False):
            outcome = t.user_attrs.get(attrs.OUTCOME)
            if outcome in LAUNCHED:
                launched += 1
            if outcome == Outcome.OK and t.value is not None:
                if best is None or sign * t.value > sign * best:
                    best = t.value
                if t.user_attrs.get(attrs.BASELINE):
                    baseline = t.value
        return launched, best, baseline

    def run(self) -> None:
        """Run the study until its budget is spent, its time is up or its space exhausted."""
        lock = self._lock()
        try:
            self._run()
        finally:
            lock.unlink(missing_ok=True)

    def _lock(self) -> Path:
        path = self.options.study_dir / "driver.lock"
        if path.exists():
            try:
                held = json.loads(path.read_text())
                alive = held.get("host") == socket.gethostname() and psutil.pid_exists(
                    int(held["pid"])
                )
            except (ValueError, KeyError):
                alive = False
            if alive and int(held["pid"]) != os.getpid():
                raise StudyError(
                    f"study {self.options.study!r} is being run by process {held['pid']}; "
                    "wait for it or stop it first"
                )
        path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        return path

    def _run(self) -> None:
        o = self.options
        spec = self.spec
        target = o.n_trials or spec.budget.trials
        recovered = self._recover_interrupted()
        self._reap()
        deadline = time.monotonic() + spec.budget.time_limit_s if spec.budget.time_limit_s else None
        self.tracker.start_study(
            o.study,
            {
                "space_file": spec.source,
                "engine": self.real_engine.name,
                "model": spec.model,
                "objective": spec.objective.model_dump(),
                "simulated": o.simulate,
                "parent_run_id": self.study.user_attrs.get(attrs.MLFLOW_RUN),
                "parallel": self.parallel,
                "storage": storage_url(o),
            },
        )
        run_id = getattr(self.tracker, "parent_run_id", None)
        if run_id and self.study.user_attrs.get(attrs.MLFLOW_RUN) != run_id:
            self.study.set_user_attr(attrs.MLFLOW_RUN, run_id)
        launched, best, baseline = self._counts()
        for t in self.study.get_trials(deepcopy=False):  # resume: the risk model's history
            if t.user_attrs.get(attrs.OUTCOME) in LAUNCHED:
                self.risk.observe(
                    t.user_attrs.get(attrs.CONFIG) or t.params,
                    t.user_attrs[attrs.OUTCOME] in (Outcome.CRASHED, Outcome.TIMEOUT),
                )
        self.on_event(
            Event(
                "start",
                launched=launched,
                target=target,
                best=best,
                baseline=baseline,
                message=f"{recovered} interrupted trial(s) queued again" if recovered else "",
            )
        )
        inflight: dict[Future[TrialResult], tuple[optuna.Trial, dict[str, Any]]] = {}
        skips = 0  # proposals in a row that were not launched
        crash_streak = 0
        stop_reason = "budget reached"
        last_beat = time.monotonic()
        while True:
            stopping = False
            if deadline is not None and time.monotonic() > deadline:
                stopping, stop_reason = True, "time limit reached"
            if skips >= MAX_SKIPS_IN_A_ROW:
                stopping, stop_reason = True, "no launchable configuration left in the space"
            if spec.budget.max_crash_streak and crash_streak >= spec.budget.max_crash_streak:
                stopping, stop_reason = True, f"{crash_streak} crashes in a row"
            if self.doom.reason:
                stopping, stop_reason = True, self.doom.reason
            while (
                not stopping
                and skips < MAX_SKIPS_IN_A_ROW
                and len(inflight) < self.parallel
                and launched + len(inflight) < target
            ):
                with warnings.catch_warnings():
                    # Our heartbeats are recorded by hand (_beat), not by Study.optimize.
                    warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
                    trial = self.study.ask()
                fixed = self.storage.get_trial_system_attrs(trial._trial_id).get("fixed_params")
                config = suggest(trial, spec, fixed=fixed)
                earlier = self._measured(config)
                if earlier is not None and fixed is None:
                    # A configuration already measured (small discrete spaces): reuse its
                    # value instead of paying for a launch; the sampler sees the same result.
                    skips += 1
                    self._reuse(trial, config, earlier)
                    continue
                reason = self._skip_reason(config)
                if reason is None and fixed is None:  # enqueued ones were asked for: launch them
                    reason = self.risk.check(config)
                if reason:
                    skips += 1
                    self._skip(trial, config, reason)
                    continue
                skips = 0
                ts = self.build_spec(trial.number, config)
                inflight[self.executor.submit(ts)] = (trial, config)
                self.on_event(Event("launch", trial.number, config))
            if skips >= MAX_SKIPS_IN_A_ROW:
                stop_reason = "no launchable configuration left in the space"
            if not inflight:
                break
            done, _ = wait(list(inflight), timeout=1.0, return_when=FIRST_COMPLETED)
            if time.monotonic() - last_beat > o.heartbeat_s:
                for trial, _c in inflight.values():
                    self._beat(trial)
                self._recover_interrupted(running=False)  # e.g. another host's dead driver
                last_beat = time.monotonic()
            for fut in done:
                trial, config = inflight.pop(fut)
                result = fut.result()
                if result.outcome is Outcome.INFRA and result.attempt < o.max_infra_retries:
                    retry = self.build_spec(trial.number, config, attempt=result.attempt + 1)
                    retry = retry.model_copy(
                        update={"avoid_nodes": [n for n in [result.node] if n]}
                    )
                    inflight[self.executor.submit(retry)] = (trial, config)
                    self.on_event(
                        Event(
                            "retry",
                            trial.number,
                            config,
                            result=result,
                            message=result.failure.message if result.failure else "",
                        )
                    )
                    continue
                outcome = self._finish(trial, config, result)
                if outcome in LAUNCHED:
                    launched += 1
                    crashed = outcome in (Outcome.CRASHED, Outcome.TIMEOUT)
                    self.risk.observe(config, crashed)
                    test = self.risk.ablation(config, spec.baseline) if crashed else None
                    if test is not None:  # tell a crash's cause from a value never tried
                        self.study.enqueue_trial(test, user_attrs={attrs.ABLATION: True})
                    self.doom.observe(
                        baseline=bool(trial.user_attrs.get(attrs.BASELINE)),
                        failure=result.failure,
                        crashed=crashed,
                    )
                crash_streak = (
                    crash_streak + 1 if outcome in (Outcome.CRASHED, Outcome.TIMEOUT) else 0
                )
                _, best, baseline = self._counts()
                self.on_event(
                    Event(
                        "result",
                        trial.number,
                        config,
                        result=result,
                        outcome=outcome,
                        value=self.storage.get_trial(trial._trial_id).value,
                        launched=launched,
                        target=target,
                        best=best,
                        baseline=baseline,
                    )
                )
        self._reap()
        _, best, baseline = self._counts()
        self.tracker.finish(self.summary())
        self.on_event(
            Event(
                "stop",
                launched=launched,
                target=target,
                best=best,
                baseline=baseline,
                message=stop_reason,
            )
        )

    def _beat(self, trial: optuna.Trial) -> None:
        try:
            self.storage.record_heartbeat(trial._trial_id)  # type: ignore[attr-defined]
        except Exception:  # heartbeats are best effort; the lock file is the real guard
            pass

    def _measured(self, config: dict[str, Any]) -> optuna.trial.FrozenTrial | None:
        """An earlier trial that measured exactly ``config`` successfully, if any."""
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            if t.user_attrs.get(attrs.OUTCOME) in (Outcome.OK, Outcome.SLO_VIOLATED) and (
                t.user_attrs.get(attrs.CONFIG) == config
            ):
                return t
        return None

    def _reuse(
        self, trial: optuna.Trial, config: dict[str, Any], earlier: optuna.trial.FrozenTrial
    ) -> None:
        reason = f"same configuration as trial {earlier.number}: its measurement is reused"
        for key, value in {
            attrs.OUTCOME: Outcome.PRUNED.value,
            attrs.SKIPPED: reason,
            attrs.MESSAGE: f"not launched: {reason}",
            attrs.CONFIG: config,
        }.items():
            trial.set_user_attr(key, value)
        for name, amount in earlier.constraints.items():
            trial.set_constraint(name, amount)
        self.study.tell(trial, earlier.value)
        self.on_event(Event("skip", trial.number, config, outcome=Outcome.PRUNED, message=reason))

    def _skip_reason(self, config: dict[str, Any]) -> str | None:
        broken = violations(self.spec, config)
        if broken:
            return f"breaks constraint {broken[0]}"
        return self.deadends.why(config)

    def _skip(self, trial: optuna.Trial, config: dict[str, Any], reason: str) -> None:
        cause = Cause.CONSTRAINT if reason.startswith("breaks constraint") else Cause.DEAD_END
        for key, value in {
            attrs.OUTCOME: Outcome.PRUNED.value,
            attrs.CAUSE: cause.value,
            attrs.SKIPPED: reason,
            attrs.MESSAGE: f"not launched: {reason}",
            attrs.CONFIG: config,
        }.items():
            trial.set_user_attr(key, value)
        trial.set_constraint(SKIP, 1.0)
        self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        self.on_event(Event("skip", trial.number, config, outcome=Outcome.PRUNED, message=reason))

    def _finish(self, trial: optuna.Trial, config: dict[str, Any], result: TrialResult) -> Outcome:
        objective = self.spec.objective
        if result.outcome is Outcome.INFRA:  # retries exhausted: not the configuration's fault
            self._record(trial, config, result, result.outcome)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            self.tracker.log_trial(result, config, self._extra(trial, config, result))
            return Outcome.INFRA
        v = verdict(result, objective.metric, self.spec.slo)
        self._record(trial, config, result, v.outcome)
        for name, amount in v.constraints.items():
            trial.set_constraint(name, float(amount))
        if v.outcome in (Outcome.CRASHED, Outcome.TIMEOUT):
            failure = result.failure or Failure(cause=Cause.UNKNOWN, phase=Phase.LAUNCH)
            if v.outcome is Outcome.CRASHED and result.failure is None:
                failure = Failure(
                    cause=Cause.BENCHMARK_ERRORS,
                    phase=Phase.BENCHMARK,
                    message=f"metric {objective.metric!r} missing from the results",
                )
            record = self.deadends.add(trial.number, config, failure)
            if record is not None:
                self.study.set_user_attr(attrs.DEAD_ENDS, self.deadends.to_json())
                if record.blame:
                    trial.set_user_attr(
                        attrs.BLAME, [f"{k}={v!r}" for k, v in record.blame.items()]
                    )
        if v.state == optuna.trial.TrialState.COMPLETE:
            self.study.tell(trial, v.value)
        else:
            self.study.tell(trial, state=v.state)
        extra = self._extra(trial, config, result)
        self.tracker.log_trial(result.model_copy(update={"outcome": v.outcome}), config, extra)
        return v.outcome

    def _record(
        self, trial: optuna.Trial, config: dict[str, Any], result: TrialResult, outcome: Outcome
    ) -> None:
        argv, env = self.real_command(config)
        values: dict[str, Any] = {
            attrs.OUTCOME: outcome.value,
            attrs.CONFIG: config,
            attrs.ARGV: argv,
            attrs.ENV: env,
            attrs.LOG_PATH: result.log_path,
            attrs.SIMULATED: result.simulated,
            attrs.NODE: result.node,
            attrs.ATTEMPTS: result.attempt,
            attrs.TIMINGS: result.timings.model_dump(),
            attrs.CLEANUP: result.cleanup.model_dump(),
        }
        if result.metrics is not None:
            values[attrs.METRICS] = result.metrics.flat()
        if result.failure is not None:
            f = result.failure
            values.update(
                {
                    attrs.CAUSE: f.cause.value,
                    attrs.PHASE: f.phase.value,
                    attrs.HINT: f.hint,
                    attrs.EVIDENCE: f.evidence[:20],
                    attrs.MESSAGE: f.message or (f.evidence[0] if f.evidence else ""),
                }
            )
        for key, value in values.items():
            trial.set_user_attr(key, value)

    def _extra(
        self, trial: optuna.Trial, config: dict[str, Any], result: TrialResult
    ) -> dict[str, Any]:
        argv, env = self.real_command(config)
        return {
            "argv": argv,
            "env": env,
            "baseline": bool(trial.user_attrs.get(attrs.BASELINE)),
            "study": self.options.study,
            "failure": result.failure.model_dump(mode="json") if result.failure else None,
            "cleanup": result.cleanup.model_dump(mode="json"),
            "timings": result.timings.model_dump(mode="json"),
        }

    def summary(self) -> dict[str, Any]:
        from autotune.report import summary

        return summary(self.study)


__all__ = [
    "Driver",
    "DriverOptions",
    "Event",
    "storage_url",
    "open_storage",
    "make_sampler",
    "CRASH",
]
