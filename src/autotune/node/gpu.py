"""GPU memory checks through NVML: is the node clean before a trial, and after it.

NVML (``pynvml`` from ``nvidia-ml-py``) is imported lazily; every function answers ``None``
where there is no NVML or no GPU, so the node side runs the same on a CPU-only machine.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from types import ModuleType
from typing import Any

_logger = logging.getLogger(__name__)
_lock = threading.Lock()
_nvml: ModuleType | None = None
_nvml_tried = False

# A GPU counts as clean before a trial when no more than this much memory is in use
# (an idle H200 shows a few hundred MiB reserved by the driver).
DEFAULT_CLEAN_MIB = 2048.0
# After teardown, memory must come back to within this much of the pre-trial level.
DEFAULT_TOLERANCE_MIB = 1024.0


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:  # a malformed setting: its default
        return default


def clean_threshold_mib() -> float:
    """Memory in use (MiB) above which a GPU is not clean (``AUTOTUNE_GPU_CLEAN_MIB``)."""
    return _env_float("AUTOTUNE_GPU_CLEAN_MIB", DEFAULT_CLEAN_MIB)


def tolerance_mib() -> float:
    """Allowed excess over the pre-trial level after teardown (``AUTOTUNE_GPU_TOLERANCE_MIB``)."""
    return _env_float("AUTOTUNE_GPU_TOLERANCE_MIB", DEFAULT_TOLERANCE_MIB)


def _load() -> ModuleType | None:
    global _nvml, _nvml_tried
    with _lock:
        if _nvml_tried:
            return _nvml
        _nvml_tried = True
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as exc:  # no library, no driver, no GPU: all mean "nothing to check"
            _logger.debug("no NVML (%s: %s): GPU memory is not checked", type(exc).__name__, exc)
            return None
        _nvml = pynvml
        return _nvml


def _handles(nvml: Any, count: int | None, visible: str | None = None) -> list[Any]:
    """Handles of the GPUs in ``visible`` (CUDA_VISIBLE_DEVICES syntax; None: all), in order."""
    handles: list[Any] = []
    if visible is None:
        total = int(nvml.nvmlDeviceGetCount())
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(total)]
    else:
        for item in (v.strip() for v in visible.split(",")):
            if not item:
                continue
            try:
                if item.isdigit():
                    handles.append(nvml.nvmlDeviceGetHandleByIndex(int(item)))
                else:
                    handles.append(nvml.nvmlDeviceGetHandleByUUID(item))
            except Exception as exc:
                # CUDA stops enumerating at the first invalid entry; do the same.
                _logger.debug("CUDA_VISIBLE_DEVICES entry %r is not a GPU here: %s", item, exc)
                break
    return handles if count is None else handles[:count]


def visible_devices(env: dict[str, str] | None = None) -> str | None:
    """CUDA_VISIBLE_DEVICES as a trial sees it: from ``env`` if set there, else this process's."""
    if env is not None and "CUDA_VISIBLE_DEVICES" in env:
        return env["CUDA_VISIBLE_DEVICES"]
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def snapshot(count: int | None = None, visible: str | None = None) -> list[float] | None:
    """MiB of memory in use on each visible GPU (the first ``count`` of them), or None.

    Args:
        count: how many of the visible GPUs the trial uses; None for all.
        visible: the trial's CUDA_VISIBLE_DEVICES (see :func:`visible_devices`); None: all GPUs.

    Returns:
        One figure per GPU, or None where there is no NVML or no visible GPU.
    """
    nvml = _load()
    if nvml is None:
        return None
    try:
        handles = _handles(nvml, count, visible)
        used = [float(nvml.nvmlDeviceGetMemoryInfo(h).used) / (1024 * 1024) for h in handles]
    except Exception as exc:  # NVML answered at start, not now: this check cannot be made
        _logger.warning("GPU memory could not be read through NVML: %s", exc)
        return None
    return used or None


def describe(count: int | None = None, visible: str | None = None) -> str:
    """The GPUs a trial runs on, for people: ``8x NVIDIA H200``; ``""`` without NVML."""
    nvml = _load()
    if nvml is None:
        return ""
    try:
        names = []
        for handle in _handles(nvml, count, visible):
            name = nvml.nvmlDeviceGetName(handle)
            names.append(name.decode() if isinstance(name, bytes) else str(name))
    except Exception as exc:
        _logger.debug("GPU names unavailable (%s: %s)", type(exc).__name__, exc)
        return ""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


def is_clean(used: list[float] | None, threshold_mib: float | None = None) -> bool | None:
    """Whether every GPU is below the clean threshold; None when there is nothing to check."""
    if used is None:
        return None
    limit = clean_threshold_mib() if threshold_mib is None else threshold_mib
    return all(u <= limit for u in used)


def wait_released(
    before: list[float] | None,
    limit_s: float,
    tolerance: float | None = None,
    *,
    visible: str | None = None,
    poll_s: float = 0.5,
) -> tuple[bool | None, list[float] | None]:
    """Wait until GPU memory is back to the pre-trial level (memory is released late).

    Args:
        before: per-GPU MiB in use before the trial (from :func:`snapshot`).
        limit_s: how long to wait at most.
        tolerance: MiB above ``before`` still counted as released.
        visible: the trial's CUDA_VISIBLE_DEVICES, as given to :func:`snapshot`.
        poll_s: seconds between NVML reads.

    Returns:
        ``(released, after)``; ``(None, None)`` where there is no GPU to check.
    """
    if before is None:
        return None, None
    tol = tolerance_mib() if tolerance is None else tolerance
    deadline = time.monotonic() + limit_s
    while True:
        after = snapshot(len(before), visible)
        if after is None:
            return None, None
        if all(a <= b + tol for a, b in zip(after, before, strict=False)):
            return True, after
        if time.monotonic() >= deadline:
            return False, after
        time.sleep(poll_s)
