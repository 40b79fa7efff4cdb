"""The ``autotune`` command line.

Every command turns bad input into one line on stderr and a non-zero exit code (the error's
``exit_code``); tracebacks are for bugs only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

# typer 0.29 parses with its own copy of click (typer._click), not the click package: its
# exceptions are the ones to catch. pyproject pins typer to the tested minor version.
from typer._click import exceptions as click_exc

from autotune import __version__
from autotune.errors import AutotuneError, ConfigError, StudyError

if TYPE_CHECKING:
    from autotune.engines.base import Engine
    from autotune.space.schema import StudySpec

_logger = logging.getLogger(__name__)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Tune LLM inference servers: an Optuna study over launch flags and environment.",
    pretty_exceptions_enable=False,
    # Plain help: rich mode labels every flag "<bool>" and boxes waste an 80-column terminal.
    rich_markup_mode=None,
)
# COLUMNS, when set, is the width; else piped or logged output gets wide tables (rich would
# assume 80 columns when not on a terminal).
_COLUMNS = os.environ.get("COLUMNS", "")
_WIDTH = int(_COLUMNS) if _COLUMNS.isdigit() else (None if sys.stdout.isatty() else 120)
console = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)

StudyOpt = Annotated[
    str | None,
    typer.Option("--study", help="Study name (default: the space's name, else the file name)."),
]
# status, export and report read a study that exists: their default is a different one.
ReadStudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="Study name (default: the most recently run study under --study-root with trials).",
    ),
]
RootOpt = Annotated[
    Path, typer.Option("--study-root", help="Folder holding one sub-folder per study.")
]
StorageOpt = Annotated[
    str | None,
    typer.Option("--storage", help="Optuna storage URL (default: sqlite in the study folder)."),
]


class ExportFormat(StrEnum):
    sh = "sh"
    env = "env"
    json = "json"
    yaml = "yaml"
    docker = "docker"
    k8s = "k8s"


class SamplerKind(StrEnum):
    tpe = "tpe"
    random = "random"


def _version(value: bool) -> None:
    if value:
        console.print(f"autotune {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Log more to stderr: -v what happens (info), -vv everything (debug).",
        ),
    ] = 0,
    log_file: Annotated[
        Path | None,
        typer.Option("--log-file", help="Also write autotune's full log (debug level) here."),
    ] = None,
) -> None:
    """autotune: find the fastest launch configuration of an LLM inference server."""
    _setup_logging(verbose, log_file)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (the live progress view redirects it,
    so log lines print above the table instead of through it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always the current sys.stderr


def _setup_logging(verbose: int, log_file: Path | None) -> None:
    """Send the ``autotune`` loggers to stderr (warnings; -v info; -vv debug) and, given
    ``--log-file``, everything to that file. Other libraries' loggers are left alone."""
    logger = logging.getLogger("autotune")
    for handler in [h for h in logger.handlers if getattr(h, "autotune_cli", False)]:
        logger.removeHandler(handler)  # main() runs more than once in one process (tests)
        handler.close()
    levels = {0: logging.WARNING, 1: logging.INFO}
    stderr = _StderrHandler()
    stderr.setLevel(levels.get(verbose, logging.DEBUG))
    brief = "autotune: %(levelname)s: %(message)s"
    full = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
    stderr.setFormatter(logging.Formatter(full if verbose else brief))
    handlers: list[logging.Handler] = [stderr]
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            to_file = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot write the log file: {exc.strerror}", file=str(log_file)
            ) from exc
        to_file.setLevel(logging.DEBUG)
        to_file.setFormatter(logging.Formatter(full))
        handlers.append(to_file)
    for handler in handlers:
        handler.autotune_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(min(h.level for h in handlers))


@app.command()
def start(
    space: Annotated[Path, typer.Option("--space", help="The search-space YAML file.")],
    study: StudyOpt = None,
    n_trials: Annotated[
        int | None,
        typer.Option(
            "--n-trials",
            min=1,
            help=(
                "Launches of the search the study should hold in total (default: "
                "budget.trials); a resume tops up to it. The baseline counts once: its extra "
                "launches and the confirmation rounds come on top."
            ),
        ),
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="Where trials run: local, ray, or another registered executor's name.",
        ),
    ] = "ray",
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster (auto, host:6379); default local."),
    ] = None,
    parallel: Annotated[
        int | None, typer.Option("--parallel", min=1, help="Trials at once (default: what fits).")
    ] = None,
    mlflow_uri: Annotated[
        str | None, typer.Option("--mlflow-uri", help="MLflow tracking URI (default: ./mlflow).")
    ] = None,
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Do not log to MLflow.")] = False,
    simulate: Annotated[
        bool, typer.Option("--simulate", help="Run the stand-in SGLang server (no GPU needed).")
    ] = False,
    seed: Annotated[int | None, typer.Option("--seed", help="Sampler seed.")] = None,
    sampler: Annotated[
        SamplerKind, typer.Option("--sampler", help="The Optuna sampler.")
    ] = SamplerKind.tpe,
    steer: Annotated[
        bool,
        typer.Option(
            "--steer/--no-steer",
            help="Skip proposals the crash history predicts will crash (crash regions).",
        ),
    ] = True,
    confirm: Annotated[
        int | None,
        typer.Option(
            "--confirm",
            min=0,
            help="Relaunch the top K candidates and the baseline, interleaved, before naming a "
            "winner (0 or --no-confirm: off; default: budget.confirm, else 3).",
        ),
    ] = None,
    no_confirm: Annotated[
        bool, typer.Option("--no-confirm", help="No confirmation rounds (same as --confirm 0).")
    ] = False,
    confirm_rounds: Annotated[
        int | None,
        typer.Option(
            "--confirm-rounds",
            min=2,
            help="Most confirmation rounds, it stops earlier when settled (default: "
            "budget.confirm_rounds, else 5).",
        ),
    ] = None,
    baseline_launches: Annotated[
        int | None,
        typer.Option(
            "--baseline-launches",
            min=1,
            help="Launch the baseline this many times at the start, for its launch-to-launch "
            "noise (default: budget.baseline_launches, else 3).",
        ),
    ] = None,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune/--no-prune",
            help="Stop a trial whose first windows cannot beat the incumbent.",
        ),
    ] = True,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress: only the final result.")
    ] = False,
) -> None:
    """Run (or resume) a study: launch, benchmark and score one server per trial."""
    from autotune.dispatch import EXECUTORS, ExecutorOptions
    from autotune.engines import get_engine
    from autotune.space.load import load
    from autotune.study.driver import Driver, DriverOptions
    from autotune.study.steering import SteeringOptions
    from autotune.tracking import make_tracker
    from autotune.ui import ProgressView

    _quiet_optuna()
    spec = load(space)
    executor_class = EXECUTORS.get_class(executor)
    name = study or spec.name or space.stem
    try:
        engine = get_engine(spec.engine, simulate=simulate)
    except ConfigError as exc:  # the engine cannot be simulated: locate it in the space file
        raise ConfigError(exc.message, file=str(space), field=exc.field) from None
    real_engine = get_engine(spec.engine) if simulate else engine
    study_dir = study_root / name
    _check_writable(study_dir)
    target = n_trials or spec.budget.trials
    if _budget_reached(name, study_dir, storage, target):
        # Nothing to run: say so without starting an executor (Ray: 13 s) or a tracker.
        console.print(
            f"study [cyan]{name}[/] already holds {target} launched trial(s): budget reached; "
            f"raise it with --n-trials N (N > {target}) to run more"
        )
        import optuna

        from autotune.study.storage import open_storage, storage_url

        url = storage_url(storage, study_dir)
        done = optuna.load_study(study_name=name, storage=open_storage(url))
        _final_report(done, name, study_root, storage, mlflow_uri, no_mlflow)
        _report_files(done, study_dir)  # e.g. cut short by Ctrl-C last time
        return
    gpus = engine.gpus(engine.command(spec.model, _all_args(spec), {})[0])
    ex_options = ExecutorOptions(
        gpus_per_trial=gpus,
        parallel=parallel,
        address=ray_address,
        log_dir=str(study_dir / "logs"),
        simulate=simulate,
    )
    here = executor_class.runs_here(ex_options)
    _logger.info("starting executor %s (%s)", executor, ex_options)
    # Ray announces its token-authentication mode on every start: not the user's concern here.
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    # While the executor starts (a local Ray instance: seconds), a helper thread checks the
    # flags, builds the model and opens the tracking store. Ray starts on this thread: the
    # processes it spawns die with the thread that started them.
    helper = ThreadPoolExecutor(1, thread_name_prefix="autotune-start")
    prepared = helper.submit(
        _prepare,
        engine,
        spec,
        here,
        lambda: _resilient(make_tracker(mlflow_uri, enabled=not no_mlflow), name, mlflow_uri),
    )
    helper.shutdown(wait=False)
    with console.status(f"starting executor {executor}"):
        ex = executor_class.create(ex_options)
        try:
            tracker = prepared.result()
            if not here:
                # Elsewhere the engine lives on the machines that run trials: check the flags
                # against its --help there (once; this machine may not even have the engine).
                _preflight(engine, spec, help_text=ex.engine_help(spec.engine, simulate=simulate))
        except BaseException:  # re-raised (a bad flag, Ctrl-C): stop what was started for it
            ex.shutdown()
            raise
    most_rounds = _given(confirm_rounds, spec.budget.confirm_rounds, 5)
    options = DriverOptions(
        study=name,
        study_dir=study_dir,
        storage=storage,
        n_trials=n_trials,
        parallel=parallel,
        simulate=simulate,
        seed=seed,
        sampler=sampler.value,
        steering=SteeringOptions(enabled=steer),
        baseline_launches=_given(baseline_launches, spec.budget.baseline_launches, 3),
        confirm=0 if no_confirm else _given(confirm, spec.budget.confirm, 3),
        confirm_rounds=(min(3, most_rounds), most_rounds),
        prune=prune,
    )
    sim = (
        " [bold magenta]SIMULATED[/] (stand-in SGLang server: figures are modelled)"
        if simulate
        else ""
    )
    console.print(
        f"[bold]autotune[/] study [cyan]{name}[/] · engine {real_engine.name} · "
        f"{_objective_text(spec)} · executor {executor}"
        f" ({ex.capacity()} at once){sim}"
    )
    try:
        driver = Driver(
            spec,
            engine=engine,
            real_engine=real_engine,
            executor=ex,
            tracker=tracker,
            options=options,
        )
        with _ctrl_c(driver):
            if quiet:
                driver.run()
            else:
                with ProgressView(
                    console, spec.objective.metric, simulate, spec.objective.direction
                ) as view:
                    driver.on_event = view
                    driver.run()
    finally:
        ex.shutdown()
    _final_report(driver.study, name, study_root, storage, mlflow_uri, no_mlflow)
    files = _report_files(driver.study, study_dir)
    if not no_mlflow:
        if files:
            tracker.log_artifacts(files)
        _mlflow_lines(tracker, name, mlflow_uri)
    if driver.interrupted:
        resume = shlex.join(["autotune", *sys.argv[1:]]) if sys.argv[1:] else "autotune start"
        err.print(
            "autotune: interrupted; the running trial was stopped and recorded as interrupted. "
            f"Resume with: {resume}",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(130)


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


def _prepare(engine: Engine, spec: StudySpec, here: bool, tracker: Any) -> Any:
    """What a study needs besides its executor: the flags checked against the engine here,
    the model built (once, cached), the tracking store open (a failure to open it is a
    warning: the study goes on). Returns the tracker."""
    if here:
        _preflight(engine, spec)
        engine.prepare(spec.model)  # e.g. the tiny model
    made = tracker()
    made.connect()
    _logger.info("flags checked, model ready, tracking store open")
    return made


def _given(option: int | None, in_space: int | None, default: int) -> int:
    """The command line's value, else the space file's (``budget:``), else the default."""
    if option is not None:
        return option
    return in_space if in_space is not None else default


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


def _resilient(inner: Any, name: str, mlflow_uri: str | None) -> Any:
    """The tracker the driver gets: a tracking failure never stops the study."""
    from autotune.tracking.resilient import ResilientTracker

    def warn(message: str) -> None:
        later = _sync_command(name, mlflow_uri)
        err.print(f"autotune: warning: {message}; when MLflow is back: {later}", markup=False)

    return ResilientTracker(inner, on_error=warn)


def _sync_command(name: str, mlflow_uri: str | None) -> str:
    return (
        "autotune sync --study "
        + shlex.quote(name)
        + (f" --mlflow-uri {shlex.quote(mlflow_uri)}" if mlflow_uri else "")
    )


def _report_files(study: Any, study_dir: Path, *, say: bool = True) -> list[Path]:
    """Write the HTML report, its plots and the best launch script; say where the report is.

    Returns the files written (none, with a warning, when they could not be).
    """
    from autotune import report
    from autotune.export import export as do_export
    from autotune.report_html import write_html

    folder = study_dir / "report"
    try:
        pngs = report.plots(study, folder)
        html = write_html(study, folder, pngs)
        files = [html, *pngs]
        if report.best(study) is not None:
            best = study_dir / "best.sh"
            best.write_text(do_export(study, "sh"))
            files.append(best)
    except (OSError, ValueError, AutotuneError) as exc:  # the study's result stands without them
        err.print(f"autotune: warning: report files not written: {exc}", markup=False)
        return []
    if say:
        console.print(f"  report: {html}", markup=False)
    return files


def _attach_files(study: Any, study_dir: Path, tracker: Any) -> None:
    """The HTML report, its plots and the best launch script, on the study's MLflow run."""
    files = _report_files(study, study_dir, say=False)
    if files:
        tracker.log_artifacts(files)


def _mlflow_lines(tracker: Any, name: str, mlflow_uri: str | None) -> None:
    """Where the runs are, or what is pending when MLflow was unreachable."""
    inner = getattr(tracker, "inner", tracker)
    if getattr(tracker, "down", False):
        console.print(
            f"  MLflow: unreachable during the study ({tracker.missed} record(s) pending); "
            f"when it is back: {_sync_command(name, mlflow_uri)}",
            markup=False,
        )
    elif hasattr(inner, "runs_url") and inner.experiment_id is not None:
        console.print(f"  MLflow runs: {inner.runs_url()}", markup=False)


def _budget_reached(name: str, study_dir: Path, storage: str | None, target: int) -> bool:
    """Whether the study exists, holds ``target`` launched trials and nothing to recover."""
    if storage is None and not (study_dir / "study.db").exists():
        return False
    import optuna

    from autotune.records import budget_launches
    from autotune.study.ledger import Ledger
    from autotune.study.storage import open_storage, storage_url

    try:
        study = optuna.load_study(
            study_name=name, storage=open_storage(storage_url(storage, study_dir))
        )
    except KeyError:  # no such study in that storage: nothing reached
        return False
    ledger = Ledger(study)
    trials = ledger.trials()
    if any(t.state in ("RUNNING", "WAITING") for t in trials):
        return False  # an interrupted trial to recover, or a queued one: the driver's work
    if ledger.confirmation() is None and any(t.confirm_round is not None for t in trials):
        return False  # confirmation cut short (Ctrl-C): the driver runs it again
    return budget_launches(trials) >= target


def _quiet_optuna() -> None:
    """Optuna's own chatter (experimental-argument warnings, study-created lines) is noise here."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _all_args(spec: StudySpec) -> list[str]:
    """Every argument any configuration can produce (for preflight and GPU counting)."""
    args = list(spec.fixed.args)
    for p in spec.parameters:
        if p.flag:
            args.append(p.flag)
        for launch in (p.map or {}).values():
            args.extend(launch.args)
    return args


def _preflight(engine: Engine, spec: StudySpec, help_text: str | None = None) -> None:
    """Check every flag the space can produce against the engine's ``--help`` (given, else
    this machine's when the engine is installed here) or its bundled flag table."""
    from autotune.engines.preflight import engine_help, preflight

    text = help_text if help_text is not None else engine_help(engine)
    findings = preflight(engine, _all_args(spec), help_text=text)
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        if f.level != "error":
            err.print(f"[yellow]preflight:[/] {f.message}")
    if errors:
        raise ConfigError(errors[0].message, file=spec.source, field=f"flag {errors[0].flag}")


def _final_report(
    study: Any, name: str, root: Path, storage: str | None, mlflow_uri: str | None, no_mlflow: bool
) -> None:
    from autotune import report

    console.print(report.status_table(study, console.width), soft_wrap=False)
    failures = report.failure_table(study)
    if failures is not None:
        console.print(failures)
    s = report.summary(study)
    best = report.best(study)
    if best is None:
        console.print("[red]no configuration completed successfully[/]")
        return
    _gain_lines(s, best)
    flags = f" --study {name}" + (f" --study-root {root}" if root != Path("studies") else "")
    flags += f" --storage {storage}" if storage else ""
    console.print(f"  export: autotune export{flags} --format sh")


def _latest_study(root: Path) -> str:
    """The most recently written study under ``root`` that holds a trial.

    A ``start`` stopped before its first trial (bad flags, a busy study) leaves an empty
    study; it must not shadow the one the user ran last.
    """
    import optuna

    dbs = sorted(root.glob("*/study.db"), key=lambda p: p.stat().st_mtime, reverse=True)
    for db in dbs:
        storage = f"sqlite:///{db.resolve()}"
        try:
            summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
        except Exception as exc:  # an unreadable file is not the one the user means
            _logger.info("skipping %s: %s", db, exc)
            continue
        if any(x.study_name == db.parent.name and x.n_trials for x in summaries):
            return db.parent.name
    raise StudyError(f"no study with trials under {root}/; run `autotune start --space FILE` first")


def _gain_lines(s: Any, best: Any) -> None:
    """The answer: what to run, and whether it beats the baseline beyond noise (95% CI)."""
    from functools import partial

    from rich.markup import escape

    from autotune import fmt

    # Wrapped at spaces to the terminal's width (the console soft-wraps: a terminal cuts words).
    print_ = partial(console.print, soft_wrap=False)

    what = "baseline (kept)" if best.baseline and s.gain is not None else "best"
    line = f"[bold green]{what}[/] trial #{best.number}: {s.metric} = {fmt.metric(best.value)}"
    if s.baseline_value is not None and not best.baseline:
        line += f"  vs baseline {fmt.metric(s.baseline_value)}"
    if s.simulated:
        line += "  [bold magenta](simulated)[/]"
    print_(line)
    style = "bold green" if s.beats_baseline else "bold yellow"
    print_(f"  [{style}]{escape(s.verdict)}[/]")
    noise = s.noise or {}
    if noise.get("launch_cv") is not None:
        window = noise.get("window_cv")
        within = f", within a launch {window:.1%}" if window is not None else ""
        print_(
            f"  noise: launch to launch {noise['launch_cv']:.1%}{within} "
            f"({noise.get('launches')} launches, {noise.get('windows')} windows)"
        )
    if s.confirmation:
        c = s.confirmation
        print_(
            f"  confirmation: {c.get('rounds')} round(s), {c.get('launches')} launches, "
            f"{c.get('server_s', 0):,.0f} server-seconds ({c.get('stop_reason')})"
        )
        if c.get("tied") and c.get("winner") not in (None, "baseline"):
            print_(
                f"  tied with the winner within noise: {', '.join(c['tied'])} "
                "(the best median is exported; any of them would do as well)"
            )
    if s.pruned_saved_s:
        print_(f"  early stopping saved {s.pruned_saved_s:,.0f} server-seconds")
    print_(f"  config: {fmt.config_text(best.config) or '(defaults)'}", markup=False)


def _objective_text(spec: Any) -> str:
    """``maximize output_tok_s`` (with several objectives: each, joined by ``and``)."""
    return " and ".join(f"{d} {m}" for m, d in spec.objective.objectives)


def _open_study(study: str | None, root: Path, storage: str | None) -> Any:
    """The study named (the latest under ``root`` when none is), Optuna kept quiet."""
    import optuna

    _quiet_optuna()
    if storage is None:
        if study is None:
            study = _latest_study(root)
        db = root / study / "study.db"
        if not db.exists():
            known = sorted(p.parent.name for p in root.glob("*/study.db"))
            raise StudyError(
                f"no study {study!r} under {root}/ (known: {', '.join(known) or 'none'})"
            )
        storage = f"sqlite:///{db.resolve()}"
    try:
        if study is None:
            names = optuna.get_all_study_names(storage)
            if len(names) != 1:
                raise StudyError(f"name the study with --study (storage holds {names})")
            study = names[0]
        return optuna.load_study(study_name=study, storage=storage)
    except KeyError as exc:
        raise StudyError(f"no study {study!r} in {storage}") from exc


@app.command()
def status(
    study: ReadStudyOpt = None,
    trial: Annotated[
        int | None,
        typer.Option("--trial", min=0, help="Show one trial whole: configuration, command, why."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    pareto: Annotated[
        str | None,
        typer.Option(
            "--pareto",
            help="Also show the Pareto front of the objective against this latency metric "
            "(e.g. ttft_p99_ms); export one with `autotune export --trial N`.",
        ),
    ] = None,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Show a study's trials (state, value, cause) and the best so far."""
    from autotune import report

    s = _open_study(study, study_root, storage)
    if trial is not None:
        _show_trial(s, trial, as_json)
        return
    if as_json:
        rows = [r.to_json() for r in report.rows(s)]
        best = report.best(s)
        out = {
            "study": s.study_name,
            "summary": report.summary(s).model_dump(mode="json"),
            "best": best.number if best else None,
            "trials": rows,
        }
        if pareto:
            from dataclasses import asdict

            from autotune.study.ledger import Ledger
            from autotune.study.pareto import front

            stored = Ledger(s).study_record()
            objectives = [(stored.metric, stored.direction), (pareto, "minimize")]
            points = front(report.rows(s), objectives)
            out["pareto"] = [asdict(p) for p in points]
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
        return
    console.print(report.status_table(s, console.width), soft_wrap=False)
    failures = report.failure_table(s)
    if failures is not None:
        console.print(failures)
    summary = report.summary(s)
    if pareto or summary.pareto is not None:  # asked for, or a multi-objective study
        table = report.pareto_table(s, pareto or None)
        what = pareto or " and ".join(o["metric"] for o in summary.objectives)
        console.print(
            table if table is not None else f"no Pareto front: no ok trial measured {what}"
        )
    best = report.best(s)
    if best is not None and best.value is not None:
        _gain_lines(summary, best)
    if best is not None and best.scenarios:
        from autotune.report_sweep import scenario_lines

        for line in scenario_lines(best):
            console.print(f"  {line}", markup=False)


def _show_trial(s: Any, number: int, as_json: bool) -> None:
    """One trial whole: nothing cut, for when a table had to shorten it."""
    from autotune import report

    found = [r for r in report.rows(s) if r.number == number]
    if not found:
        raise StudyError(f"study {s.study_name!r} has no trial {number} (0..{len(s.trials) - 1})")
    r = found[0]
    argv, env = r.argv, r.env
    if as_json:
        sys.stdout.write(json.dumps(r.to_json(), indent=2, default=str) + "\n")
        return
    from autotune import fmt

    value = f"  {report.objective(s)[0]} = {fmt.metric(r.value)}" if r.value is not None else ""
    p = console.print
    p(f"[bold]trial #{r.number}[/]  {r.label}{value}" + ("  (baseline)" if r.baseline else ""))
    for key, val in r.config.items():
        p(f"  {key} = {fmt.short(val)}", markup=False)
    for label, text in (
        ("skipped", r.skipped),
        ("cause", f"{r.cause} at {r.phase}" if r.cause else None),
        ("message", r.message),
        ("hint", r.hint),
        ("log", r.log_path),
    ):
        if text:
            p(f"{label}: {text}", markup=False)
    from autotune.report_sweep import scenario_lines

    for line in scenario_lines(r):
        p(line, markup=False)
    if env or argv:
        import shlex

        p(
            "command: "
            + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            + (" " if env else "")
            + shlex.join(argv),
            markup=False,
        )


@app.command()
def export(
    study: ReadStudyOpt = None,
    fmt: Annotated[ExportFormat, typer.Option("--format", help="Output format.")] = ExportFormat.sh,
    top: Annotated[
        int, typer.Option("--top", min=1, help="How many configurations, best first.")
    ] = 1,
    port: Annotated[int, typer.Option("--port", help="Port in the exported command.")] = 30000,
    trial: Annotated[
        int | None,
        typer.Option(
            "--trial", help="Export this trial's configuration (e.g. from the Pareto front)."
        ),
    ] = None,
    pareto: Annotated[
        bool,
        typer.Option(
            "--pareto",
            help="Export every member of a multi-objective study's Pareto front "
            "(json/yaml: a list; sh/docker: one function each; k8s: one Deployment each).",
        ),
    ] = False,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Print the best configuration(s): a launch script, env file, JSON, YAML, Docker or k8s."""
    from autotune.export import export as do_export

    s = _open_study(study, study_root, storage)
    text = do_export(s, fmt.value, port=port, trial=trial, top=top, pareto=pareto)
    sys.stdout.write(text.rstrip("\n") + "\n")


@app.command()
def report(
    study: ReadStudyOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for report.html and the PNG plots.")
    ] = None,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Write report.html (self-contained, opens offline) and its PNG plots."""
    from autotune import report as rep
    from autotune.report_html import write_html

    s = _open_study(study, study_root, storage)
    folder = out or (study_root / s.study_name / "report")
    paths = rep.plots(s, folder)
    page = write_html(s, folder, paths)
    console.print(rep.headline(s), markup=False)
    failures = rep.failure_table(s)
    if failures is not None:
        console.print(failures)
    console.print(f"wrote {page}")
    for p in paths:
        console.print(f"wrote {p}")


@app.command()
def sync(
    study: ReadStudyOpt = None,
    mlflow_uri: Annotated[
        str | None, typer.Option("--mlflow-uri", help="MLflow tracking URI (default: ./mlflow).")
    ] = None,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Send a study to MLflow: what it missed while unreachable (sent runs are kept once)."""
    from autotune.records import StudyInfo
    from autotune.study.ledger import Ledger
    from autotune.study.storage import storage_url
    from autotune.study.sync import sync as do_sync
    from autotune.tracking import make_tracker

    s = _open_study(study, study_root, storage)
    rec = Ledger(s).study_record()
    space = rec.space
    engine = space.get("engine") if isinstance(space.get("engine"), dict) else {}
    info = StudyInfo(
        study=s.study_name,
        engine=rec.engine or str((engine or {}).get("name") or ""),
        model=str(space.get("model") or ""),
        metric=rec.metric,
        direction=rec.direction,
        simulated=rec.simulated,
        space_file=rec.space_file or None,
        storage=storage_url(storage, study_root / s.study_name),
        parameters=[str(p.get("name")) for p in space.get("parameters") or []],
        engine_version=str((engine or {}).get("version") or ""),
    )
    tracker = make_tracker(mlflow_uri)
    sent, skipped = do_sync(s, tracker, info)
    _attach_files(s, study_root / s.study_name, tracker)
    console.print(
        f"synced study {s.study_name}: {sent} trial(s), {skipped} skipped proposal(s)", markup=False
    )
    _mlflow_lines(tracker, s.study_name, mlflow_uri)


@app.command()
def validate(
    file: Annotated[
        Path | None, typer.Argument(help="The search-space YAML file.", show_default=False)
    ] = None,
    space_opt: Annotated[
        Path | None,
        typer.Option(
            "--space", help="The same file, named as `start` takes it.", show_default=False
        ),
    ] = None,
) -> None:
    """Check a space file (and its flags against the engine's table); launches nothing."""
    from autotune.engines import get_engine
    from autotune.space.load import check, load

    if file is not None and space_opt is not None:
        raise ConfigError("give the space file once: as FILE or as --space FILE", field="validate")
    space = file or space_opt
    if space is None:
        raise ConfigError(
            "no space file: autotune validate FILE (or --space FILE)", field="validate"
        )
    problems = check(space)
    for problem in problems[:-1]:
        err.print(f"autotune: error: {problem}", markup=False, highlight=False)
    if problems:
        raise problems[-1]
    spec = load(space)
    _preflight(get_engine(spec.engine), spec)
    n = len(spec.parameters)
    console.print(
        f"[green]ok[/] {space}: engine {spec.engine.name}, {n} parameter{'s' * (n != 1)}, "
        f"{len(spec.constraints)} constraint(s), objective {_objective_text(spec)}"
        f"{_scenarios_note(spec)}"
    )


def _scenarios_note(spec: Any) -> str:
    """``, scenarios chat, long (worst)`` or ``, sweep over rate (max_under_slo)``."""
    if spec.scenarios:
        how = spec.combine.how if spec.combine is not None else "weighted_mean"
        return f", scenarios {', '.join(s.name for s in spec.scenarios)} ({how})"
    if spec.sweep is not None:
        return f", sweep over {spec.sweep.over} ({spec.sweep.mode})"
    return ""


@app.command()
def schema() -> None:
    """Print the JSON Schema of space files (for editors)."""
    from autotune.space.load import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")


@app.command()
def diagnose(
    logfile: Annotated[Path, typer.Argument(help="A saved server log.")],
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="An engine name: sglang, vllm, ... or common (default: guessed from the log).",
        ),
    ] = None,
    exit_code: Annotated[
        int | None, typer.Option("--exit-code", help="The server's exit code.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Explain why a server failed: cause, phase, hint and the evidence lines."""
    from rich.markup import escape

    from autotune.engines import ENGINES, guess_engine
    from autotune.node.failures import diagnose_file
    from autotune.rules import load_log

    if not logfile.is_file():
        raise ConfigError("no such file; give the path of a saved server log", file=str(logfile))
    if engine is None:
        with logfile.open(errors="replace") as fh:
            engine = guess_engine(fh.read(1 << 20)) or "common"
        _logger.info("diagnosing %s as a %s log", logfile, engine)
    if engine == "common":  # no engine: the rules every engine shares
        rules = list(load_log("common").rules)
    else:
        try:
            rules = list(ENGINES.get_class(engine).log_profile().rules)
        except ConfigError as exc:
            raise ConfigError(exc.message, field="--engine") from None
    failure = diagnose_file(str(logfile), rules, exit_code=exit_code)
    if failure is None:
        # No rule matched, no exception, no bad exit code: a healthy log, not an "unknown".
        if as_json:
            out_ok: dict[str, Any] = {
                "cause": "ok",
                "phase": None,
                "hint": "",
                "evidence": [],
                "message": "no failure found",
                "rule": None,
                "blame": [],
            }
            sys.stdout.write(json.dumps(out_ok, indent=2) + "\n")
        else:
            console.print("[bold green]ok[/]: no failure found in the log")
        return
    if as_json:
        out = {
            "cause": failure.cause.value,
            "phase": failure.phase.value,
            "hint": failure.hint,
            "evidence": failure.evidence,
            "message": failure.message,
            "rule": failure.rule,
            "blame": failure.blame,
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    # Log text is escaped: a line such as "[TensorRT-LLM][ERROR] ..." is not markup.
    console.print(f"[bold red]{failure.cause.value}[/] at [bold]{failure.phase.value}[/]")
    if failure.message:
        console.print(f"  {escape(failure.message)}")
    if failure.hint:
        console.print(f"[bold]hint:[/] {escape(failure.hint)}")
    for line in failure.evidence:
        console.print(f"  [dim]>[/] {escape(line)}")


def _usage_line(ctx: Any) -> str:
    """``usage: autotune start [OPTIONS] (see: autotune start --help)`` for the failing command."""
    path = (ctx.command_path if ctx is not None else "") or "autotune"
    list_commands = getattr(getattr(ctx, "command", None), "list_commands", None)
    if list_commands is not None:
        names = ", ".join(list_commands(ctx))
        return f"usage: {path} COMMAND [OPTIONS]; commands: {names} (see: {path} --help)"
    return f"usage: {path} [OPTIONS] (see: {path} --help)"


def _usage_error(exc: click_exc.UsageError) -> int:
    """One line naming the problem, one usage hint; exit 2 (the convention for usage errors)."""
    if isinstance(exc, click_exc.NoArgsIsHelpError):
        message = "no command given"
    else:
        # typer validates through pydantic, whose wording leaks in ("Value error, ...").
        message = " ".join(exc.format_message().split()).replace("Value error, ", "")
    err.print(f"autotune: error: {message}", markup=False, highlight=False)
    err.print(_usage_line(exc.ctx), markup=False, highlight=False)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, map errors to one line and an exit code."""
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    try:
        code = app(args=argv, prog_name="autotune", standalone_mode=False)
        if isinstance(code, int):  # typer.Exit(N) comes back as a value without standalone mode
            return code
    except AutotuneError as exc:
        err.print(f"autotune: error: {exc}", markup=False, highlight=False)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:  # Ctrl-C at a prompt: said, not a traceback
        err.print("autotune: aborted")
        return 130
    except click_exc.UsageError as exc:
        return _usage_error(exc)
    except click_exc.ClickException as exc:
        err.print(f"autotune: error: {exc.format_message()}", markup=False, highlight=False)
        return exc.exit_code
    except KeyboardInterrupt:  # before the driver runs (or after): resuming is safe
        err.print("autotune: interrupted; run the same command again to resume the study")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
