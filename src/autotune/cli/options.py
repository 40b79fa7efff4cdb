"""The options of the commands, grouped: each group is one typed object, built from the same
option declarations by every command that takes it.

``StudyRef`` (which study: ``--study``, ``--study-root``, ``--storage``) is taken by
``status``, ``export``, ``report`` and ``sync``; ``Tracking`` (``--mlflow-uri``,
``--no-mlflow``) by ``start`` and ``sync``; ``Placement``, ``Search`` and ``Claims`` by
``start``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from autotune.space.schema import Budget


class ExportFormat(StrEnum):
    sh = "sh"
    env = "env"
    json = "json"
    yaml = "yaml"
    docker = "docker"
    k8s = "k8s"


class SamplerKind(StrEnum):
    search = "search"
    tpe = "tpe"
    random = "random"


# -- which study --------------------------------------------------------------------------

StudyOpt = Annotated[
    str | None,
    typer.Option("--study", help="Study name (default: the space's name, else the file name)."),
]
# status, export, report and sync read a study that exists: their default is a different one.
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
ROOT = Path("studies")


@dataclass(frozen=True)
class StudyRef:
    """Which study a command reads: its name (None: the latest under ``root``), the folder
    of study folders, and the Optuna storage URL (None: ``root/NAME/study.db``)."""

    name: str | None
    root: Path = ROOT
    storage: str | None = None

    def flags(self, name: str) -> str:
        """`` --study NAME`` and the other options that differ from their defaults."""
        out = f" --study {name}" + (f" --study-root {self.root}" if self.root != ROOT else "")
        return out + (f" --storage {self.storage}" if self.storage else "")


# -- where results are tracked ------------------------------------------------------------

MlflowOpt = Annotated[
    str | None, typer.Option("--mlflow-uri", help="MLflow tracking URI (default: ./mlflow).")
]
NoMlflowOpt = Annotated[bool, typer.Option("--no-mlflow", help="Do not log to MLflow.")]


@dataclass(frozen=True)
class Tracking:
    """Where a study is recorded for people: an MLflow URI (None: ./mlflow), or nowhere."""

    uri: str | None = None
    enabled: bool = True


# -- where trials run ---------------------------------------------------------------------

ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor", help="Where trials run: local, ray, or another registered executor's name."
    ),
]
RayAddressOpt = Annotated[
    str | None, typer.Option("--ray-address", help="Ray cluster (auto, host:6379); default local.")
]
ParallelOpt = Annotated[
    int | None, typer.Option("--parallel", min=1, help="Trials at once (default: what fits).")
]
SimulateOpt = Annotated[
    bool, typer.Option("--simulate", help="Run the stand-in SGLang server (no GPU needed).")
]


@dataclass(frozen=True)
class Placement:
    """Where and how many trials run at once, and whether against the stand-in server."""

    executor: str = "ray"
    address: str | None = None
    parallel: int | None = None
    simulate: bool = False


# -- the search ---------------------------------------------------------------------------

NTrialsOpt = Annotated[
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
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Sampler seed.")]
SamplerOpt = Annotated[SamplerKind, typer.Option("--sampler", help="The Optuna sampler.")]
SteerOpt = Annotated[
    bool,
    typer.Option(
        "--steer/--no-steer",
        help="Skip proposals the crash history predicts will crash (crash regions).",
    ),
]
PruneOpt = Annotated[
    bool,
    typer.Option(
        "--prune/--no-prune", help="Stop a trial whose first windows cannot beat the incumbent."
    ),
]


@dataclass(frozen=True)
class Search:
    """How the search proposes and stops trials (``time_limit``: seconds after which no new
    search trial starts; None: the space's ``budget.time_limit_s``)."""

    n_trials: int | None = None
    seed: int | None = None
    sampler: SamplerKind = SamplerKind.search
    steer: bool = True
    prune: bool = True
    time_limit: float | None = None


# -- what the answer stands on --------------------------------------------------------------

ConfirmOpt = Annotated[
    int | None,
    typer.Option(
        "--confirm",
        min=0,
        help="Relaunch the top K candidates and the baseline, interleaved, before naming a "
        "winner (0 or --no-confirm: off; default: budget.confirm, else 3).",
    ),
]
NoConfirmOpt = Annotated[
    bool, typer.Option("--no-confirm", help="No confirmation rounds (same as --confirm 0).")
]
ConfirmRoundsOpt = Annotated[
    int | None,
    typer.Option(
        "--confirm-rounds",
        min=2,
        help="Most confirmation rounds, it stops earlier when settled (default: "
        "budget.confirm_rounds, else 5).",
    ),
]
BaselineLaunchesOpt = Annotated[
    int | None,
    typer.Option(
        "--baseline-launches",
        min=1,
        help="Launch the baseline this many times at the start, for its launch-to-launch "
        "noise (default: budget.baseline_launches, else 3).",
    ),
]


AblationRoundsOpt = Annotated[
    int,
    typer.Option(
        "--ablation-rounds",
        min=0,
        help="Revert each change of the winner to the baseline's value, one at a time, and "
        "relaunch it interleaved with the winner for this many rounds (0: off).",
    ),
]
AblationLaunchesOpt = Annotated[
    int | None,
    typer.Option(
        "--ablation-launches",
        min=1,
        help="Most launches the ablation may take (default: the search's budget); when it "
        "needs more, it is skipped and the report says so.",
    ),
]


@dataclass(frozen=True)
class Claims:
    """The launches a claim stands on: the baseline's at the start, the confirmation rounds,
    the winner's ablation. ``None``: the space file's ``budget:`` value, else the default
    (see ``settled``)."""

    baseline_launches: int | None = None
    confirm: int | None = None
    confirm_rounds: int | None = None
    ablation_rounds: int = 3
    ablation_launches: int | None = None

    def settled(self, budget: Budget) -> Settled:
        """Each count from the command line, else the space's budget, else its default
        (3 baseline launches, the top 3 confirmed, at most 5 rounds)."""
        return Settled(
            _given(self.baseline_launches, budget.baseline_launches, 3),
            _given(self.confirm, budget.confirm, 3),
            _given(self.confirm_rounds, budget.confirm_rounds, 5),
            self.ablation_rounds,
            self.ablation_launches,
        )


@dataclass(frozen=True)
class Settled:
    """``Claims`` with every count decided: what the driver is given."""

    baseline_launches: int
    confirm: int
    confirm_rounds: int
    ablation_rounds: int
    ablation_launches: int | None


def _given(option: int | None, in_space: int | None, default: int) -> int:
    """The command line's value, else the space file's (``budget:``), else the default."""
    if option is not None:
        return option
    return in_space if in_space is not None else default


__all__ = [
    "Claims",
    "ExportFormat",
    "Placement",
    "SamplerKind",
    "Search",
    "Settled",
    "StudyRef",
    "Tracking",
]
