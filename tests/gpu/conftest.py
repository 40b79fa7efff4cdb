"""GPU tests: run on the H200 test machine (tests/gpu/run.sh), skipped elsewhere with the reason."""

from __future__ import annotations

import pytest


def _count() -> int:
    """How many GPUs NVML sees (raises where there is no driver or no library)."""
    import pynvml

    pynvml.nvmlInit()
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def _gpu_reason() -> str | None:
    try:
        if _count() < 1:
            return "NVML sees no GPU"
    except Exception as exc:  # no driver or no library: a CPU machine
        return f"no NVIDIA GPU here ({type(exc).__name__}); run tests/gpu/run.sh on the H200"
    return None


@pytest.fixture(scope="session")
def gpus() -> int:
    """How many GPUs this machine has."""
    return _count()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
