"""The stand-in's own settings, read from ``AUTOTUNE_SIM_*`` variables (a flag would be
refused like any flag SGLang does not know).

They make the stand-in a test instrument: a time scale so a simulated study runs in
minutes, launch-to-launch and within-launch noise so a tuner's statistics can be checked, a
"flags change nothing" server for "no gain claimed", a fixed-rate stream whose truth is known
(load generator fidelity) and a server that runs out of memory under load.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

TIME_SCALE_ENV = "AUTOTUNE_SIM_TIME_SCALE"
LAUNCH_NOISE_ENV = "AUTOTUNE_SIM_LAUNCH_NOISE"
WINDOW_NOISE_ENV = "AUTOTUNE_SIM_WINDOW_NOISE"
WINDOW_PERIOD_ENV = "AUTOTUNE_SIM_WINDOW_PERIOD_S"
FLAGS_IGNORED_ENV = "AUTOTUNE_SIM_FLAGS_IGNORED"
FIXED_RATE_ENV = "AUTOTUNE_SIM_FIXED_RATE"
FIXED_TTFT_ENV = "AUTOTUNE_SIM_FIXED_TTFT_MS"
OOM_ABOVE_ENV = "AUTOTUNE_SIM_OOM_ABOVE"
LAUNCHES_ENV = "AUTOTUNE_SIM_LAUNCHES"

DEFAULT_LAUNCH_SIGMA = 0.02


class SettingError(ValueError):
    """An ``AUTOTUNE_SIM_*`` variable has a value the stand-in cannot use."""


@dataclass(frozen=True)
class SimSettings:
    """How this launch of the stand-in behaves, beyond SGLang's flags.

    Attributes:
        time_scale: simulated seconds per wall second (startup and token streams run this
            much faster; every figure the server reports stays in simulated seconds).
        launch_sigma: sigma of the per-launch lognormal factor on step times.
        window_sigma: sigma of a lognormal factor redrawn every ``window_period_s`` simulated
            seconds within one launch (0: none).
        window_period_s: simulated seconds between within-launch redraws.
        flags_ignored: every launch performs like the default configuration.
        fixed_rate: tokens/s per stream, independent of load and flags (None: the model).
        fixed_ttft_ms: time to first token of a fixed-rate stream.
        oom_above: the scheduler dies of a decode OOM once more requests than this are in
            flight at once (None: never).
        launches: a counter file: each launch takes the next number, so a seeded study
            draws a different (reproducible) launch factor for each launch of one config.
    """

    time_scale: float = 1.0
    launch_sigma: float = DEFAULT_LAUNCH_SIGMA
    window_sigma: float = 0.0
    window_period_s: float = 5.0
    flags_ignored: bool = False
    fixed_rate: float | None = None
    fixed_ttft_ms: float = 50.0
    oom_above: int | None = None
    launches: str | None = None


def _number(env: dict[str, str], name: str, default: float, *, low: float, strict: bool) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:  # not a number: NaN fails the bound check below, which says so
        value = float("nan")
    ok = value > low if strict else value >= low
    if not ok or value != value or value == float("inf"):
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise SettingError(f"{name}={raw!r}: must be a number {bound}")
    return value


def settings_from_env(env: dict[str, str]) -> SimSettings:
    """The settings in ``env``; unset variables keep their defaults.

    Raises:
        SettingError: a variable is set to something unusable (the message names it).
    """
    fixed = env.get(FIXED_RATE_ENV, "").strip()
    oom = env.get(OOM_ABOVE_ENV, "").strip()
    flags = env.get(FLAGS_IGNORED_ENV, "").strip().lower()
    if flags not in ("", "0", "1", "true", "false"):
        raise SettingError(f"{FLAGS_IGNORED_ENV}={flags!r}: must be 1 or 0")
    return SimSettings(
        time_scale=_number(env, TIME_SCALE_ENV, 1.0, low=0.0, strict=True),
        launch_sigma=_number(env, LAUNCH_NOISE_ENV, DEFAULT_LAUNCH_SIGMA, low=0.0, strict=False),
        window_sigma=_number(env, WINDOW_NOISE_ENV, 0.0, low=0.0, strict=False),
        window_period_s=_number(env, WINDOW_PERIOD_ENV, 5.0, low=0.0, strict=True),
        flags_ignored=flags in ("1", "true"),
        fixed_rate=_number(env, FIXED_RATE_ENV, 0.0, low=0.0, strict=True) if fixed else None,
        fixed_ttft_ms=_number(env, FIXED_TTFT_ENV, 50.0, low=0.0, strict=False),
        oom_above=int(_number(env, OOM_ABOVE_ENV, 0.0, low=1.0, strict=False)) if oom else None,
        launches=env.get(LAUNCHES_ENV) or None,
    )


def next_launch(path: str) -> int:
    """Take the next launch number from the counter file (0 first), under a file lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 64).decode().strip()
        number = int(raw) if raw.isdigit() else 0
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, str(number + 1).encode())
        return number
    finally:
        os.close(fd)
