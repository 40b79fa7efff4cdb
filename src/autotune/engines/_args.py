"""Small helpers over argv lists: find a flag's value, rename flags, iterate over flags.

Launch arguments come as a flat list in either ``--flag value`` or ``--flag=value`` form;
these helpers understand both so that engines never re-implement argparse badly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

# A token that is a value even though it starts with "-" (argparse treats these as values).
_NEGATIVE_NUMBER = re.compile(r"^-\d+(\.\d*)?([eE][-+]?\d+)?$|^-\.\d+$")


def is_flag(token: str) -> bool:
    """Whether ``token`` is an option name (``--x``, ``-x``, ``--x=1``), not a value like ``-1``."""
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def iter_flags(args: Sequence[str]) -> Iterator[tuple[int, str, str | None]]:
    """Yield ``(index, flag, inline_value)`` for each option token in ``args``."""
    for i, token in enumerate(args):
        if is_flag(token):
            name, sep, value = token.partition("=")
            yield i, name, (value if sep else None)


def flag_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last occurrence of any of ``names`` (argparse: the last one wins).

    Returns:
        The value, ``""`` for a flag present without a value, or None when absent.
    """
    found: str | None = None
    for i, name, inline in iter_flags(args):
        if name not in names:
            continue
        if inline is not None:
            found = inline
        elif i + 1 < len(args) and not is_flag(args[i + 1]):
            found = args[i + 1]
        else:
            found = ""
    return found


def has_flag(args: Sequence[str], names: Sequence[str]) -> bool:
    """Whether any of ``names`` occurs in ``args``."""
    return any(name in names for _, name, _ in iter_flags(args))


def int_flag(args: Sequence[str], names: Sequence[str]) -> int | None:
    """An integer flag's value, or None when absent or not an integer."""
    value = flag_value(args, names)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:  # not an integer: documented as None
        return None


# ``name=value`` in a printed Python object (a config dump in a log): scalars only.
_SCALAR = re.compile(r"\b([a-z][a-z0-9_]*)=(None|True|False|-?\d+(?:\.\d+)?|'[^',]*')(?=[,)\s]|$)")


def logged_flags(text: str) -> dict[str, str]:
    """``{--flag-name: value}`` of the scalar ``name=value`` pairs in ``text`` (the first of
    each; ``None`` left out): an engine's printed arguments, as launch flags."""
    out: dict[str, str] = {}
    for name, value in _SCALAR.findall(text):
        if value != "None":
            out.setdefault("--" + name.replace("_", "-"), value.strip("'"))
    return out
