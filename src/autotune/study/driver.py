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
from autotune.study import attrs, evidence
from autotune.study.deadends import DeadEnd, DeadEnds
from autotune.study.confirm import BASELINE as CONFIRM_BASELINE
from autotune.study.confirm import Candidate, Confirmation, ConfirmOptions, Sample, confirm
from autotune.study.outcome import CRASH, PEAK, SKIP, verdict
from autotune.study.prune import IncumbentPruner, margin_for, saved_seconds
from autotune.study.steering import CrashRisk, SteeringOptions
from autotune.tracking.base import Tracker

# Proposals in a row that are skipped (dead ends, repeats, constraints) before the space is
# taken as exhausted: a small discrete space runs out of new configurations.
MAX_SKIPS_IN_A_ROW = 200

LAUNCHED = {Outcome.OK, Outcome.CRASHED, Outcome.TIMEOUT, Outcome.SLO_VIOLATED}


def was_launched(user_attrs: dict[str, Any]) -> bool:
    """Whether a trial launched a server: a launched outcome, or pruned after its windows."""
    outcome = user_attrs.get(attrs.OUTCOME)
    return outcome in LAUNCHED or (outcome == Outcome.PRUNED and bool(user_attrs.get(attrs.WINDOWS)))


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
    # Noise (study/noise.py): the baseline's launches at the start (launch-to-launch spread),
    # and how often one configuration may be launched when the sampler proposes it again
    # (each a new sample); past that its launches' median is reused.
    baseline_launches: int = 3
    max_launches_per_config: int = 3
    # Confirmation (study/confirm.py): the top ``confirm`` candidates and the baseline are
    # relaunched interleaved at the end; 0 turns it off.
    confirm: int = 3
    confirm_rounds: tuple[int, int] = (3, 5)  # (min, max) rounds
    # Early stopping on per-window intermediate values (study/prune.py).
    prune: bool = True


def storage_url(options: DriverOptions) -> str:
    return options.storage or f"sqlite:///{(options.study_dir / 'study.db').resolve()}"


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """The study storage, with heartbeats so stale RUNNING trials can be told apart."""
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
        return optuna.samplers.TPESampler(
            seed=seed,
            constant_liar=parallel > 1,
            n_startup_trials=5,
            multivariate=True,
            group=True,
        )
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
        # What the pruner compares a running trial with (refreshed after every result).
        self._incumbent: float | None = None
        self._launch_cv: float | None = None
        self.study = self._open_study()
        self.deadends = DeadEnds(
            spec,
            [DeadEnd.from_json(d) for d in self.study.user_attrs.get(attrs.DEAD_ENDS, [])],
        )
        self.risk = CrashRisk(spec, options.steering, seed=options.seed)
        self.model_path = engine.prepare(spec.model)
        self.rules = [Rule(**r.model_dump()) for r in spec.rules] + engine.failure_rules()

    # -- study ------------------------------------------------------------------------------

    def _open_study(self) -> optuna.Study:
        o = self.options
        direction = self.spec.objective.direction
        sampler = make_sampler(o.sampler, o.seed, self.parallel)
        pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
        if o.prune:
            pruner = IncumbentPruner(
                lambda: self._incumbent, direction, lambda: margin_for(self._launch_cv)
            )
        try:
            study = optuna.load_study(
                study_name=o.study, storage=self.storage, sampler=sampler, pruner=pruner
            )
            existing = True
        except KeyError:
            study = optuna.create_study(
                study_name=o.study,
                storage=self.storage,
                sampler=sampler,
                direction=direction,
                pruner=pruner,
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
                # Several launches of the baseline: the study's launch-to-launch noise.
                for _ in range(max(1, o.baseline_launches)):
                    study.enqueue_trial(
                        dict(self.spec.baseline), user_attrs={attrs.BASELINE: True}
                    )
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
            if was_launched(t.user_attrs) and t.user_attrs.get(attrs.CONFIRM_ROUND) is None:
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
        self._refresh_incumbent()
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
                    if self._launches(config) < o.max_launches_per_config:
                        # Proposed again: a new launch adds a sample (one lucky launch must
                        # not stay the best); bounded, so an exhausted space still stops.
                        trial.set_user_attr(attrs.REPEAT_OF, earlier.number)
                    else:
                        # Launched enough: reuse the median of its launches.
                        skips += 1
                        self._reuse(trial, config, earlier)
                        continue
                reason = self._skip_reason(config)
                if reason is None and fixed is None and earlier is None:
                    reason = self.risk.check(config)  # enqueued ones were asked for: launch
                if reason:
                    skips += 1
                    self._skip(trial, config, reason)
                    continue
                skips = 0
                ts = self.build_spec(trial.number, config)
                # Only the sampler's proposals may be pruned: enqueued ones were asked for.
                inflight[self._submit(ts, trial if fixed is None else None)] = (trial, config)
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
                if outcome in LAUNCHED or result.windows:  # a pruned trial was launched too
                    launched += 1
                    self.risk.observe(config, outcome in (Outcome.CRASHED, Outcome.TIMEOUT))
                crash_streak = (
                    crash_streak + 1 if outcome in (Outcome.CRASHED, Outcome.TIMEOUT) else 0
                )
                _, best, baseline = self._counts()
                self._refresh_incumbent()
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
        if o.confirm > 0 and self.spec.baseline is not None:
            self._confirm()
        self._reap()
        _, best, baseline = self._counts()
        self._store_verdict()
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

    # -- noise, pruning, confirmation (study/noise.py, prune.py, confirm.py, evidence.py) ----

    def _evidence(self) -> dict[str, evidence.Launches]:
        return evidence.gather(self.study.get_trials(deepcopy=False), self.spec.objective.metric)

    def _launches(self, config: dict[str, Any]) -> int:
        """Launches of ``config`` in the search so far (measured or failed)."""
        group = self._evidence().get(evidence.config_key(config))
        return len(group.trials) + len(group.failures) if group else 0

    def _refresh_incumbent(self) -> None:
        groups = self._evidence()
        top = evidence.ranked(groups, self.spec.objective.direction)
        self._incumbent = top[0].median if top else None
        self._launch_cv = evidence.noise_model(groups).launch_cv

    def _submit(self, ts: TrialSpec, trial: optuna.Trial | None) -> Future[TrialResult]:
        hook = None
        if trial is not None and self.options.prune and not trial.user_attrs.get(attrs.BASELINE):
            hook = self._window_hook(trial)
        return self.executor.submit(ts, on_window=hook)

    def _window_hook(self, trial: optuna.Trial) -> Callable[[int, dict[str, float]], bool]:
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
                return False

        return hook

    def _confirm(self) -> Confirmation | None:
        """Relaunch the top candidates and the baseline, interleaved; store the record."""
        o = self.options
        groups = self._evidence()
        base = evidence.baseline_of(groups)
        ranked = [g for g in evidence.ranked(groups, self.spec.objective.direction) if g is not base]
        if base is None or not ranked:
            return None
        candidates = [
            Candidate(f"trial {g.first_trial}", g.config, g.first_trial) for g in ranked[: o.confirm]
        ]
        by_key = {c.key: c.config for c in candidates}
        by_key[CONFIRM_BASELINE] = base.config
        self.on_event(
            Event("confirm", message=f"confirming {', '.join(by_key)} in interleaved rounds")
        )

        def measure(c: Candidate, round_no: int) -> Sample:
            return self._measure_once(by_key[c.key], c.key, round_no)

        lo, hi = o.confirm_rounds
        record = confirm(
            candidates,
            measure,
            self.spec.objective.direction,
            ConfirmOptions(min_rounds=lo, max_rounds=hi),
        )
        self.study.set_user_attr(attrs.CONFIRMATION, record.to_json())
        return record

    def _measure_once(self, config: dict[str, Any], key: str, round_no: int) -> Sample:
        """One confirmation launch: an Optuna trial of its own, launched now, waited for."""
        user: dict[str, Any] = {attrs.CONFIRM_ROUND: round_no, attrs.CONFIRM_KEY: key}
        if key == CONFIRM_BASELINE:
            user[attrs.BASELINE] = True
        self.study.enqueue_trial(dict(config), user_attrs=user)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
            trial = self.study.ask()
        fixed = self.storage.get_trial_system_attrs(trial._trial_id).get("fixed_params")
        config = suggest(trial, self.spec, fixed=fixed)
        self.on_event(Event("launch", trial.number, config, message=f"confirm {key}"))
        attempt = 0
        while True:
            ts = self.build_spec(trial.number, config, attempt=attempt)
            result = self.executor.submit(ts).result()
            if result.outcome is not Outcome.INFRA or attempt >= self.options.max_infra_retries:
                break
            attempt += 1
        outcome = self._finish(trial, config, result)
        metric = self.spec.objective.metric
        flat = result.metrics.flat() if result.metrics is not None else {}
        value = flat.get(metric) if outcome is Outcome.OK else None
        reason = "" if value is not None else outcome.value
        if result.peak is not None and not result.peak.survived:
            value, reason = None, f"{result.peak.failed} failed requests at peak load"
        if result.failure is not None and value is None:
            reason = f"{outcome.value}: {result.failure.cause.value}"
        self.on_event(
            Event(
                "result",
                trial.number,
                config,
                result=result,
                outcome=outcome,
                value=value,
                message=f"confirm {key} round {round_no}",
            )
        )
        windows = tuple(float(w[metric]) for w in result.windows if metric in w)
        return Sample(value, windows, result.timings.total_s, trial.number, reason)

    def verdict(self) -> evidence.Verdict:
        """The study's answer: the winner, the gain and its interval (see study/evidence.py)."""
        raw = self.study.user_attrs.get(attrs.CONFIRMATION)
        record = Confirmation.from_json(raw) if raw else None
        return evidence.verdict(
            self.study.get_trials(deepcopy=False),
            self.spec.objective.metric,
            self.spec.objective.direction,
            record,
        )

    def _store_verdict(self) -> None:
        v = self.verdict()
        self.study.set_user_attr(attrs.GAIN, v.gain.to_json() if v.gain else None)
        self.study.set_user_attr(attrs.NOISE, v.noise.to_json())
        self.on_event(Event("verdict", message=v.text()))

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
        reason = (
            f"same configuration as trial {earlier.number}, launched enough: "
            "the median of its launches is reused"
        )
        for key, value in {
            attrs.OUTCOME: Outcome.PRUNED.value,
            attrs.SKIPPED: reason,
            attrs.MESSAGE: f"not launched: {reason}",
            attrs.CONFIG: config,
        }.items():
            trial.set_user_attr(key, value)
        for name, amount in earlier.constraints.items():
            trial.set_constraint(name, amount)
        group = self._evidence().get(evidence.config_key(config))
        self.study.tell(trial, group.median if group and group.median else earlier.value)
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
        constraints = dict(v.constraints)
        if result.peak is not None and v.outcome is Outcome.OK:
            # Failed requests at peak load: its windows stand, but it can never win.
            constraints[PEAK] = 0.0 if result.peak.survived else 1.0
        for name, amount in constraints.items():
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
        if result.windows:
            values[attrs.WINDOWS] = result.windows
        if result.peak is not None:
            values[attrs.PEAK] = result.peak.model_dump(mode="json")
        if outcome is Outcome.PRUNED and result.windows:
            planned = self.spec.workload.windows
            dedicated = self.spec.workload.peak > self.spec.workload.concurrency
            values[attrs.PRUNED_SAVED_S] = saved_seconds(result.windows, planned, dedicated)
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
    "was_launched",
    "storage_url",
    "open_storage",
    "make_sampler",
    "CRASH",
]
