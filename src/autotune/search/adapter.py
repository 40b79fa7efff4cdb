"""Every use of Optuna's private attributes, in one place.

Optuna has no public way for a sampler to write an attribute on the trial it is planning
(it holds a ``FrozenTrial``), to read the parameters an enqueued trial was asked to use, or
for a driver that runs the ask-and-tell loop itself to reach the storage of a study and the
storage's id of a trial. Each such access is one function here;
``tests/search/test_search_adapter.py`` exercises every one against the installed Optuna and
fails, naming the version, where a release breaks one. The supported versions are pinned in
pyproject.toml.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.storages import BaseStorage
from optuna.trial import BaseTrial, FrozenTrial

# Optuna's system attribute holding the parameters an enqueued trial must use.
FIXED_PARAMS = "fixed_params"


def storage(study: optuna.Study) -> BaseStorage:
    """The storage a study reads and writes."""
    return study._storage


def trial_id(trial: BaseTrial | FrozenTrial) -> int:
    """A trial's id in its storage (not its number)."""
    return int(trial._trial_id)  # type: ignore[union-attr]


def set_user_attr(
    study: optuna.Study, trial: BaseTrial | FrozenTrial, key: str, value: Any
) -> None:
    """Write a user attribute on a running trial, also one a sampler holds frozen."""
    storage(study).set_trial_user_attr(trial_id(trial), key, value)


def fixed_params(trial: FrozenTrial) -> dict[str, Any] | None:
    """The parameters an enqueued trial was asked to use (None: it was not enqueued)."""
    fixed = trial.system_attrs.get(FIXED_PARAMS)
    return dict(fixed) if isinstance(fixed, dict) else None


def contains(distribution: BaseDistribution, value: Any) -> bool:
    """Whether ``value`` is one of ``distribution``'s values (inside its range, on its step)."""
    try:
        return bool(distribution._contains(distribution.to_internal_repr(value)))
    except (ValueError, TypeError):  # not a value of this kind at all
        return False


def record_heartbeat(store: BaseStorage, trial_id: int) -> bool:
    """Record that a running trial (its storage id) is alive, where the storage keeps
    heartbeats (False: it keeps none, as the in-memory storage)."""
    if not isinstance(store, optuna.storages._heartbeat.BaseHeartbeat):
        return False
    store.record_heartbeat(trial_id)
    return True


__all__ = [
    "FIXED_PARAMS",
    "contains",
    "fixed_params",
    "record_heartbeat",
    "set_user_attr",
    "storage",
    "trial_id",
]
