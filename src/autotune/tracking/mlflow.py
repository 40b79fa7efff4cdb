"""``MlflowTracker``: one parent run per study, one child run per trial.

The only module of autotune that imports ``mlflow``. It talks to the store through
``MlflowClient`` (never the fluent, process-global ``mlflow.start_run``), so that several
studies and threads cannot step on one "active run". Every MLflow error leaves this module
as ``TrackingError``.

Layout in MLflow (what a person sees in the UI): experiment ``autotune``, marked as a model
development experiment so that it opens on its runs (MLflow 3 opens unmarked experiments on
the GenAI traces page). The parent run is named after the study, its settings are params
prefixed ``study.``, its tags say the versions and git revision, and at the end it holds the
space file, the HTML report, the plots and the best launch script. Each proposal is a child
run named for people (``trial 5 · ok · 187.8 output_tok_s``, ``baseline · trial 0 · ok ·
113.2 output_tok_s``, ``trial 1 · crashed: assertion``, ``trial 2 · skipped: constraint``)
with its real start and end, the whole configuration as params (a parameter the
configuration leaves unset shows ``(default)``), only measurements as metrics, and cause,
phase, message and hint in full in its description. Tags: ``autotune.study``,
``autotune.role`` (study, trial, skip), ``autotune.trial``, ``autotune.attempt``,
``autotune.outcome``, ``autotune.baseline``, ``autotune.simulated``, the kind of proposal
that made the trial (``autotune.proposed_by``: design, model, local, tpe, ...), and for
failures ``autotune.cause``, ``autotune.phase``. Skipped proposals end KILLED, failures FAILED.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autotune.core.fmt import clean
from autotune.core.fmt import metric as fmt_metric
from autotune.core.records import SkipLog, StudyInfo, TrialLog
from autotune.core.redact import redact_obj, redact_text
from autotune.core.summary import StudySummary
from autotune.errors import AutotuneError, TrackingError
from autotune.models import Outcome, TrialResult
from autotune.tracking.base import TRACKERS, Tracker, TrackerOptions

# Before mlflow is imported: no "View run at" lines on stdout, no usage telemetry.
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from mlflow.entities import Metric, Param, RunStatus, RunTag  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

for _chatty in ("mlflow", "alembic"):
    # Store migrations and similar chatter go to INFO; the CLI's own output is what matters.
    logging.getLogger(_chatty).setLevel(logging.WARNING)

_logger = logging.getLogger(__name__)

KIND = "custom_model_development"
_MAX_KEY = 250  # MLflow's limit on param/metric/tag names
_MAX_PARAM = 6000  # ... on param values
_MAX_TAG = 5000  # below MLflow's 8000 on tag values
_MAX_HINT = 500
_BATCH = 100  # params or tags per log_batch call
_BAD_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")

TAG_STUDY = "autotune.study"
TAG_ROLE = "autotune.role"
TAG_TRIAL = "autotune.trial"
TAG_ATTEMPT = "autotune.attempt"
TAG_LOGGED = "autotune.logged"  # set last: a child without it was interrupted and is redone
TAG_PARENT = "mlflow.parentRunId"
TAG_NOTE = "mlflow.note.content"  # the run's description in the UI
UNSET = "(default)"  # a parameter the configuration leaves to the engine
# Timing fields that are instants (epoch seconds), not measurements: never metrics.
_INSTANTS = frozenset({"launched_at", "ready_at", "clean_at"})


def resolve_uri(uri: str | None, cwd: Path | None = None) -> tuple[str, str | None]:
    """The tracking URI to use and the artifact location for a new experiment.

    ``None`` is the embedded default: ``sqlite:///<cwd>/mlflow/mlflow.db`` with artifacts in
    ``<cwd>/mlflow/artifacts``. A plain path is a folder (or ``.db`` file) used the same
    way. Other URIs (``http://host:5000``, ``postgresql://...``) are passed through and the
    server or store decides where artifacts go.
    """
    base = (cwd or Path.cwd()).resolve()
    if uri is None:
        uri = str(base / "mlflow")
    if "://" not in uri:
        path = Path(uri).expanduser()
        path = path if path.is_absolute() else base / path
        db = path if path.suffix == ".db" else path / "mlflow.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{db}", (db.parent / "artifacts").as_uri()
    if uri.startswith("sqlite:///") and uri != "sqlite:///:memory:":
        db = Path(uri[len("sqlite:///") :])
        db = db if db.is_absolute() else base / db
        db.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{db}", (db.parent / "artifacts").as_uri()
    return uri, None


@contextmanager
def _wrapped(what: str) -> Iterator[None]:
    """Translate MLflow (and I/O) errors into ``TrackingError`` at this boundary."""
    try:
        yield
    except AutotuneError:
        raise
    except Exception as exc:  # MLflow raises MlflowException, requests, SQLAlchemy, OSError
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrackingError(f"MLflow: {what} failed: {first}") from exc


# Metrics of each sweep step logged as stepped metrics: throughput and latency against load.
_SWEPT = (
    "output_tok_s",
    "request_s",
    "goodput_req_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p99_ms",
    "tpot_p99_ms",
    "e2e_p99_ms",
    "failed",
)


def _name(key: str) -> str:
    return _BAD_NAME.sub("_", str(key))[:_MAX_KEY]


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, dict | list) else str(value)
    # e.g. a storage URL with a password in it
    return redact_text(text)[:_MAX_PARAM]


def _tag_value(value: Any, limit: int = _MAX_TAG) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _flag(value: Any) -> str:
    return "true" if value else "false"


@TRACKERS.register
class MlflowTracker(Tracker):
    """Implements ``Tracker`` on an MLflow store (local SQLite or an ``mlflow server``).

    Args:
        uri: tracking URI (``http://host:5000``, ``sqlite:///path.db``, a folder) or None for
            the embedded store under ``./mlflow``.
        experiment: the MLflow experiment studies are logged to.
        cwd: folder the default store is relative to (the current directory if None).
    """

    name = "mlflow"

    def __init__(
        self, uri: str | None = None, experiment: str = "autotune", *, cwd: Path | None = None
    ) -> None:
        with _wrapped("opening the tracking store"):
            self.uri, self._artifact_location = resolve_uri(uri, cwd)
            self.client = MlflowClient(tracking_uri=self.uri)
        self.experiment = experiment
        self.experiment_id: str | None = None
        self.parent_run_id: str | None = None  # returned by start_study; the ledger keeps it
        self._study: str | None = None
        self._simulated = False
        self._metric = "value"
        self._parameters: list[str] = []
        self._lock = threading.Lock()  # the driver may log finished trials from several threads

    @classmethod
    def create(cls, options: TrackerOptions) -> MlflowTracker:
        """An MLflow tracker on ``options.uri`` (None: ``./mlflow``)."""
        return cls(options.uri, experiment=options.experiment, cwd=options.cwd)

    # -- study ---------------------------------------------------------------------------

    def _ensure_experiment(self) -> str:
        exp = self.client.get_experiment_by_name(self.experiment)
        if exp is None:
            try:
                return str(
                    self.client.create_experiment(
                        self.experiment, artifact_location=self._artifact_location
                    )
                )
            except MlflowException:
                # Another process created it first.
                exp = self.client.get_experiment_by_name(self.experiment)
                if exp is None:
                    raise
        if exp.lifecycle_stage == "deleted":
            self.client.restore_experiment(exp.experiment_id)
        return str(exp.experiment_id)

    def _mark_experiment(self, experiment_id: str) -> None:
        # MLflow 3 opens an unmarked experiment on its (empty) GenAI traces page.
        self.client.set_experiment_tag(experiment_id, "mlflow.experimentKind", KIND)

    def runs_url(self) -> str:
        """Where a person sees the study's runs: the UI page of the experiment's runs."""
        page = f"#/experiments/{self.experiment_id}/runs"
        if self.uri.startswith(("http://", "https://")):
            return f"{self.uri.rstrip('/')}/{page}"
        ui = f"mlflow ui --backend-store-uri {self.uri}"
        if not _has_ui():
            ui = f"pip install mlflow, then {ui}"  # mlflow-skinny: the client, no web UI
        return f"http://127.0.0.1:5000/{page} (after: {ui})"

    def _find_parent(self, study: str, run_id: str | None) -> Any | None:
        if run_id:
            try:
                run = self.client.get_run(run_id)
            except MlflowException as exc:  # deleted, or another store: look it up by tag
                _logger.info("MLflow run %s of study %r not found (%s)", run_id, study, exc)
                run = None
            if (
                run is not None
                and run.info.lifecycle_stage == "active"
                and run.data.tags.get(TAG_STUDY) == study
            ):
                return run
        assert self.experiment_id is not None
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{TAG_ROLE}` = 'study'",
            order_by=["attributes.start_time DESC"],
            max_results=1000,
        )
        # Study names are compared here rather than in the filter: no quoting to get wrong.
        return next((r for r in runs if r.data.tags.get(TAG_STUDY) == study), None)

    def connect(self) -> None:
        """Open the store and its experiment (a new SQLite store runs MLflow's migrations)."""
        with self._lock, _wrapped("opening the tracking store"):
            self._ensure_experiment()

    def start_study(self, info: StudyInfo) -> str | None:
        """Open the study's parent run, reusing it on resume.

        The run to reuse is ``info.run_id`` when it still exists and belongs to the study,
        else the newest run tagged with the study's name; the space file is logged as an
        artifact and ``description`` becomes the run's note.

        Returns:
            The parent run's id.
        """
        study = info.study
        with self._lock, _wrapped(f"starting study {study!r}"):
            self.experiment_id = self._ensure_experiment()
            self._mark_experiment(self.experiment_id)
            self._study = study
            self._simulated = info.simulated
            self._metric = info.metric
            self._parameters = list(info.parameters)
            run = self._find_parent(study, info.run_id)
            tags = {
                TAG_STUDY: study,
                TAG_ROLE: "study",
                "autotune.simulated": _flag(self._simulated),
                "autotune.engine": info.engine,
                **_versions(info.engine_version),
            }
            note = info.description
            if self._simulated:
                note = "SIMULATED: results come from the stand-in server, not hardware. " + note
            if note:
                tags["mlflow.note.content"] = note
            if run is None:
                run = self.client.create_run(self.experiment_id, run_name=study, tags=tags)
                _logger.info("MLflow: study %r recorded as run %s", study, run.info.run_id)
            else:
                _logger.info("MLflow: study %r reopens run %s", study, run.info.run_id)
                self.client.update_run(run.info.run_id, status="RUNNING")
                for key, value in tags.items():
                    self.client.set_tag(run.info.run_id, key, value)
            self.parent_run_id = str(run.info.run_id)
            params = self._study_params(info)
            # Params cannot change once logged; on resume only the new ones are added.
            new = {k: v for k, v in params.items() if k not in run.data.params}
            self._log_batch(self.parent_run_id, params=new)
            if info.space_file and Path(info.space_file).is_file():
                self.client.log_artifact(self.parent_run_id, info.space_file)
            return self.parent_run_id

    @staticmethod
    def _study_params(info: StudyInfo) -> dict[str, str]:
        # "study." keeps them apart from the configuration params in the runs table.
        params = {
            "study.objective_metric": info.metric,
            "study.objective_direction": info.direction,
            "study.engine": info.engine,
            "study.model": info.model,
            "study.parallel": info.parallel,
            "study.space_file": info.space_file,
            "study.storage": info.storage or None,
        }
        return {k: _param_value(v) for k, v in params.items() if v is not None}

    # -- trials --------------------------------------------------------------------------

    def log_trial(self, log: TrialLog) -> None:
        """Log one trial as a child run; a trial/attempt already logged is not logged again.

        The configuration becomes the run's params, the metrics, timings and clean-up its
        metrics, the server log (redacted) an artifact under ``logs/``, and the whole record
        (redacted) the artifact ``trial.json``.
        """
        result = log.result
        if self.parent_run_id is None or self.experiment_id is None:
            raise TrackingError("MLflow: log_trial called before start_study")
        with self._lock, _wrapped(f"logging trial {result.number}"):
            if self._already_logged(result.number, result.attempt):
                return
            timings = result.timings
            start = timings.launched_at or (time.time() - timings.total_s)
            end = timings.clean_at or (start + timings.total_s)
            tags = self._trial_tags(result, log.baseline)
            if log.proposed_by:
                tags["autotune.proposed_by"] = log.proposed_by
            note = _trial_note(result)
            if note:
                tags[TAG_NOTE] = note
            run = self.client.create_run(
                self.experiment_id,
                run_name=self._trial_name(result, log.baseline),
                tags=tags,
                start_time=int(start * 1000),
            )
            run_id = run.info.run_id
            self._log_batch(
                run_id,
                params=self._config_params(log.config),
                metrics=self._trial_metrics(result),
            )
            self._log_windows(run_id, result, start)
            self._log_sweeps(run_id, result, start)
            with tempfile.TemporaryDirectory(prefix="autotune-mlflow-") as tmp:
                if result.log_path and Path(result.log_path).is_file():
                    redacted = Path(tmp) / Path(result.log_path).name
                    _redact_file(Path(result.log_path), redacted)
                    self.client.log_artifact(run_id, str(redacted), artifact_path="logs")
                record = redact_obj(log.model_dump(mode="json"))
                trial_json = Path(tmp) / "trial.json"
                trial_json.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
                self.client.log_artifact(run_id, str(trial_json))
            if result.gpu:  # the study's hardware, on its parent too
                self.client.set_tag(str(self.parent_run_id), "autotune.gpu", result.gpu)
            self.client.set_tag(run_id, TAG_LOGGED, "true")
            self.client.set_terminated(
                run_id, status=_status(result.outcome), end_time=int(end * 1000)
            )

    def _trial_name(self, result: TrialResult, baseline: bool) -> str:
        """``trial 5 · ok · 187.8 output_tok_s``; the baseline says so first."""
        parts = ["baseline", f"trial {result.number}"] if baseline else [f"trial {result.number}"]
        if result.attempt:
            parts.append(f"attempt {result.attempt}")
        metric = self._metric
        value = result.metrics.flat().get(metric) if result.metrics is not None else None
        if result.outcome in (Outcome.OK, Outcome.SLO_VIOLATED) and value is not None:
            parts += [result.outcome.value, f"{fmt_metric(value)} {metric}"]
        elif result.failure is not None:
            parts.append(f"{result.outcome.value}: {result.failure.cause.value}")
        else:
            parts.append(result.outcome.value)
        return " · ".join(parts)

    def _config_params(self, config: dict[str, Any]) -> dict[str, str]:
        """The whole configuration: a parameter it leaves unset shows ``(default)``."""
        params = {_name(k): UNSET for k in self._parameters}
        params.update({_name(k): _param_value(clean(v)) for k, v in config.items()})
        return params

    def log_skip(self, log: SkipLog) -> None:
        """A proposal that was not launched: a KILLED child run whose description says why."""
        if self.parent_run_id is None or self.experiment_id is None:
            raise TrackingError("MLflow: log_skip called before start_study")
        with self._lock, _wrapped(f"logging skipped proposal {log.number}"):
            if self._already_logged(log.number, 0):
                return
            tags = {
                TAG_PARENT: str(self.parent_run_id),
                TAG_STUDY: str(self._study),
                TAG_ROLE: "skip",
                TAG_TRIAL: str(log.number),
                TAG_ATTEMPT: "0",
                "autotune.outcome": Outcome.PRUNED.value,
                "autotune.skip_kind": log.skip.kind.value,
                "autotune.simulated": _flag(self._simulated),
                TAG_NOTE: redact_text(f"Not launched ({log.skip.kind.value}): {log.skip.reason}"),
            }
            name = f"trial {log.number} · skipped: {log.skip.kind.value}"
            run = self.client.create_run(self.experiment_id, run_name=name, tags=tags)
            self._log_batch(run.info.run_id, params=self._config_params(log.config))
            self.client.set_tag(run.info.run_id, TAG_LOGGED, "true")
            self.client.set_terminated(run.info.run_id, status="KILLED")

    def log_artifacts(self, paths: list[Path]) -> None:
        """Attach files (report, plots, launch script) to the study's parent run."""
        if self.parent_run_id is None:
            return
        with self._lock, _wrapped("attaching the study's files"):
            for path in paths:
                if path.is_file():
                    self.client.log_artifact(self.parent_run_id, str(path))

    def _already_logged(self, number: int, attempt: int) -> bool:
        runs = self.client.search_runs(
            [str(self.experiment_id)],
            filter_string=(
                f"tags.`{TAG_PARENT}` = '{self.parent_run_id}' "
                f"AND tags.`{TAG_TRIAL}` = '{number}' AND tags.`{TAG_ATTEMPT}` = '{attempt}'"
            ),
        )
        done = False
        for run in runs:
            if run.data.tags.get(TAG_LOGGED) == "true" and not done:
                done = True
            else:
                # Interrupted half-way (or a stray duplicate): replace it with a complete one.
                self.client.delete_run(run.info.run_id)
        return done

    def _trial_tags(self, result: TrialResult, baseline: bool) -> dict[str, str]:
        failure = result.failure
        tags = {
            TAG_PARENT: str(self.parent_run_id),
            TAG_STUDY: str(self._study),
            TAG_ROLE: "trial",
            TAG_TRIAL: str(result.number),
            TAG_ATTEMPT: str(result.attempt),
            "autotune.outcome": str(result.outcome),
            "autotune.simulated": _flag(result.simulated or self._simulated),
            "autotune.baseline": _flag(baseline),
        }
        if failure is not None:
            tags["autotune.cause"] = str(failure.cause)
            tags["autotune.phase"] = str(failure.phase)
            if failure.hint:
                tags["autotune.hint"] = _tag_value(redact_text(failure.hint), _MAX_HINT)
            if failure.message:
                tags["autotune.message"] = _tag_value(redact_text(failure.message), _MAX_HINT)
        if result.node:
            tags["autotune.node"] = _tag_value(result.node)
        if result.gpu:
            tags["autotune.gpu"] = _tag_value(result.gpu)
        return tags

    def _log_windows(self, run_id: str, result: TrialResult, start: float) -> None:
        """Each measurement window's objective and throughput as a stepped metric
        (``<metric>_by_window``, step = window), so the UI charts how a launch warmed up or
        degraded; the aggregate stays under the metric's own name."""
        keys = dict.fromkeys([self._metric, "output_tok_s"])
        stepped = [
            Metric(_name(f"{key}_by_window"), float(w[key]), int(start * 1000) + step, step)
            for key in keys
            for step, w in enumerate(result.windows)
            if isinstance(w.get(key), int | float) and math.isfinite(w[key])
        ]
        for i in range(0, len(stepped), _BATCH):
            self.client.log_batch(run_id, metrics=stepped[i : i + _BATCH])

    def _log_sweeps(self, run_id: str, result: TrialResult, start: float) -> None:
        """Each load of a sweep as a step of ``[<scenario>.]sweep_<metric>`` (step = its
        place in ascending load; ``sweep_load`` is the load itself, ``sweep_meets_slo``
        1 or 0), so the UI charts throughput and latency against load."""
        stepped: list[Metric] = []
        for scenario in result.scenarios:
            prefix = f"{scenario.name}." if scenario.name else ""
            ordered = sorted(scenario.steps, key=lambda s: s.load)
            for step, point in enumerate(ordered):
                values = {"load": point.load, "meets_slo": 1.0 if point.meets_slo else 0.0}
                values.update({k: point.metrics[k] for k in _SWEPT if k in point.metrics})
                stepped += [
                    Metric(_name(f"{prefix}sweep_{k}"), float(v), int(start * 1000) + step, step)
                    for k, v in values.items()
                    if math.isfinite(v)
                ]
        for i in range(0, len(stepped), _BATCH):
            self.client.log_batch(run_id, metrics=stepped[i : i + _BATCH])

    @staticmethod
    def _trial_metrics(result: TrialResult) -> dict[str, float]:
        metrics: dict[str, float] = {}
        if result.metrics is not None:
            metrics.update(result.metrics.flat())
        for key, value in result.timings.model_dump().items():
            if value is not None and key not in _INSTANTS:
                metrics[f"time_{key}"] = float(value)
        cleanup = result.cleanup
        metrics["cleanup_processes_left"] = float(cleanup.processes_left)
        if cleanup.gpu_mem_before_mib:
            metrics["cleanup_gpu_mem_before_mib"] = max(cleanup.gpu_mem_before_mib)
        if cleanup.gpu_mem_after_mib:
            metrics["cleanup_gpu_mem_after_mib"] = max(cleanup.gpu_mem_after_mib)
        return metrics

    # -- finish --------------------------------------------------------------------------

    def finish(self, summary: StudySummary) -> None:
        """Put the study's summary on the parent run (metrics and best-trial tags) and end it."""
        if self.parent_run_id is None:
            return
        metric = _name(summary.metric)
        metrics: dict[str, float] = {"trials": float(summary.trials)}
        for name, value in (
            (f"best_{metric}", summary.best_value),
            (f"baseline_{metric}", summary.baseline_value),
            ("gain_pct", summary.gain_pct),
        ):
            if value is not None:
                metrics[name] = float(value)
        for outcome, count in summary.outcomes.items():
            metrics[_name(f"n_{outcome}")] = float(count)
        for cause, count in summary.causes.items():
            metrics[_name(f"n_cause_{cause}")] = float(count)
        tags: dict[str, str] = {}
        if summary.best_trial is not None:
            tags["autotune.best_trial"] = str(summary.best_trial)
            tags["autotune.best_config"] = _tag_value(json.dumps(summary.best_config or {}))
            tags["autotune.figures"] = summary.figure_kind.value  # confirmed or search
        if summary.gain is not None:  # the gain with its 95% interval over launches
            lo, hi = summary.gain.ci95_pct
            for name, value in (("gain_ci95_lo_pct", lo), ("gain_ci95_hi_pct", hi)):
                if math.isfinite(value):
                    metrics[name] = float(value)
            metrics["gain_significant"] = 1.0 if summary.gain.significant else 0.0
            metrics["gain_launches_baseline"] = float(summary.gain.launches.baseline)
            metrics["gain_launches_best"] = float(summary.gain.launches.best)
            tags["autotune.gain_significant"] = str(summary.gain.significant).lower()
        if summary.verdict:
            tags["autotune.verdict"] = _tag_value(summary.verdict)
        if summary.confirmation is not None:
            metrics["confirm_rounds"] = float(summary.confirmation.rounds)
            metrics["confirm_launches"] = float(summary.confirmation.launches)
            metrics["confirm_server_s"] = float(summary.confirmation.server_s)
        if summary.ablation is not None:
            for step in summary.ablation.steps:
                if step.contribution is not None:
                    metrics[_name(f"ablation_{step.param}_pct")] = step.contribution.pct
        if summary.pruned_saved_s:
            metrics["pruned_saved_s"] = summary.pruned_saved_s
        if summary.pareto is not None:  # a multi-objective study: its front, to pick from
            tags["autotune.objectives"] = _tag_value(
                ", ".join(f"{o['direction']} {o['metric']}" for o in summary.objectives)
            )
            tags["autotune.pareto_trials"] = _tag_value(
                ",".join(str(p.trial) for p in summary.pareto)
            )
            metrics["pareto_size"] = float(len(summary.pareto))
        with self._lock, _wrapped("finishing the study run"):
            self._log_batch(self.parent_run_id, metrics=metrics, tags=tags)
            # The whole summary, as the report and `autotune status --json` read it.
            self.client.log_dict(
                self.parent_run_id, summary.model_dump(mode="json"), "summary.json"
            )
            if summary.pareto is not None:
                front = [p.model_dump(mode="json") for p in summary.pareto]
                self.client.log_dict(
                    self.parent_run_id,
                    {"objectives": summary.objectives, "front": front},
                    "pareto.json",
                )
            self.client.set_terminated(self.parent_run_id, status="FINISHED")

    # -- helpers -------------------------------------------------------------------------

    def _log_batch(
        self,
        run_id: str,
        *,
        params: dict[str, str] | None = None,
        metrics: dict[str, float] | None = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        now = int(time.time() * 1000)
        p = [Param(k, v) for k, v in (params or {}).items()]
        m = [Metric(_name(k), v, now, 0) for k, v in (metrics or {}).items() if math.isfinite(v)]
        t = [RunTag(k, v) for k, v in (tags or {}).items()]
        for i in range(0, max(len(p), len(m), len(t)), _BATCH):
            self.client.log_batch(
                run_id, metrics=m[i : i + _BATCH], params=p[i : i + _BATCH], tags=t[i : i + _BATCH]
            )


def _status(outcome: Outcome) -> str:
    if outcome in (Outcome.OK, Outcome.SLO_VIOLATED):
        return RunStatus.to_string(RunStatus.FINISHED)
    if outcome == Outcome.PRUNED:
        return RunStatus.to_string(RunStatus.KILLED)
    return RunStatus.to_string(RunStatus.FAILED)


def _redact_file(src: Path, dst: Path) -> None:
    """Copy a server log with secrets masked, line by line (logs can be large)."""
    with (
        src.open(encoding="utf-8", errors="replace") as fin,
        dst.open("w", encoding="utf-8") as fout,
    ):
        for line in fin:
            fout.write(redact_text(line))


def _trial_note(result: TrialResult) -> str:
    """The run's description: outcome, cause, phase, message, hint and evidence, in full."""
    f = result.failure
    if f is None:
        return ""
    lines = [f"**{result.outcome.value}**: {f.cause.value} at {f.phase.value}"]
    if f.message:
        lines.append(f"\n{f.message}")
    if f.hint:
        lines.append(f"\n**Hint:** {f.hint}")
    if f.evidence:
        lines.append("\n**Evidence:**\n```\n" + "\n".join(f.evidence[:20]) + "\n```")
    return redact_text("\n".join(lines))[:_MAX_TAG]


def _has_ui() -> bool:
    """Whether MLflow's web UI is installed (the ``mlflow`` distribution, not only
    ``mlflow-skinny``, whose ``mlflow ui`` fails for want of Flask)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("mlflow")
    except PackageNotFoundError:  # the client alone
        return False
    return True


def _versions(engine_version: str) -> dict[str, str]:
    """Tags for the parent: autotune, MLflow and engine versions, and the git revision."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    tags: dict[str, str] = {}
    # MLflow is installed as mlflow-skinny (the client) or as mlflow (with its web UI).
    for package, names in (
        ("autotune", ["autotune"]),
        ("mlflow", ["mlflow", "mlflow-skinny"]),
        ("optuna", ["optuna"]),
    ):
        for dist in names:
            try:
                tags[f"autotune.version.{package}"] = version(dist)
                break
            except PackageNotFoundError:  # not installed under this name: try the next
                continue
    if engine_version:
        tags["autotune.version.engine"] = engine_version
    try:
        here = Path(__file__).resolve().parent
        rev = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout: no tag
        rev = ""
    if rev:
        tags["mlflow.source.git.commit"] = rev
        tags["autotune.git"] = rev
    return tags
