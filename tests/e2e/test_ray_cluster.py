"""Ray across GPU nodes, on a real multi-node Ray cluster on loopback.

One head (no GPU) and two worker nodes, each a real raylet process advertising 8 logical GPUs
and the ``autotune_gpu_node`` resource, as ``ray_cluster.yaml`` makes them. Trials run the
stand-in SGLang server (TP 8: one trial per node). Real Optuna storage (SQLite), a real MLflow
store (SQLite), ``autotune start`` as a subprocess. Nodes and drivers are killed with SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import psutil
import pytest
import yaml
from tests.conftest import AUTOTUNE, ROOT

from autotune.dispatch.ray import GPU_NODE_RESOURCE, RayExecutor
from autotune.errors import PlacementError
from autotune.models import Limits, Outcome, TrialSpec
from autotune.node.process import STUDY_ENV, registered_servers

pytestmark = pytest.mark.slow

SYSTEM_CONFIG = {
    # Node death noticed in about 2 s instead of Ray's default 15 s or more.
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 4,
    # Ray kills the direct children of a worker that exits cleanly; not those of a worker
    # that is SIGKILLed, nor what they spawned (SGLang's schedulers). Off, so that these
    # tests see autotune's own guards (the kernel's parent-death signal, the reaper).
    "kill_child_processes_on_worker_exit": False,
}
RUN_LIMIT_S = 240


class Loopback:
    """The cluster, and which of its raylets a process runs under."""

    def __init__(self, cluster: Any, state: Path) -> None:
        self.cluster = cluster
        self.state = state

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def workers(self) -> list[Any]:
        return list(self.cluster.worker_nodes)

    def add_worker(self) -> Any:
        return self.cluster.add_node(
            num_cpus=2, num_gpus=8, resources={GPU_NODE_RESOURCE: 1}, wait=True
        )

    def node_of(self, pid: int) -> Any | None:
        """The worker node whose raylet ``pid`` descends from (a trial server's node)."""
        raylets = {n.all_processes["raylet"][0].process.pid: n for n in self.workers()}
        try:
            for parent in psutil.Process(pid).parents():
                if parent.pid in raylets:
                    return raylets[parent.pid]
        except psutil.Error:
            return None
        return None


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    """A head and two 8-GPU worker nodes, shared by this module's tests (Ray starts slowly)."""
    from ray.cluster_utils import Cluster

    state = tmp_path_factory.mktemp("node-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTUNE_NODE_STATE", str(state))  # the nodes' state folder (inherited)
        head = {"num_cpus": 1, "num_gpus": 0, "include_dashboard": False}
        cluster = Cluster(
            initialize_head=True, head_node_args={**head, "_system_config": SYSTEM_CONFIG}
        )
        try:
            box = Loopback(cluster, state)
            for _ in range(2):
                box.add_worker()
            cluster.wait_for_nodes()
            yield box
        finally:
            cluster.shutdown()


@pytest.fixture
def connected(loopback: Loopback) -> Iterator[Loopback]:
    """This test process as a Ray driver of the cluster."""
    import ray

    if ray.is_initialized():
        # An instance another test module of this process joined or left: drive this cluster.
        ray.shutdown()
    ray.init(
        address=loopback.address,
        log_to_driver=False,
        configure_logging=False,
        logging_level="ERROR",
    )
    try:
        yield loopback
    finally:
        ray.shutdown()


# -- helpers -------------------------------------------------------------------------------


def servers(study: str) -> list[psutil.Process]:
    """Live stand-in servers of ``study`` (marked by the study's name in their environment)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "autotune.sim" not in " ".join(proc.info["cmdline"] or []):
                continue
            if proc.environ().get(STUDY_ENV) == study and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def registered(study: str) -> tuple[psutil.Process, dict[str, Any]] | None:
    """A live stand-in server of ``study`` and the node runner's record of it, once both
    exist."""
    records = {r["pid"]: r for r in registered_servers()}
    return next(((s, records[s.pid]) for s in servers(study) if s.pid in records), None)


def wait_for(predicate: Any, limit_s: float, what: str, proc: subprocess.Popen[str]) -> Any:
    deadline = time.monotonic() + limit_s
    while True:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"autotune exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit_s:g} s waiting for {what}")
        time.sleep(0.1)


def small_space(tmp_path: Path, **fixed: Any) -> Path:
    """The campaign's space with a workload the stand-in server runs in a few seconds."""
    space = yaml.safe_load((ROOT / "search_spaces" / "verify.yaml").read_text())
    space["workload"].update(num_requests=4, output_len=16, prompt_len=32, warmup_requests=0)
    if fixed:
        space["fixed"].update(fixed)
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space))
    return path


def steady_space(tmp_path: Path) -> Path:
    """``small_space`` cut to two settings the stand-in serves everywhere (no crash region):
    what a test that needs trials in flight together can rely on, whatever the sampler
    proposes."""
    path = small_space(tmp_path)
    space = yaml.safe_load(path.read_text())
    space["parameters"] = [
        {
            "name": "cuda_graph_max_bs",
            "type": "int",
            "low": 16,
            "high": 256,
            "log": True,
            "flag": "--cuda-graph-max-bs",
        },
        {
            "name": "mem_fraction_static",
            "type": "float",
            "low": 0.45,
            "high": 0.6,
            "step": 0.05,
            "flag": "--mem-fraction-static",
        },
    ]
    space["fixed"]["args"] += ["--disable-custom-all-reduce"]
    space["constraints"] = []
    space["baseline"] = {"cuda_graph_max_bs": 128, "mem_fraction_static": 0.55}
    path.write_text(yaml.safe_dump(space))
    return path


def start_cmd(
    loopback: Loopback,
    tmp_path: Path,
    study: str,
    n: int,
    *extra: str,
    space: Path | None = None,
) -> list[str]:
    return AUTOTUNE + [
        "start",
        "--space",
        str(space or small_space(tmp_path)),
        "--study",
        study,
        "--simulate",
        "--executor",
        "ray",
        "--ray-address",
        loopback.address,
        "--n-trials",
        str(n),
        "--mlflow-uri",
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        "--study-root",
        str(tmp_path / "studies"),
        "--seed",
        "5",
        # n launches in all: one baseline launch, no confirmation rounds on top of the budget
        "--baseline-launches",
        "1",
        "--no-confirm",
        *extra,
    ]


def launch(cmd: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=RUN_LIMIT_S)
    assert proc.returncode == 0, out[-4000:]
    return out


def launched_trials(tmp_path: Path, study: str) -> tuple[list[optuna.trial.FrozenTrial], list[Any]]:
    """The study's trials and the MLflow child runs, after checking neither has duplicates."""
    storage = f"sqlite:///{tmp_path / 'studies' / study / 'study.db'}"
    trials = optuna.load_study(study_name=study, storage=storage).get_trials()
    assert not [t.number for t in trials if t.state.name == "RUNNING"]
    done = [
        t
        for t in trials
        if t.user_attrs.get("outcome")
        in {Outcome.OK, Outcome.CRASHED, Outcome.TIMEOUT, Outcome.SLO_VIOLATED, Outcome.INFRA}
        # stopped early by the pruner after a launch (a skipped proposal was never launched)
        or (t.user_attrs.get("outcome") == Outcome.PRUNED and "skipped" not in t.user_attrs)
    ]

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    parents = [r for r in runs if r.data.tags.get("autotune.role") == "study"]
    children = [r for r in runs if r.data.tags.get("autotune.role") == "trial"]
    assert len(parents) == 1
    numbers = [int(r.data.tags["autotune.trial"]) for r in children]
    assert sorted(numbers) == sorted(t.number for t in done), "MLflow and Optuna disagree"
    assert all(r.data.tags.get("autotune.logged") == "true" for r in children)
    return done, children


def no_leftovers(study: str) -> None:
    assert servers(study) == []
    assert [r for r in registered_servers() if r.get("study") == study] == []


# -- placement, executor level ---------------------------------------------------------------

JOB = """
import json, os, sys, time
from pathlib import Path
barrier, n = Path(sys.argv[1]), int(sys.argv[2])
gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
(barrier / str(os.getpid())).write_text(",".join(gpus))
deadline = time.time() + 60  # all n trials must be running at once to get past this
while len(list(barrier.iterdir())) < n and time.time() < deadline:
    time.sleep(0.05)
together = float(len(list(barrier.iterdir())) >= n)
mask = sum(1 << int(g) for g in gpus)
print("AUTOTUNE_METRICS " + json.dumps({"mask": mask, "gpus": len(gpus), "together": together}))
"""


def job_spec(tmp_path: Path, number: int, gpus: int, barrier: Path, n: int, **kw: Any) -> TrialSpec:
    return TrialSpec(
        study="placement",
        number=number,
        engine="command",
        params={},
        mode="job",
        argv=[sys.executable, "-c", JOB, str(barrier), str(n)],
        gpus=gpus,
        log_dir=str(tmp_path / "logs"),
        limits=Limits(benchmark_s=90),
        **kw,
    )


def test_capacity_is_whole_trials_per_node_and_a_trial_too_big_is_refused(
    connected: Loopback,
) -> None:
    for gpus, parallel, want in [
        (8, None, 2),
        (4, None, 4),
        (3, None, 4),
        (1, None, 16),
        (4, 3, 3),
        (4, 9, 4),
    ]:
        ex = RayExecutor(gpus, address=connected.address, parallel=parallel)
        try:
            assert ex.capacity() == want, (gpus, parallel)
        finally:
            ex.shutdown()
    with pytest.raises(PlacementError, match="needs 9 GPUs on one node .* has 8"):
        RayExecutor(9, address=connected.address)


def test_trials_get_disjoint_gpus_on_nodes_that_fit_and_avoid_a_node(
    connected: Loopback, tmp_path: Path
) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    ex = RayExecutor(4, address=connected.address)
    try:
        assert ex.capacity() == 4
        # Six TP-4 trials on two 8-GPU nodes: four at once (the barrier proves it), two after.
        futures = [ex.submit(job_spec(tmp_path, i, 4, barrier, 4)) for i in range(6)]
        results = [f.result(timeout=RUN_LIMIT_S) for f in futures]
        assert [r.outcome for r in results] == [Outcome.OK] * 6, [r.failure for r in results]
        assert all(r.metrics and r.metrics.extra["together"] == 1.0 for r in results)
        by_node: dict[str, list[int]] = {}
        for r in results:
            assert r.metrics is not None and r.metrics.extra["gpus"] == 4
            by_node.setdefault(str(r.node), []).append(int(r.metrics.extra["mask"]))
        worker_ids = {n.node_id[:12] for n in connected.workers()}
        assert {name.split("/")[-1] for name in by_node} == worker_ids
        # The first four ran together, two per node: their GPUs on one node do not overlap.
        first: dict[str, list[int]] = {}
        for r in results[:4]:
            assert r.metrics is not None
            first.setdefault(str(r.node), []).append(int(r.metrics.extra["mask"]))
        assert sorted(len(m) for m in first.values()) == [2, 2]
        assert all(m[0] & m[1] == 0 for m in first.values())

        # A retried trial avoids the node of its infra failure.
        lost_on = str(results[0].node)
        retry = job_spec(tmp_path, 6, 4, barrier, 0, avoid_nodes=[lost_on], attempt=1)
        again = ex.submit(retry).result(timeout=RUN_LIMIT_S)
        assert again.outcome is Outcome.OK and again.node != lost_on
    finally:
        ex.shutdown()


# -- whole studies through the CLI -----------------------------------------------------------


def test_a_trial_that_can_never_fit_is_refused_before_the_study_starts(
    loopback: Loopback, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    space = yaml.safe_load(small_space(tmp_path).read_text())
    space["fixed"]["args"] = ["--tp-size", "16", "--trust-remote-code"]
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(space))
    cmd = start_cmd(loopback, tmp_path, "ray-too-big", 1)
    cmd[cmd.index("--space") + 1] = str(tmp_path / "big.yaml")
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "needs 16 GPUs on one node" in proc.stderr
    assert f"largest node marked {GPU_NODE_RESOURCE} has 8" in proc.stderr
    assert not (tmp_path / "studies" / "ray-too-big" / "study.db").exists()


def test_parallel_trials_run_on_both_nodes_at_once(
    loopback: Loopback, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    study = "ray-parallel"
    cmd = start_cmd(loopback, tmp_path, study, 4, space=steady_space(tmp_path))
    proc = launch(cmd, tmp_path, cli_env)
    seen_together: set[str] = set()

    def both_nodes_busy() -> bool:
        nodes = {loopback.node_of(p.pid) for p in servers(study)} - {None}
        if len(nodes) == 2:
            seen_together.update(n.node_id for n in nodes if n is not None)
        return len(nodes) == 2

    wait_for(both_nodes_busy, RUN_LIMIT_S, "two servers on two nodes at once", proc)
    out = finish(proc)
    assert "(2 at once)" in out
    done, _ = launched_trials(tmp_path, study)
    assert len([t for t in done if t.user_attrs["outcome"] != Outcome.INFRA]) == 4
    used = {t.user_attrs["node"].split("/")[-1] for t in done}
    assert used == {n[:12] for n in seen_together}
    no_leftovers(study)


def test_a_killed_driver_resumes_without_losing_or_repeating_a_trial(
    loopback: Loopback, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    study = "ray-driver-killed"
    cmd = start_cmd(loopback, tmp_path, study, 3, space=steady_space(tmp_path))
    proc = launch(cmd, tmp_path, cli_env)
    wait_for(lambda: len(servers(study)) == 2, RUN_LIMIT_S, "two trials in flight", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    lock = tmp_path / "studies" / study / "driver.lock"
    assert lock.exists()  # it died holding the study
    storage = f"sqlite:///{tmp_path / 'studies' / study / 'study.db'}"
    left = optuna.load_study(study_name=study, storage=storage)
    running = [t for t in left.get_trials() if t.state == optuna.trial.TrialState.RUNNING]
    assert running
    # What Optuna's stale-heartbeat check does to a dead driver's trial: FAIL, nothing more.
    left._storage.set_trial_state_values(running[0]._trial_id, optuna.trial.TrialState.FAIL)

    out = finish(launch(cmd, tmp_path, cli_env))
    assert f"{len(running)} interrupted trial(s) queued again" in out
    done, children = launched_trials(tmp_path, study)
    trials = optuna.load_study(study_name=study, storage=storage).get_trials()
    lost = sorted(t.number for t in running)
    assert [t.user_attrs.get("outcome") for t in trials if t.number in lost[1:]] == (
        ["interrupted"] * (len(lost) - 1)
    )
    retries = {t.user_attrs["retry_of"]: t for t in trials if "retry_of" in t.user_attrs}
    assert sorted(retries) == lost  # each lost trial queued again, once ...
    assert all(retries[n] in done for n in lost)  # ... and run to the end
    assert all(t.number not in lost for t in done)
    assert len([t for t in done if t.user_attrs["outcome"] != Outcome.INFRA]) == 3
    assert len(children) == len(done)
    no_leftovers(study)
    assert not lock.exists()


def test_a_node_lost_mid_trial_is_retried_on_another_node(
    loopback: Loopback, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """Last in this module: it takes a worker node away (and adds a fresh one back)."""
    study = "ray-node-lost"
    # The stand-in at a quarter of --simulate's speed: the first trial is still running when
    # its node is taken away, however quickly a loaded machine gets there.
    space = small_space(tmp_path)
    data = yaml.safe_load(space.read_text())
    data["fixed"].setdefault("env", {})["AUTOTUNE_SIM_TIME_SCALE"] = "5"
    space.write_text(yaml.safe_dump(data))
    cmd = start_cmd(loopback, tmp_path, study, 2, "--parallel", "1", space=space)
    proc = launch(cmd, tmp_path, cli_env)
    # The server's process shows before the node runner has registered it: wait for both.
    server, record = wait_for(
        lambda: registered(study), RUN_LIMIT_S, "the first trial's registered server", proc
    )
    node = loopback.node_of(server.pid)
    assert node is not None
    lost_id = node.node_id
    number = int(Path(record["log"]).name.split("-")[1])
    try:
        loopback.cluster.remove_node(node, allow_graceful=False)  # SIGKILL its raylet
        out = finish(proc)
    finally:
        loopback.add_worker()
    assert f"retry  #{number}" in out and "NodeDiedError" in out, out[-3000:]
    done, children = launched_trials(tmp_path, study)
    trial = next(t for t in done if t.number == number)
    assert trial.user_attrs["outcome"] == Outcome.OK
    assert trial.user_attrs["attempts"] == 1
    assert not trial.user_attrs["node"].endswith(lost_id[:12])
    assert len([t for t in done if t.user_attrs["outcome"] != Outcome.INFRA]) == 2
    assert len(children) == len(done)
    no_leftovers(study)
    assert "Traceback" not in out


def test_preflight_reads_the_engines_help_on_a_node(connected: Loopback) -> None:
    from autotune.space.schema import EngineSpec

    ex = RayExecutor(0, address=connected.address)
    try:
        text = ex.engine_help(EngineSpec(name="transformers"))
    finally:
        ex.shutdown()
    assert text is not None and "--continuous-batching" in text
