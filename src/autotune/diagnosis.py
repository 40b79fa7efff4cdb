"""Diagnose a saved log: which engine wrote it, whose rules read it, and why it failed.

``autotune diagnose`` and ``bench/diagnosis.py`` both come here, and a trial's crash goes
through the same classifier (``node/failures/``): the engine is the one named, else the one
whose marks the log carries (``node/logparse.py``: SGLang, vLLM and its forks, TGI,
TensorRT-LLM, lmdeploy, llama.cpp and the servers on it, mistral.rs, ...), else an installed
engine whose rule file's marks appear (plug-ins), else none. Its rule family decides the rules
and hints: a registered engine's own (with its milestones), else a bundled rule file of that
name (hints in that engine's flags), else the common rules, which know every family.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.engines import ENGINES, guess_engine
from autotune.engines.flagtable import load_table, message_flags
from autotune.models import Failure, Milestone, Rule
from autotune.node.failures import diagnose_lines
from autotune.node.logparse import detect_engine
from autotune.rules import bundled_rule_files, load_log

__all__ = ["Diagnosis", "diagnose_text", "rules_for"]

_ENGINE_CHARS = 1 << 20  # characters from each end of a log searched for an engine's marks


@dataclass(frozen=True)
class Diagnosis:
    """What ``autotune diagnose`` says of one log.

    Attributes:
        failure: why it failed; None when the log is healthy.
        engine: the engine believed to have written it (None: no engine's marks found).
        rules_from: the rule file whose rules and hints were used (``common`` for none).
    """

    failure: Failure | None
    engine: str | None
    rules_from: str


def rules_for(family: str) -> tuple[list[Rule], tuple[Milestone, ...]]:
    """The rules (most specific first) and milestones of ``family``: a registered engine's,
    else the bundled rule file of that name, else the common rules.

    Raises:
        ConfigError: a registered engine's rule file is invalid.
    """
    if family != "common" and family in ENGINES:
        profile = ENGINES.get_class(family).log_profile()
    else:
        profile = load_log(family)
    return list(profile.rules), tuple(profile.milestones)


def diagnose_text(
    text: str, *, engine: str | None = None, exit_code: int | None = None, learnt: bool = True
) -> Diagnosis:
    """Classify the log ``text``, as written by ``engine`` (None: guessed from the log);
    ``learnt=False``: the rules alone, no learnt cause where they say ``unknown``.

    Raises:
        ConfigError: ``engine`` names no engine and no rule file.
    """
    if engine is not None:
        if engine not in ENGINES and engine not in bundled_rule_files():
            ENGINES.get_class(engine)  # raises ConfigError naming the known engines
        name: str | None = engine
        family = engine
    else:
        found = detect_engine(text[:_ENGINE_CHARS] + "\n" + text[-_ENGINE_CHARS:])
        if found is not None:
            name, family = found
        else:
            name = guess_engine(text[:_ENGINE_CHARS])
            family = name or "common"
    rules, milestones = rules_for(family)
    failure = diagnose_lines(
        text.splitlines(),
        rules,
        exit_code,
        milestones=milestones or None,
        engine=name,
        learnt=learnt,
        flags=message_flags(load_table(name, None) if name is not None else None),
    )
    return Diagnosis(failure=failure, engine=name, rules_from=family)
