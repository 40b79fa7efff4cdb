"""The classifier's entry points: :func:`classify` for a trial, :func:`diagnose_lines` and
:func:`diagnose_file` for a saved log, and :func:`is_failure`, which tells a failure from a
healthy run.

Each reads the log with :func:`_classify_log` (classifier.py), the generic progress lines added
to any engine's, and corrects two of its answers: a model refused by a registry that lists it
as supported is an installation problem, and (unless told not to) a failed run the rules call
``unknown`` gets the cause learnt from the corpus's words (node/learned.py) where the model
names one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from autotune.models import LEARNT_RULE, Cause, Failure, Milestone, Phase, Rule
from autotune.node.failures.classifier import _classify_log
from autotune.node.failures.hints import _LISTED_HINT, _cause_hint, _listed_refusal
from autotune.node.failures.log import _trim
from autotune.node.failures.phases import CAUSE_PHASE, _family_phase
from autotune.node.failures.progress import GENERIC_MILESTONES
from autotune.node.learned import guess


def classify(
    lines: Sequence[str],
    rules: Sequence[Rule],
    *,
    phase: Phase,
    exit_code: int | None,
    argv: Sequence[str],
    env: dict[str, str],
    engine: str | None = None,
    milestones: Sequence[Milestone] | None = None,
    flags: Mapping[str, Sequence[str]] | None = None,
) -> Failure:
    """Decide why a trial failed.

    Args:
        lines: the server log (or its tail).
        rules: failure rules, most specific first.
        phase: the phase the trial had reached; used when the rule names none.
        exit_code: the server's exit code (negative: killed by that signal), None if running.
        argv: the launch command, for blame.
        env: the launch environment (the spec's, not the whole node's), for blame.
        engine: the engine the log was launched as; the engine whose marks the log carries
            is named instead when there is one (node/logparse.py).
        milestones: the engine's progress lines, which tell the phase and readiness (the
            generic ones are used too).
        flags: the engine's flags, with the values a message may quote: the hint of a
            refused setting names the flags its message speaks of (:func:`named_flags`).

    Returns:
        A Failure; cause ``unknown`` when nothing recognisable was found (a healthy log
        included: :func:`diagnose_lines` tells that one apart).
    """
    failure, _ = _classify(
        lines,
        rules,
        phase=phase,
        exit_code=exit_code,
        argv=argv,
        env=env,
        engine=engine,
        milestones=GENERIC_MILESTONES if milestones is None else (*milestones, *GENERIC_MILESTONES),
        flags=flags,
    )
    return failure


def _classify(
    lines: Sequence[str],
    rules: Sequence[Rule],
    *,
    phase: Phase,
    exit_code: int | None,
    argv: Sequence[str],
    env: dict[str, str],
    engine: str | None,
    milestones: Sequence[Milestone],
    learnt: bool = True,
    flags: Mapping[str, Sequence[str]] | None = None,
) -> tuple[Failure, bool]:
    """What :func:`_classify_log` answers, but a model refused by a registry that lists it
    as supported is an installation problem, whichever of its many answers named the model;
    and a failed run the rules call ``unknown`` gets the cause learnt from the corpus's words
    where the model names one (``learnt``: node/learned.py)."""
    failure, healthy = _classify_log(
        lines,
        rules,
        phase=phase,
        exit_code=exit_code,
        argv=argv,
        env=env,
        engine=engine,
        milestones=milestones,
        flags=flags,
    )
    if failure.cause == Cause.MODEL_UNSUPPORTED and _listed_refusal(lines) is not None:
        update = {
            "cause": Cause.IMPORT_ERROR,
            "hint": _LISTED_HINT,
            "phase": Phase.LAUNCH,
            "by_words": False,
        }
        failure = failure.model_copy(update=update)
    if learnt and failure.cause == Cause.UNKNOWN and not healthy:
        failure = _learnt_cause(failure, lines, rules, exit_code)
    return failure, healthy


def _learnt_cause(
    failure: Failure, lines: Sequence[str], rules: Sequence[Rule], exit_code: int | None
) -> Failure:
    """``failure`` (cause ``unknown``) with the cause the learnt model names, its evidence the
    rules' own and the lines whose words weighed most, that cause's phase (the one phase its
    family happens in, else the log's progress, else what the cause implies) and hint, as
    permanent as the rules' ``unknown`` was (a guess marks its own configuration only:
    study/deadends.py); as it was if the model names none."""
    found = guess(lines, exit_code)
    if found is None:
        return failure
    cause = Cause(found.cause)
    phase = _family_phase(cause, "\n".join(found.evidence)) or (
        CAUSE_PHASE.get(cause, Phase.LAUNCH) if failure.phase == Phase.LAUNCH else failure.phase
    )
    hint, _ = _cause_hint(cause, phase, rules)
    # What the rules saw go wrong comes first (the guess is read against it), then the line
    # whose words weighed most (where the rules found no failing line, the only one).
    said, weighed = failure.message, found.evidence[0] if found.evidence else ""
    if weighed and weighed not in said:
        said = f"{said} (weighed most: {weighed})" if said else weighed
    evidence = [*failure.evidence, *(e for e in found.evidence if e not in failure.evidence)]
    update = {
        "cause": cause,
        "phase": phase,
        "hint": hint,
        "evidence": evidence,
        "rule": LEARNT_RULE,
        "message": _trim(f"learnt from the corpus (p={found.probability:.2f}): {said}"),
    }
    return failure.model_copy(update=update)


def is_failure(failure: Failure, lines: Sequence[str]) -> bool:
    """Whether the log ``failure`` was classified from shows a failure (not a healthy run).

    Only a log that reached the ready line (or served requests), exited cleanly or not at all
    and shows no error, exception or traceback is healthy.
    """
    _, healthy = _classify(
        lines,
        [],
        phase=failure.phase,
        exit_code=failure.exit_code,
        argv=(),
        env={},
        engine=failure.engine,
        milestones=GENERIC_MILESTONES,
        learnt=False,
    )
    return failure.rule is not None or failure.cause != Cause.UNKNOWN or not healthy


def diagnose_lines(
    lines: Sequence[str],
    rules: Sequence[Rule],
    exit_code: int | None = None,
    *,
    milestones: Sequence[Milestone] | None = None,
    argv: Sequence[str] = (),
    env: dict[str, str] | None = None,
    engine: str | None = None,
    learnt: bool = True,
    flags: Mapping[str, Sequence[str]] | None = None,
) -> Failure | None:
    """Classify a log after the fact: the failure, or None when the log is healthy.

    The same classifier as a trial's (:func:`classify`); the phase comes from the log's own
    progress lines (``milestones``, generic ones when None). ``learnt=False``: the rules
    alone, no learnt cause for their ``unknown`` (the benches' baseline). ``flags``: every
    flag the engine takes, with its choices, where no launch command is known (the engine's
    flag table), so that the hint names the flags its message speaks of.
    """
    marks = GENERIC_MILESTONES if milestones is None else (*milestones, *GENERIC_MILESTONES)
    failure, healthy = _classify(
        lines,
        rules,
        phase=Phase.LAUNCH,  # the log's own progress lines tell how far it got
        exit_code=exit_code,
        argv=argv,
        env=env or {},
        engine=engine,
        milestones=marks,
        learnt=learnt,
        flags=flags,
    )
    return None if healthy else failure


def diagnose_file(
    path: str,
    rules: list[Rule],
    exit_code: int | None = None,
    *,
    milestones: Sequence[Milestone] | None = None,
    argv: Sequence[str] = (),
    env: dict[str, str] | None = None,
    engine: str | None = None,
) -> Failure | None:
    """Classify a server log file after the fact (``autotune diagnose LOGFILE``).

    Args:
        path: the log file.
        rules: failure rules, most specific first (e.g. ``load_rules("sglang")``).
        exit_code: the server's exit code, if known.
        milestones: the engine's startup milestones; generic ones when None.
        argv: the launch command, if known (for blame).
        env: the launch environment, if known (for blame).
        engine: the engine that wrote the log; None: guessed from its marks.

    Returns:
        The failure, or None when the log shows none (a healthy log).

    Raises:
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return diagnose_lines(
        text.splitlines(),
        rules,
        exit_code,
        milestones=milestones,
        argv=argv,
        env=env,
        engine=engine,
    )
