"""Safe expressions over parameter values, for ``when:`` conditions and ``constraints:``.

An expression is parsed with ``ast.parse(mode="eval")`` and checked against a whitelist; it
is then evaluated by walking the tree here. Nothing is ever passed to ``eval``/``exec``.

Grammar (Python syntax, a small subset):

- literals: numbers, strings, ``True``/``False``/``None`` (also ``true``/``false``/``none``
  when no parameter has that name, since YAML authors write them that way);
- names: parameter names;
- arithmetic ``+ - * / // % **``, unary ``-`` and ``+``, ``not``, ``and``/``or``;
- comparisons ``== != < <= > >=``, chained (``1 <= a < b``), ``in``/``not in`` a list or
  tuple literal (``allreduce in ['nccl', 'custom']``);
- ``a if cond else b``;
- calls to ``min max abs int float round log2`` only.

Semantics of unset values: a parameter that is not set (inactive through its own ``when``, or
left to the engine default) evaluates as ``None``. Arithmetic and calls with a ``None``
operand give ``None``; every comparison with a ``None`` operand is ``False`` (so ``x != 1``
is False when ``x`` is unset), except ``x == None`` / ``x != None``, which test whether ``x``
is set. Division by zero, overflow and math domain errors also give ``None``. ``and``/``or``/
``not`` and a condition's truth follow Python (``None`` is false).
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autotune.errors import ConfigError

MAX_LENGTH = 2000  # characters in one expression
MAX_DEPTH = 64  # nesting of the syntax tree
MAX_POW_BITS = 4096  # bits of an integer power's result

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _round(value: Any, ndigits: Any = None) -> Any:
    if ndigits is not None and (
        isinstance(ndigits, bool) or not isinstance(ndigits, int) or abs(ndigits) > 32
    ):
        raise ValueError("round() digits must be an integer within -32..32")
    return round(value) if ndigits is None else round(value, ndigits)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "float": float,
    "round": _round,
    "log2": math.log2,
}
# YAML spellings of the constants, reserved: no parameter may take these names.
LITERAL_NAMES: dict[str, Any] = {"true": True, "false": False, "none": None}
_ARITY: dict[str, tuple[int, int]] = {
    "min": (2, 64),
    "max": (2, 64),
    "abs": (1, 1),
    "int": (1, 1),
    "float": (1, 1),
    "round": (1, 2),
    "log2": (1, 1),
}

# What a rejected node is called in the error message.
_CONSTRUCT_NAMES: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Dict: "dict literals",
    ast.JoinedStr: "f-strings",
    ast.NamedExpr: "assignment (:=)",
    ast.Starred: "starred arguments",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices",
    ast.MatMult: "the @ operator",
    ast.BitAnd: "bitwise operators",
    ast.BitOr: "bitwise operators",
    ast.BitXor: "bitwise operators",
    ast.LShift: "shift operators",
    ast.RShift: "shift operators",
    ast.Invert: "the ~ operator",
    ast.Is: "'is' (use == or !=)",
    ast.IsNot: "'is not' (use == or !=)",
}


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression.

    Attributes:
        text: the source text.
        names: the parameter names it reads.
    """

    text: str
    names: frozenset[str]
    _tree: ast.expr = field(repr=False, compare=False)

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """The value of the expression; names missing from ``values`` are ``None``.

        Raises:
            ConfigError: an operation on values of the wrong types (``'LL' < 3``).
        """
        try:
            return _Eval(values).run(self._tree)
        except TypeError as exc:
            raise ConfigError(
                f"expression {self.text!r} cannot be evaluated with {dict(values)!r}: {exc} "
                "(compare values of the same type)"
            ) from None

    def holds(self, values: Mapping[str, Any]) -> bool:
        """Whether the expression is true for ``values`` (``None`` counts as false)."""
        return bool(self.evaluate(values))

    def __str__(self) -> str:
        return self.text


def parse(text: str) -> Expr:
    """Parse and check one expression.

    Raises:
        ConfigError: the text is not valid Python syntax, or uses a construct outside the
            whitelist (the message names it).
    """
    if not isinstance(text, str):
        raise ConfigError(f"an expression must be a string, not {type(text).__name__}")
    if not text.strip():
        raise ConfigError("empty expression (write a condition such as 'x > 1')")
    if len(text) > MAX_LENGTH:
        raise ConfigError(f"expression is {len(text)} characters long (at most {MAX_LENGTH})")
    source = text.strip()
    try:
        # "1if a else 2" or "'\d'" only warn in Python; here they are errors, never printed.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ConfigError(
            f"expression {text!r} is not valid syntax{where}: {exc.msg} "
            "(use Python syntax: a > 1 and b in ['x', 'y'])"
        ) from None
    except (ValueError, RecursionError, MemoryError, OverflowError, Warning) as exc:
        raise ConfigError(f"expression {text!r} cannot be parsed: {exc}") from None
    if isinstance(tree.body, ast.List | ast.Tuple | ast.Set):
        raise _reject(text, "a list outside 'x in [...]'")
    names: set[str] = set()
    _check(tree.body, text, names, 0)
    return Expr(text=text, names=frozenset(names), _tree=tree.body)


@functools.lru_cache(maxsize=1024)
def compiled(text: str) -> Expr:
    """``parse`` with a cache: conditions and constraints are evaluated for every trial."""
    return parse(text)


def _reject(text: str, what: str) -> ConfigError:
    return ConfigError(
        f"expression {text!r} uses {what}, which is not allowed "
        "(allowed: names, literals, arithmetic, comparisons, and/or/not, x if c else y, "
        f"calls to {', '.join(FUNCTIONS)})"
    )


def _check(node: ast.AST, text: str, names: set[str], depth: int) -> None:
    """Walk the tree; refuse anything outside the whitelist; collect the names read."""
    if depth > MAX_DEPTH:
        raise ConfigError(f"expression {text!r} is nested too deeply (at most {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        if node.value is not None and not isinstance(node.value, bool | int | float | str):
            raise _reject(text, f"a {type(node.value).__name__} literal")
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise _reject(text, "an infinite number")
        return
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            raise _reject(text, f"the dunder name {node.id!r}")
        if node.id in FUNCTIONS:
            raise _reject(text, f"the function {node.id!r} without calling it")
        if node.id not in LITERAL_NAMES:
            names.add(node.id)
        return
    children: Iterable[ast.AST]
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise _reject(text, _CONSTRUCT_NAMES.get(type(node.op), type(node.op).__name__))
        children = (node.left, node.right)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
            raise _reject(text, _CONSTRUCT_NAMES.get(type(node.op), type(node.op).__name__))
        children = (node.operand,)
    elif isinstance(node, ast.BoolOp):
        children = node.values
    elif isinstance(node, ast.IfExp):
        children = (node.test, node.body, node.orelse)
    elif isinstance(node, ast.Compare):
        for op, right in zip(node.ops, node.comparators, strict=True):
            if type(op) not in _COMPARE:
                raise _reject(text, _CONSTRUCT_NAMES.get(type(op), type(op).__name__))
            if isinstance(right, ast.List | ast.Tuple | ast.Set) and not isinstance(
                op, ast.In | ast.NotIn
            ):
                raise _reject(text, "a list compared with ==/</> (lists go after 'in')")
            if isinstance(op, ast.In | ast.NotIn):
                if not isinstance(right, ast.List | ast.Tuple | ast.Set):
                    raise _reject(text, "'in' with something other than a list literal")
        children = (node.left, *node.comparators)
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        # Only reachable as the right side of ``in`` (checked above); elsewhere refuse.
        children = node.elts
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            raise _reject(text, "attribute access (methods)")
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            called = node.func.id if isinstance(node.func, ast.Name) else "a computed function"
            raise _reject(text, f"a call to {called}")
        if node.keywords:
            raise _reject(text, "keyword arguments")
        low, high = _ARITY[node.func.id]
        if not low <= len(node.args) <= high:
            want = str(low) if low == high else f"{low} to {high}"
            raise ConfigError(
                f"expression {text!r}: {node.func.id}() takes {want} arguments, "
                f"got {len(node.args)}"
            )
        children = node.args
    else:
        what = _CONSTRUCT_NAMES.get(type(node), type(node).__name__)
        raise _reject(text, what)
    for child in children:
        if isinstance(child, ast.List | ast.Tuple | ast.Set) and not (
            isinstance(node, ast.Compare) and child is not node.left
        ):
            raise _reject(text, "a list outside 'x in [...]'")
        _check(child, text, names, depth + 1)


class _Eval:
    """Evaluates a checked tree. ``None`` propagates through arithmetic (see module doc)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def run(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in LITERAL_NAMES:
                return LITERAL_NAMES[node.id]
            return self.values.get(node.id)
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for value_node in node.values:
                result = self.run(value_node)
                if isinstance(node.op, ast.And) and not result:
                    return result
                if isinstance(node.op, ast.Or) and result:
                    return result
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.run(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            if operand is None:
                return None
            _number(operand, "unary minus")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.IfExp):
            return self.run(node.body) if self.run(node.test) else self.run(node.orelse)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return [self.run(e) for e in node.elts]
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            args = [self.run(a) for a in node.args]
            if any(a is None for a in args):
                return None
            try:
                return _real(FUNCTIONS[node.func.id](*args))
            except (ValueError, OverflowError, ZeroDivisionError):  # a math error: undefined (None)
                return None
        raise AssertionError(f"unchecked node {type(node).__name__}")  # parse() refuses these

    def _binary(self, node: ast.BinOp) -> Any:
        left, right = self.run(node.left), self.run(node.right)
        if left is None or right is None:
            return None
        # Strings only concatenate; repetition ("x" * 10**9) could exhaust memory.
        if isinstance(left, str) or isinstance(right, str):
            if not (
                isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str)
            ):
                raise TypeError(
                    f"unsupported operand types {type(left).__name__} and {type(right).__name__}"
                )
        else:
            _number(left, "arithmetic")
            _number(right, "arithmetic")
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _real(_BINARY[type(node.op)](left, right))
        except (ZeroDivisionError, OverflowError, ValueError):  # a math error: undefined (None)
            return None

    def _compare(self, node: ast.Compare) -> bool:
        left_node, left = node.left, self.run(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.run(right_node)
            if left is None or right is None:
                # Only an explicit ``== None`` / ``!= None`` may see an unset value.
                explicit = _is_none_literal(left_node) or _is_none_literal(right_node)
                if explicit and isinstance(op, ast.Eq | ast.NotEq):
                    ok = (left is None and right is None) == isinstance(op, ast.Eq)
                else:
                    ok = False
            else:
                ok = bool(_COMPARE[type(op)](left, right))
            if not ok:
                return False
            left_node, left = right_node, right
        return True


def _real(value: Any) -> Any:
    """``(-8) ** 0.5`` is complex in Python; here it is undefined (``None``)."""
    return None if isinstance(value, complex) else value


def _is_none_literal(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or (
        isinstance(node, ast.Name) and node.id in ("None", "none")
    )


def _number(value: Any, what: str) -> None:
    if not isinstance(value, int | float):  # bool is an int: True + 1 == 2, as in Python
        raise TypeError(f"{what} needs numbers, got {type(value).__name__} {value!r}")


def _check_power(base: Any, exponent: Any) -> None:
    """Refuse powers whose result would be enormous (``9 ** 9 ** 9``)."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if max(abs(base).bit_length(), 1) * exponent > MAX_POW_BITS:
            raise TypeError(f"{base} ** {exponent} is too large (result over {MAX_POW_BITS} bits)")
    elif abs(exponent) > 10_000:
        raise TypeError(f"exponent {exponent} is too large")


def topo_order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Order names so that each comes after the names it depends on (stable otherwise).

    Raises:
        ValueError: the dependencies form a cycle; the message names it.
    """
    order: list[str] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name) :] + [name]
            raise ValueError(" -> ".join(cycle))
        state[name] = 1
        for dep in deps.get(name, ()):
            if dep in deps:
                visit(dep, [*path, name])
        state[name] = 2
        order.append(name)

    for name in deps:
        visit(name, [])
    return order
