"""``LocatedError``: a validation error that names the key of the space file it is about.

The schema's validators and the scenario checks raise it; ``space.load`` turns the key into
``FILE:LINE: field``. It sits below both so that neither imports the other for it.
"""

from __future__ import annotations


class LocatedError(ValueError):
    """A validation error about one key below the model being validated.

    Args:
        message: what is wrong and the fix.
        at: the path from the model to the key, e.g. ``("low",)`` or ``("baseline", "x")``.
    """

    def __init__(self, message: str, at: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.at = at


__all__ = ["LocatedError"]
