"""Finding and opening the study a command names (the latest one when it names none)."""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING

from autotune.cli.options import StudyRef
from autotune.errors import StudyError

if TYPE_CHECKING:  # Optuna is imported when a command runs, not for --help
    import optuna

_logger = logging.getLogger(__name__)


def quiet_optuna() -> None:
    """Optuna's own chatter (experimental-argument warnings, study-created lines) is noise here."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def latest_study(ref: StudyRef) -> str:
    """The most recently written study under ``ref.root`` that holds a trial.

    A ``start`` stopped before its first trial (bad flags, a busy study) leaves an empty
    study; it must not shadow the one the user ran last.
    """
    import optuna

    root = ref.root
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


def open_study(ref: StudyRef) -> optuna.Study:
    """The study named (the latest under ``ref.root`` when none is), Optuna kept quiet.

    Raises:
        StudyError: no such study, or several in a storage and none named.
    """
    import optuna

    quiet_optuna()
    study, storage = ref.name, ref.storage
    if storage is None:
        if study is None:
            study = latest_study(ref)
        db = ref.root / study / "study.db"
        if not db.exists():
            known = sorted(p.parent.name for p in ref.root.glob("*/study.db"))
            raise StudyError(
                f"no study {study!r} under {ref.root}/ (known: {', '.join(known) or 'none'})"
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


__all__ = ["latest_study", "open_study", "quiet_optuna"]
