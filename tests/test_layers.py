"""Who may import whom (docs/architecture.md): the layers hold, read from the source.

Every ``import`` in ``src/autotune`` counts, the lazy ones inside functions too: a lazy import
is still a dependency. The node side (what runs on a GPU node) has its own, runtime check in
``tests/node/test_node_process.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "autotune"

# Top to bottom: cli -> study -> dispatch -> engines -> node / space / tracking -> models.
# The bottom parts may import only what is listed; the others must not import what is listed.
ONLY: dict[str, set[str]] = {
    "models": set(),
    "errors": set(),
    "_registry": {"errors"},
    "rules": {"errors", "models"},
    "core": {"errors", "models"},  # records, fmt, redact: what every layer shares
    "node": {"errors", "models"},  # what runs on a GPU node
    "sim": set(),  # a stand-alone server process
}
ABOVE_ENGINES = {"dispatch", "study", "tracking", "cli", "report", "export"}
NEVER: dict[str, set[str]] = {
    # space lists engine names through the engine registry (known_engines): that one lazy
    # edge down the page is allowed; nothing above engines is.
    "space": ABOVE_ENGINES | {"node", "sim"},
    "engines": ABOVE_ENGINES | {"node", "sim"},
    "dispatch": ABOVE_ENGINES - {"dispatch"} | {"sim"},
    "tracking": {"dispatch", "engines", "node", "cli", "sim"},
    "study": {"cli", "report", "export", "sim"},
}
# Third-party libraries a part may use only in the named modules (relative to autotune/).
CONFINED = {
    "ray": ("dispatch/ray.py",),
    "mlflow": ("tracking/",),
    "optuna": (
        "study/",
        "space/suggest.py",
        "report/",
        "export/",
        "cli/",
    ),
}


def _part(module: str) -> str:
    """``autotune.dispatch.ray`` -> ``dispatch``; ``autotune.cli`` -> ``cli``."""
    return module.split(".")[1] if module.count(".") else module


def _imports(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (relative imports resolved)."""
    here = ".".join(("autotune", *path.relative_to(PACKAGE).with_suffix("").parts))
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_goes_up_the_layers(path: Path) -> None:
    me = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    bad = []
    for module in _imports(path):
        if not module.startswith("autotune.") or module == "autotune.__version__":
            continue
        part = _part(module)
        if part == me:
            continue
        if (me in ONLY and part not in ONLY[me]) or part in NEVER.get(me, set()):
            bad.append(module)
    assert bad == [], f"{me} must not import {sorted(set(bad))}"


@pytest.mark.parametrize("library", sorted(CONFINED))
def test_optional_backends_stay_in_their_modules(library: str) -> None:
    allowed = CONFINED[library]
    users = []
    for path in _sources():
        rel = str(path.relative_to(PACKAGE))
        if any(m.split(".")[0] == library for m in _imports(path)):
            users.append(rel)
    assert [u for u in users if not u.startswith(allowed)] == []
