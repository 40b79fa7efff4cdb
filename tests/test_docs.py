"""The documents a reader uses stay usable: benchmarks hold current figures, not history, and
each design decision is one short record listed in the index."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
DECISIONS = DOCS / "decisions"


def test_benchmarks_hold_current_figures_in_at_most_600_lines() -> None:
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 600, "history belongs in git: keep the current figure"
    for section in re.split(r"\n## ", text)[1:]:
        title = section.splitlines()[0]
        command = re.search(r"```bash|`[^`\n]*(python|autotune)[^`\n]*`", section)
        assert command, f"{title}: no command to rerun it"
        assert re.search(r"20\d\d-\d\d-\d\d", section), f"{title}: no date"


def test_each_decision_is_one_short_record_in_the_index() -> None:
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    records = sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    for path in records:
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 70, f"{path.name}: one decision, a few dozen lines"
        for part in ("## Context", "## Choice", "## Consequences"):
            assert part in text, f"{path.name}: no {part}"
        assert f"({path.name})" in index, f"{path.name} is not listed in decisions/README.md"
    numbers = [p.name[:4] for p in records]
    assert len(set(numbers)) == len(numbers), "two records share a number"
