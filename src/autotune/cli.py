"""The ``autotune`` command line.

Every command turns bad input into one line on stderr and a non-zero exit code (the error's
``exit_code``); tracebacks are for bugs only.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from rich.console import Console

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
)
# Piped or logged output gets wide tables (rich assumes 80 columns when not on a terminal).
_WIDTH = None if sys.stdout.isatty() else max(120, int(os.environ.get("COLUMNS", "0") or 0))
console = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)

StudyOpt = Annotated[
    str | None,
    typer.Option("--study", help="Study name (default: the space's name, else the file name)."),
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
    json = "json"
    yaml = "yaml"


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
                "Launched trials the study should hold in total (default: budget.trials); "
                "a resume tops up to it."
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
    sampler: Annotated[str, typer.Option("--sampler", help="tpe or random.")] = "tpe",
    steer: Annotated[
        bool,
        typer.Option(
            "--steer/--no-steer",
            help="Skip proposals the crash history predicts will crash (crash regions).",
        ),
    ] = True,
    confirm: Annotated[
        int,
        typer.Option(
            "--confirm",
            min=0,
            help="Relaunch the top K candidates and the baseline, interleaved, before naming a "
            "winner (0 or --no-confirm: off).",
        ),
    ] = 3,
    no_confirm: Annotated[
        bool, typer.Option("--no-confirm", help="No confirmation rounds (same as --confirm 0).")
    ] = False,
    confirm_rounds: Annotated[
        int,
        typer.Option(
            "--confirm-rounds",
            min=2,
            help="Most confirmation rounds (it stops earlier when settled).",
        ),
    ] = 5,
    baseline_launches: Annotated[
        int,
        typer.Option(
            "--baseline-launches",
            min=1,
            help="Launch the baseline this many times at the start (its launch-to-launch noise).",
        ),
    ] = 3,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune/--no-prune",
            help="Stop a trial whose first windows cannot beat the incumbent.",
        ),
    ] = True,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
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
    gpus = engine.gpus(engine.command(spec.model, _all_args(spec), {})[0])
    ex_options = ExecutorOptions(
        gpus_per_trial=gpus,
        parallel=parallel,
        address=ray_address,
        log_dir=str(study_dir / "logs"),
        simulate=simulate,
    )
    here = executor_class.runs_here(ex_options)
    if here:  # the engine runs here: check its flags before anything starts
        _preflight(engine, spec)
    _logger.info("starting executor %s (%s)", executor, ex_options)
    with console.status(f"starting executor {executor}"):
        ex = executor_class.create(ex_options)
    try:
        if not here:
            # Elsewhere the engine lives on the machines that run trials: check the flags
            # against its --help there (once; this machine may not even have the engine).
            _preflight(engine, spec, help_text=ex.engine_help(spec.engine, simulate=simulate))
        tracker = make_tracker(mlflow_uri, enabled=not no_mlflow)
    except AutotuneError:  # re-raised: stop what was started for the study
        ex.shutdown()
        raise
    options = DriverOptions(
        study=name,
        study_dir=study_dir,
        storage=storage,
        n_trials=n_trials,
        parallel=parallel,
        simulate=simulate,
        seed=seed,
        sampler=sampler,
        steering=SteeringOptions(enabled=steer),
        baseline_launches=baseline_launches,
        confirm=0 if no_confirm else confirm,
        confirm_rounds=(min(3, confirm_rounds), confirm_rounds),
        prune=prune,
    )
    sim = (
        " [bold magenta]SIMULATED[/] (stand-in SGLang server: figures are modelled)"
        if simulate
        else ""
    )
    console.print(
        f"[bold]autotune[/] study [cyan]{name}[/] · engine {real_engine.name} · "
        f"{spec.objective.direction} {spec.objective.metric} · executor {executor}"
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
        with ProgressView(
            console, spec.objective.metric, simulate, spec.objective.direction
        ) as view:
            driver.on_event = view
            driver.run()
    finally:
        ex.shutdown()
    _final_report(driver.study, name, study_root, storage, mlflow_uri, no_mlflow)


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

    console.print(report.status_table(study))
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
    if not no_mlflow:
        uri = mlflow_uri or "sqlite:///mlflow/mlflow.db"
        console.print(f"  compare: mlflow ui --backend-store-uri {uri}")


def _gain_lines(s: Any, best: Any) -> None:
    """The answer: what to run, and whether it beats the baseline beyond noise (95% CI)."""
    what = "baseline (kept)" if best.baseline and s.gain is not None else "best"
    line = f"[bold green]{what}[/] trial #{best.number}: {s.metric} = {best.value:,.2f}"
    if s.baseline_value is not None and not best.baseline:
        line += f"  vs baseline {s.baseline_value:,.2f}"
    if s.simulated:
        line += "  [bold magenta](simulated)[/]"
    console.print(line)
    style = "bold green" if s.beats_baseline else "bold yellow"
    console.print(f"  [{style}]{s.verdict}[/]")
    noise = s.noise or {}
    if noise.get("launch_cv") is not None:
        window = noise.get("window_cv")
        within = f", within a launch {window:.1%}" if window is not None else ""
        console.print(
            f"  noise: launch to launch {noise['launch_cv']:.1%}{within} "
            f"({noise.get('launches')} launches, {noise.get('windows')} windows)"
        )
    if s.confirmation:
        c = s.confirmation
        console.print(
            f"  confirmation: {c.get('rounds')} round(s), {c.get('launches')} launches, "
            f"{c.get('server_s', 0):,.0f} server-seconds ({c.get('stop_reason')})"
        )
    if s.pruned_saved_s:
        console.print(f"  early stopping saved {s.pruned_saved_s:,.0f} server-seconds")
    console.print(f"  config: {best.config}")


def _open_study(study: str | None, root: Path, storage: str | None) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if storage is None:
        if study is None:
            dbs = sorted(root.glob("*/study.db"), key=lambda p: p.stat().st_mtime)
            if not dbs:
                raise StudyError(f"no study under {root}/; run `autotune start --space FILE` first")
            study = dbs[-1].parent.name
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
    study: StudyOpt = None,
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
    console.print(report.status_table(s))
    failures = report.failure_table(s)
    if failures is not None:
        console.print(failures)
    if pareto:
        table = report.pareto_table(s, pareto)
        console.print(
            table if table is not None else f"no Pareto front: no ok trial measured {pareto}"
        )
    summary = report.summary(s)
    best = report.best(s)
    if best is not None and best.value is not None:
        _gain_lines(summary, best)


@app.command()
def export(
    study: StudyOpt = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="sh, json or yaml.")
    ] = ExportFormat.sh,
    port: Annotated[int, typer.Option("--port", help="Port in the exported command.")] = 30000,
    trial: Annotated[
        int | None,
        typer.Option(
            "--trial", help="Export this trial's configuration (e.g. from the Pareto front)."
        ),
    ] = None,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Print the best configuration as a paste-able launch command (or JSON/YAML)."""
    from autotune.export import export as do_export

    s = _open_study(study, study_root, storage)
    sys.stdout.write(do_export(s, fmt.value, port=port, trial=trial).rstrip("\n") + "\n")


@app.command()
def report(
    study: StudyOpt = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for plots.")] = None,
    study_root: RootOpt = Path("studies"),
    storage: StorageOpt = None,
) -> None:
    """Write plots (history, importances, outcomes) and print the failure table."""
    from autotune import report as rep

    s = _open_study(study, study_root, storage)
    folder = out or (study_root / s.study_name / "plots")
    paths = rep.plots(s, folder)
    console.print(rep.status_table(s))
    failures = rep.failure_table(s)
    if failures is not None:
        console.print(failures)
    for p in paths:
        console.print(f"wrote {p}")


@app.command()
def validate(space: Annotated[Path, typer.Argument(help="The search-space YAML file.")]) -> None:
    """Check a space file (and its flags against the engine's table); launches nothing."""
    from autotune.engines import get_engine
    from autotune.space.load import check, load

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
        f"{len(spec.constraints)} constraint(s), objective {spec.objective.direction} "
        f"{spec.objective.metric}"
    )


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


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, map errors to one line and an exit code."""
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    try:
        app(args=argv, prog_name="autotune", standalone_mode=False)
    except AutotuneError as exc:
        err.print(f"autotune: error: {exc}", markup=False, highlight=False)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:  # Ctrl-C at a prompt: said, not a traceback
        err.print("autotune: aborted")
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except KeyboardInterrupt:  # the driver stopped; resume is safe
        err.print("autotune: interrupted; run the same command again to resume the study")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
