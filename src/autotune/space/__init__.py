"""The search space: the space file's schema, its loader, expressions, rendering, suggestion.

``load(path)`` gives a validated ``StudySpec``; ``render`` turns a configuration into launch
arguments; ``suggest`` (imported lazily: it needs Optuna) asks an Optuna trial for one.
"""

from __future__ import annotations

from typing import Any

from autotune.space.expr import Expr, parse
from autotune.space.load import check, check_text, json_schema, known_engines, load, load_text
from autotune.space.render import active, render, render_value, violations
from autotune.space.schema import Parameter, StudySpec

__all__ = [
    "Expr",
    "Parameter",
    "StudySpec",
    "active",
    "check",
    "check_text",
    "distributions",
    "json_schema",
    "known_engines",
    "load",
    "load_text",
    "parse",
    "render",
    "render_value",
    "suggest",
    "violations",
]


def __getattr__(name: str) -> Any:
    # Optuna is a driver-side dependency; importing the space must not pull it in.
    if name in ("suggest", "distributions"):
        from autotune.space import suggest as module

        return getattr(module, name)
    raise AttributeError(f"module 'autotune.space' has no attribute {name!r}")
