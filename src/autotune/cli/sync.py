"""``autotune sync``: send a study to MLflow, what it missed while MLflow was unreachable."""

from __future__ import annotations

from autotune.cli.app import app, console
from autotune.cli.options import (
    ROOT,
    MlflowOpt,
    ReadStudyOpt,
    RootOpt,
    StorageOpt,
    StudyRef,
    Tracking,
)
from autotune.cli.output import attach_files, mlflow_lines
from autotune.cli.studies import open_study


@app.command()
def sync(
    study: ReadStudyOpt = None,
    mlflow_uri: MlflowOpt = None,
    study_root: RootOpt = ROOT,
    storage: StorageOpt = None,
) -> None:
    """Send a study to MLflow: what it missed while unreachable (sent runs are kept once)."""
    from autotune.core.records import StudyInfo
    from autotune.study.ledger import Ledger
    from autotune.study.storage import storage_url
    from autotune.study.sync import sync as send
    from autotune.tracking import make_tracker

    ref, tracking = StudyRef(study, study_root, storage), Tracking(mlflow_uri)
    s = open_study(ref)
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
        storage=storage_url(ref.storage, ref.root / s.study_name),
        parameters=[str(p.get("name")) for p in space.get("parameters") or []],
        engine_version=str((engine or {}).get("version") or ""),
    )
    tracker = make_tracker(tracking.uri)
    sent, skipped = send(s, tracker, info)
    attach_files(s, ref.root / s.study_name, tracker)
    console.print(
        f"synced study {s.study_name}: {sent} trial(s), {skipped} skipped proposal(s)", markup=False
    )
    mlflow_lines(tracker, s.study_name, tracking.uri)


__all__ = ["sync"]
