"""The executor contract (``dispatch.base.Executor``), one suite run against every executor.

As Optuna runs one storage suite against every backend: each test gets an executor built
by name from the registry, on real machinery (threads on this host; a real local Ray
instance with 2 CPUs and 2 logical GPUs). A newly registered executor fails
``test_every_registered_executor_is_in_this_suite`` until it gets a set-up here.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.dispatch.dispatch_helpers import POLITE, alive, launch, wait_for

from autotune.dispatch import EXECUTORS, Executor, ExecutorOptions, make_executor, study_key
from autotune.errors import ConfigError, DispatchError
from autotune.models import Cause, Limits, Outcome, TrialSpec, Workload
from autotune.node.process import DRIVER_ENV, STUDY_ENV, STUDY_KEY_ENV, TOKEN_ENV
from autotune.rules import load_rules
from autotune.space.schema import EngineSpec

WAIT_S = 90.0  # a bound for short trials on a loaded machine, not a timing assertion
TOY = Path(__file__).resolve().parents[1] / "study" / "servers" / "toy.py"
MARKERS = (STUDY_ENV, STUDY_KEY_ENV, DRIVER_ENV, TOKEN_ENV)

# A job that prints its marker environment and its GPUs, optionally waits until `n` trials
# have registered in a barrier folder (all running at once), then prints its metrics.
JOB = """
import json, os, sys, time
from pathlib import Path
print("ENV " + json.dumps({k: os.environ.get(k) for k in sys.argv[1].split(",")}), flush=True)
print("GPUS " + os.environ.get("CUDA_VISIBLE_DEVICES", ""), flush=True)
if len(sys.argv) > 2:
    barrier, n = Path(sys.argv[2]), int(sys.argv[3])
    (barrier / str(os.getpid())).touch()
    deadline = time.time() + 60
    while len(list(barrier.iterdir())) < n and time.time() < deadline:
        time.sleep(0.05)
print("AUTOTUNE_METRICS " + json.dumps({"together": float(len(list(barrier.iterdir())) >= n)
                                        if len(sys.argv) > 2 else 1.0}))
"""


@dataclass
class Case:
    """One executor under test and what the test needs to know about where it runs."""

    name: str
    make: Callable[..., Executor]  # keyword overrides of ExecutorOptions -> executor
    state: Path  # the node state folder its trials use (where the reaper looks)


def _local(tmp_path: Path, node_state: Path, request: pytest.FixtureRequest) -> Case:
    def make(**kw: Any) -> Executor:
        if kw.get("gpus_per_trial"):
            # Two GPUs as this machine shows them; the executor only hands out their ids.
            request.getfixturevalue("monkeypatch").setenv("CUDA_VISIBLE_DEVICES", "0,1")
        return make_executor("local", ExecutorOptions(**{"gpus_per_trial": 0, **kw}))

    return Case("local", make, node_state)


def _ray(tmp_path: Path, node_state: Path, request: pytest.FixtureRequest) -> Case:
    local_ray = request.getfixturevalue("local_ray")
    log_dir = str(tmp_path / "driver-logs")

    def make(**kw: Any) -> Executor:
        options = {"gpus_per_trial": 0, "log_dir": log_dir, **kw}
        return make_executor("ray", ExecutorOptions(**options))

    return Case("ray", make, local_ray.state)


SETUPS = {"local": _local, "ray": _ray}


# Ray starts a local instance (seconds, two cores' worth): the slow tier.
@pytest.fixture(
    params=[pytest.param(k, marks=pytest.mark.slow) if k == "ray" else k for k in sorted(SETUPS)]
)
def case(request: pytest.FixtureRequest, tmp_path: Path, node_state: Path) -> Iterator[Case]:
    built: list[Executor] = []
    base = SETUPS[request.param](tmp_path, node_state, request)

    def make(**kw: Any) -> Executor:
        ex = base.make(**kw)
        built.append(ex)
        return ex

    yield Case(base.name, make, base.state)
    for ex in built:
        ex.shutdown()


def job(tmp_path: Path, number: int, *args: str, gpus: int = 0, **kw: Any) -> TrialSpec:
    return TrialSpec(
        study="contract",
        number=number,
        engine="command",
        params={},
        mode="job",
        argv=[sys.executable, "-c", JOB, ",".join(MARKERS), *args],
        gpus=gpus,
        log_dir=str(tmp_path / "logs"),
        limits=Limits(benchmark_s=60, teardown_grace_s=2, gpu_release_s=0),
        **kw,
    )


def log_value(path: str | None, prefix: str) -> str:
    assert path is not None and Path(path).is_file(), path
    for line in Path(path).read_text().splitlines():
        if line.startswith(prefix + " "):
            return line[len(prefix) + 1 :]
    raise AssertionError(f"no {prefix!r} line in {path}")


# -- the registry -----------------------------------------------------------------------------


def test_every_registered_executor_is_in_this_suite() -> None:
    assert set(EXECUTORS) == set(SETUPS)
    for name, cls in EXECUTORS.items():
        assert issubclass(cls, Executor) and cls.name == name


def test_an_unknown_executor_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown executor 'slurm'.*local, ray"):
        make_executor("slurm", ExecutorOptions(gpus_per_trial=0))


# -- the contract -----------------------------------------------------------------------------


def test_a_trial_comes_back_with_its_log_on_the_driver_and_its_markers(
    case: Case, tmp_path: Path
) -> None:
    ex = case.make()
    assert ex.capacity() >= 1
    spec = job(tmp_path, 1)
    result = ex.submit(spec).result(timeout=WAIT_S)
    assert result.outcome is Outcome.OK, result.failure
    assert (result.study, result.number, result.attempt) == ("contract", 1, 0)
    assert result.node
    env = json.loads(log_value(result.log_path, "ENV"))
    assert env[STUDY_ENV] == "contract"
    assert env[STUDY_KEY_ENV] == study_key(spec.log_dir)
    assert env[DRIVER_ENV] == ex.driver_id
    assert env[TOKEN_ENV]


def test_a_crash_is_a_result_not_an_exception(case: Case, tmp_path: Path) -> None:
    ex = case.make()
    spec = job(tmp_path, 2).model_copy(
        update={"argv": [sys.executable, "-c", "raise SystemExit('boom')"]}
    )
    result = ex.submit(spec).result(timeout=WAIT_S)
    assert result.outcome is Outcome.CRASHED and result.failure is not None


def test_trials_at_once_get_gpus_no_other_trial_holds(case: Case, tmp_path: Path) -> None:
    ex = case.make(gpus_per_trial=1)
    assert ex.capacity() == 2
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    futures = [ex.submit(job(tmp_path, n, str(barrier), "2", gpus=1)) for n in (3, 4)]
    results = [f.result(timeout=WAIT_S) for f in futures]
    assert [r.outcome for r in results] == [Outcome.OK] * 2, [r.failure for r in results]
    assert all(r.metrics and r.metrics.extra["together"] == 1.0 for r in results)
    gpus = [log_value(r.log_path, "GPUS").split(",") for r in results]
    assert [len(g) for g in gpus] == [1, 1] and gpus[0] != gpus[1]


def test_an_infrastructure_failure_is_returned_not_retried_and_the_retry_runs(
    case: Case, tmp_path: Path
) -> None:
    ex = case.make()
    once = tmp_path / "clashed-once"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        # The toy server binds the held port on its first launch only: a retry inside the
        # executor would succeed, so an infra result proves the executor did not retry.
        argv = [sys.executable, str(TOY), "--port", "{port}",
                "--clash-port", str(held.getsockname()[1]), "--clash-once", str(once)]  # fmt: skip
        spec = TrialSpec(
            study="contract",
            number=5,
            engine="command",
            params={},
            argv=argv,
            rules=load_rules("common"),
            log_dir=str(tmp_path / "logs"),
            limits=Limits(startup_s=30, benchmark_s=30, teardown_grace_s=2, gpu_release_s=0),
            workload=Workload(concurrency=1, num_requests=2, output_len=4, warmup_requests=0),
        )
        lost = ex.submit(spec).result(timeout=WAIT_S)
        assert lost.outcome is Outcome.INFRA, lost.failure
        assert lost.failure is not None and lost.failure.cause is Cause.PORT_IN_USE
        assert not lost.failure.permanent and lost.node and lost.attempt == 0
        # The caller's retry: the next attempt, avoiding the node. With no other node that
        # can hold it, it runs there anyway.
        retry = spec.model_copy(update={"attempt": 1, "avoid_nodes": [lost.node]})
        again = ex.submit(retry).result(timeout=WAIT_S)
    assert again.outcome is Outcome.OK, again.failure
    assert again.attempt == 1 and again.node == lost.node


def test_shutdown_cancels_queued_trials_leaves_no_process_and_refuses_more(
    case: Case, tmp_path: Path
) -> None:
    ex = case.make()
    assert ex.capacity() == 1
    pids = tmp_path / "pids"
    pids.mkdir()
    sleeper = f"import os, time; open('{pids}/' + str(os.getpid()), 'w').close(); time.sleep(3)"
    ex.submit(job(tmp_path, 6).model_copy(
        update={"argv": [sys.executable, "-c", sleeper]}))  # fmt: skip
    queued = ex.submit(job(tmp_path, 7))
    pid = int(wait_for(lambda: list(pids.iterdir()), WAIT_S, "the first trial to start")[0].name)
    ex.shutdown()
    ex.shutdown()  # idempotent
    assert queued.cancelled() or queued.done()
    wait_for(lambda: not alive(pid), 15, "the running trial's process to be gone")
    with pytest.raises(DispatchError, match="shut down"):
        ex.submit(job(tmp_path, 8))


def test_reap_orphans_kills_a_server_an_earlier_driver_run_of_the_study_left(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ex = case.make()
    log_dir = str(tmp_path / "study-logs")
    # The launcher puts its server on record where this executor's reaper looks.
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(case.state))
    env = {
        STUDY_ENV: "contract",
        STUDY_KEY_ENV: study_key(log_dir),
        DRIVER_ENV: "elsewhere:1:1.0",  # an earlier run of the driver
    }
    launcher, started = launch(POLITE, tmp_path / "left.log", env)
    try:
        assert alive(started["pid"])
        reaped = ex.reap_orphans(log_dir)
        mine = [o for o in reaped if o["pid"] == started["pid"]]
        assert len(mine) == 1 and mine[0]["node"]
        assert started["pid"] in mine[0]["killed"]
        wait_for(lambda: not alive(started["pid"]), 10, "the orphan to die")
        assert [o for o in ex.reap_orphans(log_dir) if o["pid"] == started["pid"]] == []
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()


def test_reap_orphans_after_shutdown_answers_without_raising(case: Case, tmp_path: Path) -> None:
    """A study stopped by Ctrl-C shuts its executor down, then reaps once more: on the GPU
    machine (2026-12-06) Ray's reaper raised "Ray has not been started yet" there."""
    ex = case.make()
    assert ex.submit(job(tmp_path, 9)).result(timeout=WAIT_S).outcome is Outcome.OK
    ex.shutdown()
    if case.name == "ray":  # as an executor that started its own Ray leaves it: shut down
        import ray

        ray.shutdown()
    assert isinstance(ex.reap_orphans(str(tmp_path / "study-logs")), list)


def test_engine_help_is_read_where_trials_run(case: Case) -> None:
    ex = case.make()
    command = EngineSpec(name="command", command=["server", "--port", "{port}"])
    assert ex.engine_help(command) is None  # no --help command: nothing to read
    text = ex.engine_help(EngineSpec(name="collective"))
    assert text is not None and "--sizes" in text


def test_the_window_hook_is_called_live_and_prunes_and_windows_come_back(
    case: Case, tmp_path: Path
) -> None:
    ex = case.make()
    seen: list[int] = []

    def stop_after_the_first(index: int, flat: dict[str, float]) -> bool:
        seen.append(index)
        return True

    spec = TrialSpec(
        study="contract",
        number=9,
        engine="command",
        params={},
        argv=[sys.executable, str(TOY), "--port", "{port}"],
        rules=load_rules("common"),
        log_dir=str(tmp_path / "logs"),
        limits=Limits(startup_s=30, benchmark_s=30, teardown_grace_s=2, gpu_release_s=0),
        workload=Workload(
            concurrency=1, num_requests=2, output_len=4, warmup_requests=0, windows=3
        ),
    )
    result = ex.submit(spec, on_window=stop_after_the_first).result(timeout=WAIT_S)
    # Called live wherever the trial runs (Ray: through the window relay): it stops after one.
    assert seen == [0]
    assert result.outcome is Outcome.PRUNED and len(result.windows) == 1
    # Without a hook every window is measured and comes back with the result.
    whole = ex.submit(spec.model_copy(update={"number": 10})).result(timeout=WAIT_S)
    assert whole.outcome is Outcome.OK, whole.failure
    assert len(whole.windows) == 3 and seen == [0]
