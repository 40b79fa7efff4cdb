"""Where a study lives: its Optuna storage, its sampler, and the lock of one driver per study."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import psutil

from autotune.errors import ConfigError, StudyError
from autotune.search import Feasible, Sampler
from autotune.search.sampler import RISK


def storage_url(storage: str | None, study_dir: Path) -> str:
    """The Optuna storage URL: ``storage`` if given, else SQLite in the study folder."""
    return storage or f"sqlite:///{(study_dir / 'study.db').resolve()}"


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """The study storage, with heartbeats so stale RUNNING trials can be told apart.

    Raises:
        StudyError: the storage cannot be opened.
    """
    if url == ":memory:":  # Optuna's in-process storage (bench/search: nothing survives)
        return optuna.storages.InMemoryStorage()
    kwargs: dict[str, Any] = {"heartbeat_interval": 60, "grace_period": 600}
    if url.startswith("sqlite"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    try:
        return optuna.storages.RDBStorage(url, **kwargs)
    except Exception as exc:  # SQLAlchemy, database driver and URL errors alike
        raise StudyError(f"cannot open study storage {url}: {exc}") from exc


def make_sampler(
    name: str,
    seed: int | None,
    parallel: int,
    objectives: int = 1,
    feasible: Feasible | None = None,
    steer: bool = True,
) -> optuna.samplers.BaseSampler:
    """The Optuna sampler named on the command line.

    ``search`` (the default) is ``autotune.search.Sampler`` (docs/search-space.md), told what
    may be proposed at all by ``feasible`` (``steer`` off: crashes do not weigh its
    proposals); ``tpe`` is Optuna's TPE, ``random`` random search.
    With several objectives, ``search`` and ``tpe`` are Optuna's multi-objective TPE: NSGA-II's
    first generation (50 trials by default) is random search, longer than a whole study of
    server launches; TPE models the front from its fifth trial.

    Raises:
        ConfigError: an unknown name.
    """
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name in ("search", "tpe") and objectives > 1:
        return optuna.samplers.TPESampler(
            seed=seed, constant_liar=parallel > 1, n_startup_trials=5, multivariate=True
        )
    if name == "search":
        return Sampler(seed=seed, feasible=feasible, risk=RISK if steer else 0.0)
    if name == "tpe":
        # constant_liar: with several trials in flight, do not propose what is already running.
        return optuna.samplers.TPESampler(
            seed=seed, constant_liar=parallel > 1, n_startup_trials=5, multivariate=True
        )
    raise ConfigError(f"unknown sampler {name!r}; use search, tpe or random", field="--sampler")


@contextmanager
def study_lock(study_dir: Path, study: str) -> Iterator[None]:
    """Hold the study folder's ``driver.lock`` while a driver runs it.

    A lock left by a process that is gone (or by this one) is taken over.

    Raises:
        StudyError: another live process on this host runs the study.
    """
    path = study_dir / "driver.lock"
    if path.exists():
        try:
            held = json.loads(path.read_text())
            pid = int(held["pid"])
            alive = held.get("host") == socket.gethostname() and psutil.pid_exists(pid)
        except (ValueError, KeyError, TypeError):  # a torn or foreign file: not a live lock
            alive = False
        if alive and pid != os.getpid():
            raise StudyError(
                f"study {study!r} is being run by process {pid}; wait for it or stop it first"
            )
    path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


__all__ = ["make_sampler", "open_storage", "storage_url", "study_lock"]
