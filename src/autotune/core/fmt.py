"""How numbers and configurations are written for people: shortest form, never cut silently.

Optuna's stepped floats carry binary noise (``0.6000000000000001``); every table, progress
line, export comment and report shows the shortest text that reads back as the intended
value. A configuration that does not fit is shortened only where the full text is one
command away (``autotune status --trial N``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# Significant digits kept: well past any launch flag's precision, short of float noise.
_DIGITS = 12


def short(value: Any) -> str:
    """``value`` in its shortest faithful form (``0.6`` for ``0.6000000000000001``).

    Non-numbers are ``str(value)``; booleans stay ``True``/``False``.
    """
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.{_DIGITS}g}"
    if "e" not in text and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def clean(value: Any) -> Any:
    """``value`` with float noise removed (``0.6000000000000001`` -> ``0.6``), same type."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{_DIGITS}g}")
    return value


def clean_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration with every float in its shortest form (for exports and records)."""
    return {k: clean(v) for k, v in config.items()}


def config_text(config: Mapping[str, Any], limit: int | None = None) -> str:
    """``name=value`` pairs joined by spaces; cut at ``limit`` characters with ``…`` if given.

    A caller that cuts must also tell people where the whole configuration is shown.
    """
    text = " ".join(f"{k}={short(v)}" for k, v in config.items())
    if limit is None or len(text) <= limit:
        return text
    return text[: max(1, limit - 1)] + "…"


def metric(value: float | None) -> str:
    """A measured figure for tables: thousands separated, at most 4 significant digits below
    1000 (``-`` when missing)."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.1f}"
        return text[:-2] if text.endswith(".0") else text
    return short(float(f"{value:.4g}"))


def seconds(value: float | None) -> str:
    """A duration: ``42s``, ``3m05s``, ``1h02m`` (``-`` when unknown)."""
    if value is None or not math.isfinite(value):
        return "-"
    s = max(0, int(round(value)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
