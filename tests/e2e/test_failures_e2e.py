"""Dead ends, infrastructure retries and the trial budget, through the real driver.

Each test runs the real ``Driver`` (SQLite Optuna storage, the local executor, the node's
``run_trial``) on ``tests/study/servers/toy.py``, a stdlib server whose flags decide whether
it crashes (and how) or serves. Configurations are enqueued through Optuna, so each test
knows exactly what is proposed and in which order.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from tests.conftest import AUTOTUNE
from tests.study.study_helpers import make_driver, toy_space

from autotune.study.ledger import decode_trial

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port something else listens on for the whole test: launching on it is a real clash."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


# backend c/d: "no kernel" (a user rule: arch_unsupported, blames --backend);
# buf > 48: KV-pool OOM (memory failure, buf declared memory: increasing);
# x * y > 5: an unexplained traceback (unknown cause: only the exact configuration is dead).
PARAMS: list[dict[str, Any]] = [
    {
        "name": "backend",
        "type": "categorical",
        "choices": ["a", "b", "c", "d"],
        "flag": "--backend",
    },
    {"name": "x", "type": "float", "low": 0.0, "high": 1.0, "step": 0.1, "flag": "--x"},
    {"name": "y", "type": "int", "low": 1, "high": 8, "flag": "--y"},
    {"name": "buf", "type": "int", "low": 1, "high": 64, "flag": "--buf", "memory": "increasing"},
]
RULES = [
    {
        "id": "toy.no_kernel",
        "pattern": "no kernel for backend",
        "cause": "arch_unsupported",
        "blame": ["--backend"],
        "hint": "drop this backend on this device",
    },
    {
        "id": "toy.kv_pool",
        "pattern": r"Not enough memory\. Please try to increase",
        "cause": "kv_pool_oom",
    },
]


def was_launched(t: optuna.trial.FrozenTrial) -> bool:
    """A server was launched for it (also a trial the pruner stopped after its windows)."""
    return decode_trial(t, "output_tok_s").launched


def _cfg(backend: str = "a", x: float = 0.5, y: int = 2, buf: int = 8) -> dict[str, Any]:
    return {"backend": backend, "x": x, "y": y, "buf": buf}


def _by_number(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    done = [
        t for t in study.get_trials(deepcopy=False) if t.state != optuna.trial.TrialState.WAITING
    ]  # enqueued, never asked
    return sorted(done, key=lambda t: t.number)


def test_dead_ends_are_never_launched_again_and_survive_resume(tmp_path: Path) -> None:
    space = toy_space(tmp_path / "toy.yaml", parameters=PARAMS, rules=RULES)
    study_dir = tmp_path / "studies" / "dead"
    driver = make_driver(space, study_dir, study="dead", seed=3, n_trials=6)
    queue = [
        _cfg("c", y=1),  # 0 crashes: arch_unsupported, blames backend=c
        _cfg("c", x=0.2, y=3),  # 1 skipped: backend=c is blamed
        _cfg("a", x=0.8, y=8),  # 2 crashes: unknown (x*y > 5), not a memory failure
        _cfg("a", x=0.8, y=8),  # 3 skipped: the exact configuration crashed
        _cfg("a", buf=56),  # 4 crashes: kv_pool_oom
        _cfg("a", buf=60),  # 5 skipped: more memory than trial 4 on every knob
        _cfg("b", buf=60),  # 6 launched (and crashes): backend is not monotone
        _cfg("a", buf=40),  # 7 launched (ok): less memory than trial 4
        _cfg("a", x=0.7, y=8),  # 8 launched (crash): only the exact config was dead
    ]
    for cfg in queue:
        driver.study.enqueue_trial(cfg)
    try:
        driver.run()
    finally:
        driver.executor.shutdown()

    trials = _by_number(driver.study)
    outcomes = [t.user_attrs.get("outcome") for t in trials]
    assert outcomes == [
        "crashed",
        "pruned",
        "crashed",
        "pruned",
        "crashed",
        "pruned",
        "crashed",
        "ok",
        "crashed",
    ], [t.user_attrs.get("message") for t in trials]
    causes = [t.user_attrs.get("cause") for t in trials]
    assert causes[0] == "arch_unsupported" and trials[0].user_attrs["blame"] == ["backend='c'"]
    # No rule reads the toy's traceback: the rules say unknown, and the cause learnt from the
    # corpus may guess (node/learned.py); a guess, like unknown, marks its own configuration
    # only (no blamed choice, no memory rule: trial 3 below is skipped as the same one).
    said = trials[2].user_attrs["message"]
    assert causes[2] == "unknown" or said.startswith("learnt from the corpus"), said
    assert "blame" not in trials[2].user_attrs
    assert causes[4] == causes[6] == "kv_pool_oom"
    skipped = {t.number: t.user_attrs["skipped"] for t in trials if "skipped" in t.user_attrs}
    assert "backend='c' caused arch_unsupported in trial 0" in skipped[1]
    assert "same configuration as trial 2" in skipped[3]
    assert "as much memory as trial 4" in skipped[5]
    for t in trials:
        if "skipped" in t.user_attrs:  # told to Optuna as infeasible, so TPE learns from it
            assert t.state == optuna.trial.TrialState.PRUNED
            assert t.user_attrs["cause"] == t.user_attrs["skip_kind"] == "dead_end"
            assert t.system_attrs.get("constraints:skip", 0) > 0
    # No server was started for a skipped trial.
    logs = sorted(p.name for p in (study_dir / "logs").glob("trial-*.log"))
    assert logs == [f"trial-{n:04d}-a0.log" for n in (0, 2, 4, 6, 7, 8)]
    records = driver.study.user_attrs["dead_ends"]
    assert [r["trial"] for r in records] == [0, 2, 4, 6, 8]

    # Resume with the CLI (`autotune start` again, a new process): the dead ends are loaded
    # from the study, so a blamed value, an exact repeat and a dominating configuration queued
    # now are skipped without a launch; one harmless configuration is launched.
    storage = f"sqlite:///{(study_dir / 'study.db').resolve()}"
    study = optuna.load_study(study_name="dead", storage=storage)
    for cfg in (
        _cfg("c", x=0.9, y=1, buf=2),
        _cfg("a", x=0.8, y=8),
        _cfg("a", buf=64),
        _cfg("b", x=0.1, y=1),
    ):
        study.enqueue_trial(cfg)
    env = {"AUTOTUNE_NODE_STATE": str(tmp_path / "node-state"), "PYTHONUNBUFFERED": "1"}
    import os

    proc = subprocess.run(
        AUTOTUNE
        + [
            "start",
            "--space",
            str(space),
            "--study",
            "dead",
            "--n-trials",
            "7",
            "--executor",
            "local",
            "--no-mlflow",
            "--study-root",
            str(tmp_path / "studies"),
            "--seed",
            "3",
        ],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = _by_number(optuna.load_study(study_name="dead", storage=storage))[len(trials) :]
    assert [t.user_attrs.get("outcome") for t in after] == ["pruned", "pruned", "pruned", "ok"]
    assert "backend='c' caused arch_unsupported in trial 0" in after[0].user_attrs["skipped"]
    assert "same configuration as trial 2" in after[1].user_attrs["skipped"]
    assert "as much memory as trial 4" in after[2].user_attrs["skipped"]


def test_infra_failures_are_retried_and_never_blamed_on_the_configuration(
    tmp_path: Path, held_port: int
) -> None:
    params = PARAMS[:3] + [
        {
            "name": "clash",
            "type": "categorical",
            "choices": ["none", "once", "always"],
            "map": {
                "none": {},
                # The server binds a port another process holds: a real EADDRINUSE.
                "once": {
                    "args": [
                        "--clash-port",
                        str(held_port),
                        "--clash-once",
                        str(tmp_path / "clashed-once"),
                    ]
                },
                "always": {"args": ["--clash-port", str(held_port)]},
            },
        }
    ]
    space = toy_space(tmp_path / "toy.yaml", parameters=params, rules=RULES)
    study_dir = tmp_path / "studies" / "infra"
    driver = make_driver(space, study_dir, study="infra", seed=1, n_trials=3, max_infra_retries=2)
    queue = [
        {"backend": "a", "x": 0.5, "y": 2, "clash": "once"},  # 0 infra, retried, then ok
        {"backend": "a", "x": 0.5, "y": 2, "clash": "always"},  # 1 infra x3: given up
        {"backend": "a", "x": 0.5, "y": 2, "clash": "always"},  # 2 not a dead end: tried again
        {"backend": "b", "x": 0.5, "y": 2, "clash": "none"},  # 3 ok
        {"backend": "b", "x": 0.6, "y": 2, "clash": "none"},  # 4 ok: the third launch
        {"backend": "b", "x": 0.7, "y": 2, "clash": "none"},  # 5 not reached: budget is 3
    ]
    for cfg in queue:
        driver.study.enqueue_trial(cfg)
    try:
        driver.run()
    finally:
        driver.executor.shutdown()

    trials = _by_number(driver.study)
    assert [t.user_attrs.get("outcome") for t in trials] == ["ok", "infra", "infra", "ok", "ok"]
    assert trials[0].user_attrs["attempts"] == 1 and trials[0].value is not None
    for t in trials[1:3]:
        assert t.state == optuna.trial.TrialState.FAIL
        assert t.user_attrs["cause"] == "port_in_use" and t.user_attrs["attempts"] == 2
    assert "dead_ends" not in driver.study.user_attrs or driver.study.user_attrs["dead_ends"] == []
    # Every attempt really launched a server and left its log; retries are not trials.
    logs = sorted(p.name for p in (study_dir / "logs").glob("trial-*.log"))
    assert logs == [
        "trial-0000-a0.log",
        "trial-0000-a1.log",
        "trial-0001-a0.log",
        "trial-0001-a1.log",
        "trial-0001-a2.log",
        "trial-0002-a0.log",
        "trial-0002-a1.log",
        "trial-0002-a2.log",
        "trial-0003-a0.log",
        "trial-0004-a0.log",
    ]
    assert "Address already in use" in (study_dir / "logs" / "trial-0000-a0.log").read_text()


def test_n_trials_launches_exactly_n_whatever_is_skipped(tmp_path: Path) -> None:
    # Half of the backends are blamed after one crash and every y > 4 breaks a constraint:
    # many proposals are skipped, yet the study launches exactly --n-trials servers. Random
    # search makes the skips: the default search is told what the constraints and dead ends
    # refuse, and proposes none of it.
    space = toy_space(
        tmp_path / "toy.yaml",
        parameters=PARAMS[:3],
        rules=RULES,
        constraints=["y <= 4"],
    )
    study_dir = tmp_path / "studies" / "budget"
    driver = make_driver(space, study_dir, study="budget", seed=5, n_trials=7, sampler="random")
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    trials = driver.study.get_trials(deepcopy=False)
    launched = [t for t in trials if was_launched(t)]
    skipped = [t for t in trials if "skipped" in t.user_attrs]
    assert len(launched) == 7
    assert skipped, "the space was meant to produce skips"
    assert len(list((study_dir / "logs").glob("trial-*.log"))) == 7
    # A second run with the same budget launches nothing more; a larger one tops it up.
    again = make_driver(space, study_dir, study="budget", seed=5, n_trials=9, sampler="random")
    try:
        again.run()
    finally:
        again.executor.shutdown()
    trials = again.study.get_trials(deepcopy=False)
    assert sum(was_launched(t) for t in trials) == 9


def test_a_repeated_configuration_reuses_its_measurement_and_an_exhausted_space_stops(
    tmp_path: Path,
) -> None:
    """Two configurations in all: each is launched at most ``max_launches_per_config`` times
    (a repeat adds a sample), later proposals reuse the median of its launches (no launch),
    and the study stops instead of asking forever."""
    import statistics

    from autotune.study.driver import MAX_SKIPS_IN_A_ROW

    params = [
        {"name": "backend", "type": "categorical", "choices": ["a", "b"], "flag": "--backend"}
    ]
    space = toy_space(tmp_path / "toy.yaml", parameters=params)
    driver = make_driver(
        space,
        tmp_path / "studies" / "rep",
        study="rep",
        seed=0,
        n_trials=10,
        sampler="random",
        max_launches_per_config=2,
        prune=False,
    )
    driver.run()
    trials = _by_number(driver.study)
    launched = [t for t in trials if was_launched(t)]
    assert sorted(t.user_attrs["config"]["backend"] for t in launched) == ["a", "a", "b", "b"]
    assert all("repeat_of" in t.user_attrs for t in launched[2:])
    reused = [
        t
        for t in trials
        if "median of its launches is reused" in (t.user_attrs.get("skipped") or "")
    ]
    assert trials[-MAX_SKIPS_IN_A_ROW:] == reused[-MAX_SKIPS_IN_A_ROW:]  # then it stopped
    by_backend: dict[str, list[float]] = {}
    for t in launched:
        by_backend.setdefault(t.user_attrs["config"]["backend"], []).append(t.value)
    assert all(
        t.value == statistics.median(by_backend[t.user_attrs["config"]["backend"]]) for t in reused
    )
