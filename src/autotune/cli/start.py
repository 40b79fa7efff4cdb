"""``autotune start``: run (or resume) a study, with a live view and the answer at the end."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from autotune.cli.app import app, console, err
from autotune.cli.options import (
    ROOT,
    AblationLaunchesOpt,
    AblationRoundsOpt,
    BaselineLaunchesOpt,
    Claims,
    ConfirmOpt,
    ConfirmRoundsOpt,
    ExecutorOpt,
    MlflowOpt,
    NoConfirmOpt,
    NoMlflowOpt,
    NTrialsOpt,
    ParallelOpt,
    Placement,
    PruneOpt,
    RayAddressOpt,
    RootOpt,
    SamplerKind,
    SamplerOpt,
    Search,
    SeedOpt,
    Settled,
    SimulateOpt,
    SteerOpt,
    StorageOpt,
    StudyOpt,
    StudyRef,
    Tracking,
)
from autotune.cli.output import (
    final_report,
    mlflow_lines,
    objective_text,
    report_files,
    sync_command,
)
from autotune.cli.preflight import all_args, preflight
from autotune.cli.studies import quiet_optuna
from autotune.errors import ConfigError

if TYPE_CHECKING:
    from autotune.dispatch.base import Executor
    from autotune.engines.base import Engine
    from autotune.space.schema import StudySpec

_logger = logging.getLogger(__name__)

SpaceOpt = Annotated[Path, typer.Option("--space", help="The search-space YAML file.")]
TimeLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        min=1,
        help="Seconds after which no new search trial starts, nor one that the study's median "
        "launch says would end after them (default: budget.time_limit_s); trials in flight "
        "finish, and a resume goes on.",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress: only the final result.")
]


@app.command()
def start(
    space: SpaceOpt,
    study: StudyOpt = None,
    n_trials: NTrialsOpt = None,
    executor: ExecutorOpt = "ray",
    ray_address: RayAddressOpt = None,
    parallel: ParallelOpt = None,
    mlflow_uri: MlflowOpt = None,
    no_mlflow: NoMlflowOpt = False,
    simulate: SimulateOpt = False,
    seed: SeedOpt = None,
    sampler: SamplerOpt = SamplerKind.search,
    steer: SteerOpt = True,
    confirm: ConfirmOpt = None,
    no_confirm: NoConfirmOpt = False,
    confirm_rounds: ConfirmRoundsOpt = None,
    baseline_launches: BaselineLaunchesOpt = None,
    ablation_rounds: AblationRoundsOpt = 3,
    ablation_launches: AblationLaunchesOpt = None,
    prune: PruneOpt = True,
    time_limit: TimeLimitOpt = None,
    study_root: RootOpt = ROOT,
    storage: StorageOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Run (or resume) a study: launch, benchmark and score one server per trial."""
    run(
        space,
        StudyRef(study, study_root, storage),
        Placement(executor, ray_address, parallel, simulate),
        Search(n_trials, seed, sampler, steer, prune, time_limit),
        Claims(
            baseline_launches,
            0 if no_confirm else confirm,
            confirm_rounds,
            ablation_rounds,
            ablation_launches,
        ),
        Tracking(mlflow_uri, not no_mlflow),
        quiet=quiet,
    )


@dataclass(frozen=True)
class _Study:
    """What ``start`` resolved before launching anything."""

    spec: StudySpec
    name: str
    folder: Path
    engine: Engine  # what launches trials (the stand-in when simulating)
    real_engine: Engine  # whose command is stored and exported


def run(
    space: Path,
    ref: StudyRef,
    where: Placement,
    search: Search,
    claims: Claims,
    tracking: Tracking,
    *,
    quiet: bool = False,
) -> None:
    """Run the study of ``space`` to its budget and print its answer."""
    quiet_optuna()
    s = _resolve(space, ref, where, search)
    _check_writable(s.folder)
    counts = claims.settled(s.spec.budget)
    target = search.n_trials or s.spec.budget.trials
    wants_confirm = counts.confirm > 0 and s.spec.baseline is not None
    if _budget_reached(s, ref, target, confirm=wants_confirm):
        # Nothing to run: say so without starting an executor (Ray: 13 s) or a tracker.
        console.print(
            f"study [cyan]{s.name}[/] already holds {target} launched trial(s): budget reached; "
            f"raise it with --n-trials N (N > {target}) to run more"
        )
        done = _load(s, ref)
        final_report(_view(done), ref)
        report_files(done, s.folder)  # e.g. cut short by Ctrl-C last time
        return
    ex, tracker = _start(s, where, tracking)
    try:
        driver = _driver(s, ref, where, search, counts, ex, tracker)
        _announce(s, where, ex)
        with _ctrl_c(driver):
            _drive(driver, s, where, quiet)
    finally:
        ex.shutdown()
    _finish(driver, s, ref, tracking, tracker)


def _resolve(space: Path, ref: StudyRef, where: Placement, search: Search) -> _Study:
    from autotune.dispatch import EXECUTORS
    from autotune.engines import get_engine
    from autotune.space.load import load

    spec = load(space)
    EXECUTORS.get_class(where.executor)  # an unknown name: one line, before anything is written
    if search.time_limit is not None:
        budget = spec.budget.model_copy(update={"time_limit_s": search.time_limit})
        spec = spec.model_copy(update={"budget": budget})
    try:
        engine = get_engine(spec.engine, simulate=where.simulate)
    except ConfigError as exc:  # the engine cannot be simulated: locate it in the space file
        raise ConfigError(exc.message, file=str(space), field=exc.field) from None
    real_engine = get_engine(spec.engine) if where.simulate else engine
    name = ref.name or spec.name or space.stem
    return _Study(spec, name, ref.root / name, engine, real_engine)


def _check_writable(study_dir: Path) -> None:
    """Refuse a study folder this user cannot write, before anything starts.

    Raises:
        ConfigError: naming the folder and how to pick another.
    """
    try:
        study_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=study_dir, prefix=".autotune-write-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"cannot write the study folder {study_dir}: {reason}; run from a folder you can "
            "write to, or pass --study-root DIR"
        ) from None


def _load(s: _Study, ref: StudyRef) -> Any:
    import optuna

    from autotune.study.storage import open_storage, storage_url

    url = storage_url(ref.storage, s.folder)
    return optuna.load_study(study_name=s.name, storage=open_storage(url))


def _view(study: Any) -> Any:
    from autotune.study.ledger import Ledger

    return Ledger(study).view()


def _budget_reached(s: _Study, ref: StudyRef, target: int, confirm: bool = False) -> bool:
    """Whether the study exists, holds ``target`` launched trials and nothing to recover
    (and, with ``confirm``, has its confirmation: a study whose search ended without one,
    e.g. stopped by a time limit, is confirmed on the next start)."""
    if ref.storage is None and not (s.folder / "study.db").exists():
        return False
    from autotune.core.records import budget_launches
    from autotune.models import Outcome
    from autotune.study.ledger import Ledger

    try:
        study = _load(s, ref)
    except KeyError:  # no such study in that storage: nothing reached
        return False
    ledger = Ledger(study)
    trials = ledger.trials()
    if any(t.state in ("RUNNING", "WAITING") for t in trials):
        return False  # an interrupted trial to recover, or a queued one: the driver's work
    if ledger.confirmation() is None:
        if any(t.confirm_round is not None for t in trials):
            return False  # its confirmation was cut short (Ctrl-C): the driver runs it again
        ok = [t for t in trials if t.outcome == Outcome.OK]
        confirmable = any(t.baseline for t in ok) and any(not t.baseline for t in ok)
        if confirm and confirmable:
            return False  # e.g. its search stopped at a time limit: confirm now
    return budget_launches(trials) >= target


def _options(s: _Study, where: Placement) -> Any:
    from autotune.dispatch import ExecutorOptions

    gpus = s.engine.gpus(s.engine.command(s.spec.model, all_args(s.spec), {})[0])
    return ExecutorOptions(
        gpus_per_trial=gpus,
        parallel=where.parallel,
        address=where.address,
        log_dir=str(s.folder / "logs"),
        simulate=where.simulate,
    )


def _start(s: _Study, where: Placement, tracking: Tracking) -> tuple[Executor, Any]:
    """The executor and the tracker. While the executor starts (a local Ray instance:
    seconds), a helper thread checks the flags against the engine here, builds the model and
    opens the tracking store. Ray starts on this thread: the processes it spawns die with the
    thread that started them."""
    from autotune.dispatch import EXECUTORS

    executor_class = EXECUTORS.get_class(where.executor)
    options = _options(s, where)
    here = executor_class.runs_here(options)
    helper = ThreadPoolExecutor(1, thread_name_prefix="autotune-start")
    prepared = helper.submit(_prepare, s, here, tracking)
    helper.shutdown(wait=False)
    _logger.info("starting executor %s (%s)", where.executor, options)
    # Ray announces its token-authentication mode on every start: not the user's concern here.
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    with console.status(f"starting executor {where.executor}"):
        ex: Executor = executor_class.create(options)
        try:
            tracker = prepared.result()
            if not here:
                # Elsewhere the engine lives on the machines that run trials: check the flags
                # against its --help there (once; this machine may not even have the engine).
                text = ex.engine_help(s.spec.engine, simulate=where.simulate)
                preflight(s.engine, s.spec, help_text=text)
        except BaseException:  # re-raised (a bad flag, Ctrl-C): stop what was started for it
            ex.shutdown()
            raise
    return ex, tracker


def _prepare(s: _Study, here: bool, tracking: Tracking) -> Any:
    """What a study needs besides its executor: the flags checked against the engine here,
    the model built (once, cached), the tracking store open (a failure to open it is a
    warning: the study goes on). Returns the tracker."""
    from autotune.tracking import make_tracker

    if here:
        preflight(s.engine, s.spec)
        s.engine.prepare(s.spec.model)  # e.g. the tiny model
    tracker = _resilient(make_tracker(tracking.uri, enabled=tracking.enabled), s.name, tracking.uri)
    tracker.connect()
    _logger.info("flags checked, model ready, tracking store open")
    return tracker


def _resilient(inner: Any, name: str, mlflow_uri: str | None) -> Any:
    """The tracker the driver gets: a tracking failure never stops the study."""
    from autotune.tracking.resilient import ResilientTracker

    def warn(message: str) -> None:
        later = sync_command(name, mlflow_uri)
        err.print(f"autotune: warning: {message}; when MLflow is back: {later}", markup=False)

    return ResilientTracker(inner, on_error=warn)


def _driver(
    s: _Study,
    ref: StudyRef,
    where: Placement,
    search: Search,
    claims: Settled,
    ex: Executor,
    tracker: Any,
) -> Any:
    from autotune.study.driver import Driver, DriverOptions

    options = DriverOptions(
        study=s.name,
        study_dir=s.folder,
        storage=ref.storage,
        n_trials=search.n_trials,
        parallel=where.parallel,
        simulate=where.simulate,
        seed=search.seed,
        sampler=search.sampler.value,
        steer=search.steer,
        baseline_launches=claims.baseline_launches,
        confirm=claims.confirm,
        confirm_rounds=(min(3, claims.confirm_rounds), claims.confirm_rounds),
        ablation_rounds=claims.ablation_rounds,
        ablation_launches=claims.ablation_launches,
        prune=search.prune,
    )
    return Driver(
        s.spec,
        engine=s.engine,
        real_engine=s.real_engine,
        executor=ex,
        tracker=tracker,
        options=options,
    )


def _announce(s: _Study, where: Placement, ex: Executor) -> None:
    sim = (
        " [bold magenta]SIMULATED[/] (stand-in SGLang server: figures are modelled)"
        if where.simulate
        else ""
    )
    console.print(
        f"[bold]autotune[/] study [cyan]{s.name}[/] · engine {s.real_engine.name} · "
        f"{objective_text(s.spec)} · executor {where.executor}"
        f" ({ex.capacity()} at once){sim}"
    )


def _drive(driver: Any, s: _Study, where: Placement, quiet: bool) -> None:
    from autotune.cli.progress import ProgressView

    if quiet:
        driver.run()
        return
    objective = s.spec.objective
    with ProgressView(console, objective.metric, where.simulate, objective.direction) as view:
        driver.on_event = view
        driver.run()


def _finish(driver: Any, s: _Study, ref: StudyRef, tracking: Tracking, tracker: Any) -> None:
    final_report(_view(driver.study), ref)
    files = report_files(driver.study, s.folder)
    if tracking.enabled:
        if files:
            tracker.log_artifacts(files)
        mlflow_lines(tracker, s.name, tracking.uri)
    if driver.interrupted:
        resume = shlex.join(["autotune", *sys.argv[1:]]) if sys.argv[1:] else "autotune start"
        err.print(
            "autotune: interrupted; the running trial was stopped and recorded as interrupted. "
            f"Resume with: {resume}",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(130)


@contextlib.contextmanager
def _ctrl_c(driver: Any) -> Iterator[None]:
    """First Ctrl-C: the driver stops launching, tears the running trials down and records
    them as interrupted. A second one forces: servers killed, exit 130 at once."""
    presses = 0

    def handler(signum: int, frame: Any) -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            err.print(
                "\nautotune: stopping: tearing the running trial(s) down (Ctrl-C again to force)",
                markup=False,
            )
            driver.interrupt()
            return
        from autotune.node.process import kill_own_servers

        err.print("autotune: forced; the next start recovers the study", markup=False)
        kill_own_servers(grace_s=0.5)
        _kill_children()  # a local Ray instance's processes would outlive this one
        os._exit(130)  # worker threads would otherwise hold the process open

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread (e.g. under a test runner's thread)
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _kill_children() -> None:
    """Kill every process this one started (and theirs), at once: the forced exit."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # gone already, or not ours to kill
            child.kill()


__all__ = ["run", "start"]
