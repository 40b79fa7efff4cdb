"""The search: an Optuna sampler for objectives that are expensive and crash.

    import optuna
    from autotune.search import CRASH, Sampler

    def objective(trial):
        ...
        if crashed:
            trial.set_user_attr(CRASH, "out of memory")  # how it failed: alike crashes group
            raise optuna.TrialPruned()
        return throughput

    study = optuna.create_study(direction="maximize", sampler=Sampler(seed=0))
    study.enqueue_trial(defaults)  # optional: the screen starts from it
    study.optimize(objective, n_trials=30)

Everything the sampler knows it reads from the study's trials (``sampler.read``), so a study
resumed from its storage proposes what it would have. ``CrashModel`` is the crash regions the
trials show (the study driver refuses what it is sure of before launch).
"""

from autotune.search.crashes import CrashModel
from autotune.search.sampler import (
    CRASH,
    DEFAULTS,
    KIND,
    REFUSED,
    Feasible,
    History,
    Sampler,
    read,
)

__all__ = [
    "CRASH",
    "DEFAULTS",
    "KIND",
    "REFUSED",
    "CrashModel",
    "Feasible",
    "History",
    "Sampler",
    "read",
]
