"""The search space: the space file's schema, its loader, expressions, rendering, suggestion.

``load(path)`` gives a validated ``StudySpec``; ``render`` turns a configuration into launch
arguments; the ``suggest`` submodule asks an Optuna trial for one (``suggest.suggest``), and
``distributions`` gives the Optuna distributions of a space. Both are imported lazily: they
need Optuna, and importing the space must not pull it in (the node side imports the space).
"""

from __future__ import annotations

import importlib
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
    # importlib, not ``from autotune.space import suggest``: that form looks the name up on
    # this package first, which calls this function again (endless recursion).
    if name in ("suggest", "distributions"):
        module = importlib.import_module("autotune.space.suggest")
        # Importing the submodule binds ``suggest`` to it on this package, so the name is the
        # module whichever way it was reached first; only ``distributions`` is a function.
        return module if name == "suggest" else module.distributions
    raise AttributeError(f"module 'autotune.space' has no attribute {name!r}")
