"""Every Optuna private attribute autotune uses (``search/adapter.py``), against the installed
Optuna, on both storages autotune opens: a release that breaks one fails here, by name, with
the version, before a study does."""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from autotune.search import adapter

VERSION = f"Optuna {optuna.__version__}"
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")


@pytest.fixture(params=["memory", "sqlite"])
def study(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[optuna.Study]:
    storage: optuna.storages.BaseStorage
    if request.param == "memory":
        storage = optuna.storages.InMemoryStorage()
    else:
        storage = optuna.storages.RDBStorage(
            f"sqlite:///{tmp_path / 'study.db'}", heartbeat_interval=60, grace_period=600
        )
    yield optuna.create_study(storage=storage)


def test_a_trial_s_storage_id_and_user_attributes_are_reached(study: optuna.Study) -> None:
    trial = study.ask()
    frozen = study.get_trials(deepcopy=False)[-1]
    assert adapter.trial_id(trial) == adapter.trial_id(frozen), VERSION
    store = adapter.storage(study)
    assert isinstance(store, optuna.storages.BaseStorage), VERSION
    adapter.set_user_attr(study, frozen, "kind", "design")  # as a sampler holds it: frozen
    assert store.get_trial(adapter.trial_id(trial)).user_attrs["kind"] == "design", VERSION
    # no error where the storage keeps none; recorded where it does
    kept = adapter.record_heartbeat(store, adapter.trial_id(trial))
    assert kept == (not isinstance(store, optuna.storages.InMemoryStorage)), VERSION


def test_an_enqueued_trial_s_parameters_are_read(study: optuna.Study) -> None:
    study.enqueue_trial({"x": 3})
    study.ask()
    frozen = study.get_trials(deepcopy=False)[-1]
    assert adapter.fixed_params(frozen) == {"x": 3}, VERSION
    study.ask()
    assert adapter.fixed_params(study.get_trials(deepcopy=False)[-1]) is None, VERSION


def test_a_distribution_says_which_values_are_its_own() -> None:
    assert adapter.contains(IntDistribution(1, 8), 3), VERSION
    assert not adapter.contains(IntDistribution(1, 8), 9), VERSION
    assert not adapter.contains(IntDistribution(64, 512, step=32), 70), VERSION
    assert adapter.contains(FloatDistribution(0.5, 0.95, step=0.05), 0.85), VERSION
    assert not adapter.contains(FloatDistribution(0.5, 0.95), 0.99), VERSION
    assert adapter.contains(CategoricalDistribution(["a", False]), False), VERSION
    assert not adapter.contains(CategoricalDistribution(["a", "b"]), "c"), VERSION


def test_heartbeats_reach_a_storage_that_keeps_them(tmp_path: Path) -> None:
    """A trial with a heartbeat older than the grace period is stale (Optuna fails it): the
    heartbeat was recorded."""
    storage = optuna.storages.RDBStorage(
        f"sqlite:///{tmp_path / 'hb.db'}", heartbeat_interval=1, grace_period=1
    )
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    assert adapter.record_heartbeat(adapter.storage(study), adapter.trial_id(trial)), VERSION
    time.sleep(2.5)  # the storage keeps whole seconds: older than 1 s needs 2 s to pass
    optuna.storages.fail_stale_trials(study)
    assert study.trials[0].state == optuna.trial.TrialState.FAIL, VERSION


SRC = Path(__file__).resolve().parents[2] / "src" / "autotune"
ADAPTER = SRC / "search" / "adapter.py"


def _uses_optuna(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "optuna" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "optuna":
            return True
    return False


def test_no_module_but_the_adapter_reaches_a_private_attribute() -> None:
    """In every module that imports Optuna (the adapter aside): no ``x._name`` on anything
    but ``self`` or ``cls``, and no import from one of Optuna's private modules."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == ADAPTER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _uses_optuna(tree):
            continue
        for node in ast.walk(tree):
            where = f"{path.relative_to(SRC)}:{getattr(node, 'lineno', 0)}"
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if module.startswith("optuna") and any(p.startswith("_") for p in module.split(".")):
                found.append(f"{where} from {node.module} import")
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__") or ast.unparse(node) == "os._exit":
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"{where} {ast.unparse(node)}")
    assert found == [], "private attributes outside search/adapter.py: " + ", ".join(found)


def test_the_installed_optuna_is_one_the_pinned_range_admits() -> None:
    """pyproject.toml pins the Optuna versions tested, with an upper bound; running against
    one outside them says so here, not as a wrong proposal later."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [Requirement(r) for r in project["project"]["dependencies"]]
    (optuna_pin,) = [r for r in pins if r.name == "optuna"]
    assert any(s.operator in ("<", "<=", "~=", "==") for s in optuna_pin.specifier)
    assert optuna_pin.specifier.contains(optuna.__version__), (
        f"{VERSION} is outside the tested range {optuna_pin.specifier} (pyproject.toml)"
    )
