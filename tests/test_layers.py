"""Who may import whom: the layer picture of docs/architecture.md holds, read from the source.

Every ``import`` in ``src/autotune`` counts: the lazy ones inside functions and the ones under
``if TYPE_CHECKING:`` too (a lazy import is still a dependency; a cycle hidden in a function
is still a cycle). ``from autotune.pkg import sub`` is an arrow to the module ``sub``; ``from
autotune.pkg import name`` to the package's ``__init__``. The node side (what runs on a GPU
node) has its own, runtime check in ``tests/node/test_node_process.py``.

The floors and the arrows each package may draw are read from the table in
docs/architecture.md, so that the document and the code cannot drift apart: an arrow the
code has and the table does not allow fails, and so does one the table allows that the code
no longer has.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "autotune"
DOC = ROOT / "docs" / "architecture.md"
TOP = "autotune"  # the package root's own __init__ (its version and public names)

# Third-party libraries a part may use only in the named modules (relative to autotune/).
CONFINED = {
    "ray": ("dispatch/ray.py",),
    "mlflow": ("tracking/",),
    "optuna": ("study/", "space/suggest.py", "report/", "export/", "cli/"),
}
# Package faces made by issue 53: short, defining nothing, each stating its public surface.
FACES = ("cli", "core", "export", "report")
FACE_LINES = 40


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    return {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _raw_imports(path: Path) -> Iterator[tuple[str, str | None]]:
    """``(module, imported name or None)`` for every import statement, relative ones resolved."""
    me = _name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            for alias in node.names:
                yield module, alias.name


@cache
def arrows(module: str) -> frozenset[str]:
    """The modules of autotune that ``module`` imports (not itself)."""
    known = modules()
    out = set()
    for target, name in _raw_imports(known[module]):
        if name is not None and f"{target}.{name}" in known:
            target = f"{target}.{name}"  # from package import submodule
        if target != TOP and not target.startswith(TOP + "."):
            continue
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in known and target != module:
            out.add(target)
    return frozenset(out)


def part(module: str) -> str:
    """``autotune.report.html`` -> ``report``; ``autotune.models`` -> ``models``."""
    return module.split(".")[1] if "." in module else TOP


def package_arrows() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {part(m): set() for m in modules()}
    for m in modules():
        out[part(m)] |= {part(t) for t in arrows(m)} - {part(m)}
    return out


def cycles(graph: dict[str, set[str]] | dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@cache
def documented() -> dict[str, tuple[int | None, frozenset[str]]]:
    """The table of docs/architecture.md: package -> (floor, or None for apart; may import)."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\|\s*(\d+|apart)\s*\|\s*`([\w.]+)`\s*\|([^|]*)\|.*", line)
        if match:
            floor, name, allowed = match.groups()
            rows[name] = (
                None if floor == "apart" else int(floor),
                frozenset(re.findall(r"`([\w.]+)`", allowed)),
            )
    return rows


def test_no_module_imports_itself_back() -> None:
    graph = {m: arrows(m) for m in modules()}
    assert cycles(graph) == []


def test_no_package_imports_itself_back() -> None:
    assert cycles(package_arrows()) == []


def test_the_document_lists_every_package() -> None:
    assert documented(), f"no layer table found in {DOC}"
    assert sorted(documented()) == sorted(package_arrows())


def test_every_arrow_points_down_the_floors() -> None:
    floors = documented()
    up = [
        f"{a} (floor {floors[a][0]}) -> {b} (floor {floors[b][0]})"
        for a, targets in package_arrows().items()
        for b in targets
        if floors[a][0] is None or floors[b][0] is None or floors[a][0] >= floors[b][0]
    ]
    assert up == []


def test_the_arrows_are_the_ones_the_document_allows() -> None:
    floors = documented()
    actual = package_arrows()
    undocumented = {a: sorted(b - floors[a][1]) for a, b in actual.items() if b - floors[a][1]}
    stale = {a: sorted(floors[a][1] - actual[a]) for a in actual if floors[a][1] - actual[a]}
    assert undocumented == {}, "arrows the code has and docs/architecture.md does not allow"
    assert stale == {}, "arrows docs/architecture.md allows that the code no longer has"


def test_the_document_names_only_real_packages() -> None:
    named = set(documented())
    for allowed in (a for _, a in documented().values()):
        named |= allowed
    assert named <= set(package_arrows())


@pytest.mark.parametrize("face", FACES)
def test_a_package_face_is_short_and_states_its_surface(face: str) -> None:
    path = PACKAGE / face / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{face}/__init__.py says nothing about the package"
    defines = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert defines == [], f"{face}/__init__.py defines code: it should only hand names on"
    assert len(path.read_text().splitlines()) <= FACE_LINES
    names = [n for n in tree.body if isinstance(n, ast.Assign)]
    assert any(isinstance(t, ast.Name) and t.id == "__all__" for n in names for t in n.targets), (
        f"{face}/__init__.py has no __all__"
    )


def test_every_package_says_what_it_is() -> None:
    silent = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("__init__.py")
        if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert silent == []


@pytest.mark.parametrize("library", sorted(CONFINED))
def test_optional_backends_stay_in_their_modules(library: str) -> None:
    allowed = CONFINED[library]
    users = []
    for path in modules().values():
        rel = str(path.relative_to(PACKAGE))
        if any(m.split(".")[0] == library for m, _ in _raw_imports(path)):
            users.append(rel)
    assert [u for u in users if not u.startswith(allowed)] == []


def test_the_checker_sees_a_cycle_hidden_in_a_function() -> None:
    """The checks above would pass on anything if the reader missed lazy imports."""
    lazy = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert cycles(lazy) == [["a", "b"]]
    assert "autotune.engines.base" in arrows("autotune.space.load")  # known_engines, lazily


COMMAND_LINES = 60


def test_each_command_is_a_module_and_fits_in_a_head() -> None:
    """One module per command under cli/, each command function at most 60 lines (its
    options are one line each: their declarations live in cli/options.py or atop the
    module)."""
    commands: dict[str, int] = {}
    for path in (PACKAGE / "cli").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and ast.unparse(d.func) == "app.command"
                for d in node.decorator_list
            ):
                assert node.end_lineno is not None
                commands[f"{path.stem}.{node.name}"] = node.end_lineno - node.lineno + 1
    assert len(commands) >= 8, commands
    assert {k: n for k, n in commands.items() if n > COMMAND_LINES} == {}
    modules_with_commands = {k.split(".")[0] for k in commands}
    assert len(modules_with_commands) == len(commands) - 1  # validate.py holds schema too
