"""Names under which the driver stores what it knows in Optuna storage.

Optuna storage is the study's source of truth (it survives resume); MLflow is a view of it.
Every reader (status, export, report, tracker) reads these keys and nothing else.
"""

# Trial user attributes.
OUTCOME = "outcome"  # models.Outcome value
CAUSE = "cause"  # models.Cause value, failures only
PHASE = "phase"
HINT = "hint"
EVIDENCE = "evidence"  # list[str]
MESSAGE = "message"  # one-line summary of the failure
BLAME = "blame"  # list of "param=value" held responsible
METRICS = "metrics"  # Metrics.flat()
CONFIG = "config"  # {param: value} actually launched (active params only)
ARGV = "argv"  # list[str], secrets redacted
ENV = "env"  # dict[str, str], secrets redacted (only what the configuration sets, not os.environ)
LOG_PATH = "log_path"
BASELINE = "baseline"  # True on the baseline trial
SIMULATED = "simulated"
NODE = "node"
ATTEMPTS = "attempts"  # infra retries
TIMINGS = "timings"
CLEANUP = "cleanup"
SKIPPED = "skipped"  # reason a configuration was not launched (dead end, constraint)
CONSTRAINTS = "constraints"  # list[float], > 0 violated (Optuna constraints_func reads this)

# Study user attributes.
SPACE = "space"  # the StudySpec as JSON (model_dump(mode="json"))
SPACE_FILE = "space_file"
ENGINE = "engine"
OBJECTIVE = "objective"  # {"metric":..., "direction":...}
STUDY_SIMULATED = "simulated"
DEAD_ENDS = "dead_ends"  # list of dead-end records (see study/deadends.py)
MLFLOW_RUN = "mlflow_parent_run_id"
GPU = "gpu"  # the GPU the trial ran on, e.g. "8x NVIDIA H200" (trial, else study)
ENGINE_VERSION = "engine_version"  # the engine's version as the server reported it
