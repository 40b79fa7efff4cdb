"""The search benchmark's landscapes live in the test tree (``tests/search/landscapes.py``),
where the search's own tests read them; the benchmark reads them from there."""

from tests.search.landscapes import (
    CRASH_S,
    LANDSCAPES,
    OK_S,
    Landscape,
    Point,
    by_name,
    crash,
    grid,
    levels,
    ok,
)

__all__ = [
    "CRASH_S",
    "LANDSCAPES",
    "OK_S",
    "Landscape",
    "Point",
    "by_name",
    "crash",
    "grid",
    "levels",
    "ok",
]
