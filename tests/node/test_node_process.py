"""Process groups, teardown, ports, the node marker, NVML fallbacks and the import boundary."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from autotune.node import gpu
from autotune.node.process import NodeState, ServerProcess, free_port, port_is_free


def test_free_port_and_port_is_free() -> None:
    port = free_port()
    assert port_is_free("127.0.0.1", port)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert not port_is_free("127.0.0.1", port)


def test_teardown_escalates_to_sigkill(tmp_path: Path) -> None:
    code = (
        "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('up', flush=True); time.sleep(60)"
    )
    proc = ServerProcess([sys.executable, "-c", code], dict(os.environ), tmp_path / "p.log")
    proc.start()
    deadline = time.monotonic() + 10
    while "up" not in (tmp_path / "p.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    start = time.monotonic()
    report = proc.teardown(grace_s=0.3)
    assert report.killed and report.processes_left == 0
    assert 0.3 <= time.monotonic() - start < 5
    assert proc.poll() == -9


def test_teardown_of_a_polite_process_needs_no_sigkill(tmp_path: Path) -> None:
    proc = ServerProcess(
        [sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ), tmp_path / "p.log"
    )
    proc.start()
    report = proc.teardown(grace_s=5)
    assert not report.killed and report.processes_left == 0 and report.seconds < 3
    assert proc.poll() == -15


def test_marker_round_trip(tmp_path: Path) -> None:
    state = NodeState(tmp_path / "state")
    assert state.check(None) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state.mark({"processes": [{"pid": dead.pid, "create_time": 1.0}], "trial": 3})
    assert state.path.name == f"dirty-{socket.gethostname()}.json"
    assert json.loads(state.path.read_text())["trial"] == 3
    assert state.check(None) is None  # nothing left: clean again
    assert not state.path.exists()


def test_node_state_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "x"))
    assert NodeState().dir == tmp_path / "x"


def test_gpu_functions_without_nvml() -> None:
    if gpu.snapshot() is not None:
        pytest.skip("this machine has a GPU; see test_gpu_snapshot_on_gpu")
    assert gpu.wait_released(None, 5) == (None, None)
    assert gpu.is_clean(None) is None


def test_is_clean_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gpu.is_clean([100.0, 3000.0], threshold_mib=2048) is False
    assert gpu.is_clean([100.0, 300.0], threshold_mib=2048) is True
    monkeypatch.setenv("AUTOTUNE_GPU_CLEAN_MIB", "50")
    assert gpu.is_clean([100.0]) is False


class _FakeNvml:
    """Just enough of pynvml to resolve CUDA_VISIBLE_DEVICES."""

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802 - NVML's name
        return 4

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:  # noqa: N802
        if index >= 4:
            raise RuntimeError("invalid index")
        return f"gpu{index}"

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Any:  # noqa: N802
        if not uuid.startswith("GPU-"):
            raise RuntimeError("bad uuid")
        return uuid


@pytest.mark.parametrize(
    ("visible", "count", "expected"),
    [
        (None, None, ["gpu0", "gpu1", "gpu2", "gpu3"]),
        (None, 2, ["gpu0", "gpu1"]),
        ("2,GPU-abc", None, ["gpu2", "GPU-abc"]),
        ("3,bogus,1", None, ["gpu3"]),  # CUDA stops at the first invalid entry
        ("", None, []),
    ],
)
def test_visible_devices(visible: str | None, count: int | None, expected: list[str]) -> None:
    assert gpu._handles(_FakeNvml(), count, visible) == expected


def test_visible_devices_prefers_the_trial_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert gpu.visible_devices({"CUDA_VISIBLE_DEVICES": "4,5"}) == "4,5"
    assert gpu.visible_devices({}) == "0,1"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpu.visible_devices(None) is None


@pytest.mark.gpu
def test_gpu_snapshot_on_gpu() -> None:
    used = gpu.snapshot()
    if used is None:
        pytest.skip("no NVIDIA GPU (NVML) on this machine")
    assert all(isinstance(u, float) and u >= 0 for u in used)
    released, after = gpu.wait_released(used, 1.0)
    assert released is True and after is not None and len(after) == len(used)


def test_node_side_imports_no_optuna_ray_mlflow() -> None:
    code = (
        "import sys, autotune.node, autotune.node.runner, autotune.node.bench, "
        "autotune.node.failures, autotune.node.readiness, autotune.node.process, "
        "autotune.node.gpu, autotune.node.learned; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'optuna', 'ray', 'mlflow', 'yaml', 'numpy', 'scipy', 'sklearn'} "
        "or m.startswith(('autotune.space', 'autotune.rules'))); "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
