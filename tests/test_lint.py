"""No exception is swallowed without a word (logged, re-raised, or a comment saying why).

ruff (E, F, I, B, UP), ruff format and mypy --strict are not tests: they are steps of their
own in ``.ci/run`` (CONTRIBUTING.md gives the commands)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def _broad(handler: ast.ExceptHandler) -> bool:
    """``except:``, ``except Exception`` or ``except BaseException`` (alone or in a tuple)."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    broad = {"Exception", "BaseException"}
    return any(k is None or (isinstance(k, ast.Name) and k.id in broad) for k in kinds)


def _silent_handlers(path: Path) -> list[str]:
    """``except`` blocks and ``contextlib.suppress`` that drop an exception without a word.

    A handler must re-raise, log (``_logger``), use the exception, or carry a comment saying
    why dropping it is safe; a broad one (``except Exception``) must re-raise or log, since a
    comment cannot tell a bug from the failure it expected.
    """
    source = path.read_text(encoding="utf-8")
    comments = _comment_lines(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler):
            inner = [n for stmt in node.body for n in ast.walk(stmt)]
            handled = any(isinstance(n, ast.Raise) for n in inner) or any(
                isinstance(n, ast.Name) and n.id in {"_logger", node.name} for n in inner
            )
            said = any(line in comments for line in range(node.lineno, node.body[0].lineno + 1))
            if _broad(node):
                logged = any(isinstance(n, ast.Name) and n.id == "_logger" for n in inner)
                if not (logged or any(isinstance(n, ast.Raise) for n in inner)):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: broad except")
            elif not (handled or said):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: except")
        elif isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                name = getattr(getattr(call, "func", None), "attr", None)
                if name == "suppress" and node.lineno not in comments:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: suppress")
    return found


def test_no_exception_is_swallowed_silently() -> None:
    files = sorted((ROOT / "src" / "autotune").rglob("*.py"))  # the whole package
    silent = [hit for path in files for hit in _silent_handlers(path)]
    assert silent == [], "log it, re-raise it, or say why ignoring it is safe:\n" + "\n".join(
        silent
    )
