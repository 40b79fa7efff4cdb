"""Classify a failed trial from its log: cause, phase, evidence, engine, blame and a right hint.

The log is first undressed (node/logparse.py: container, time, rank and logger prefixes off,
flattened lines split, each line's level and process kept). Then, in this order:

1. **Rules, errors before warnings.** Rules are tried in order (most specific first; a family
   that wraps another comes before it) over every line that is not a warning; the first rule
   with a matching line wins. Only when no rule matches an error line, and the log shows a
   failure, are warnings looked at too: a warning is never the cause when an error follows.
2. **The structure of the log**, when no rule names a cause: the first exception that is not
   an echo of another process's death (its type names the family: an ``ImportError``, an
   ``AssertionError``, an out-of-memory), a traceback cut before its exception (its frames
   name the family: graph capture, the KV pool's allocation, distributed start-up), the first
   ``ERROR``/``FATAL`` line, the exit code or the kill signal, and where the log stops: a log
   that stops during start-up without an error is a start-up hang (a capture in progress, a
   capture failure); after readiness, a death no rule explains is a runtime crash.
3. **Never healthy by default**: only a log that reached the ready line (or served requests)
   and shows no failure is healthy (``diagnose`` prints ``ok``); anything else gets a cause,
   at worst ``unknown`` with the line it rests on and the phase.

Lines are matched without their prefixes and as written; a pattern holding ``\\n`` is matched
across consecutive lines, and a rule with ``near`` also needs that pattern within a few lines.
The phase comes from the rule, else from the traceback's frames and the progress lines of the
log, else from what the cause implies. ``autotune diagnose`` and a trial use this one package.

Its modules: log.py (the log undressed), matching.py (rules matched to lines, the literal
pre-filter), traces.py (exceptions, tracebacks, stack dumps, the message a failure rests on),
phases.py (the phase), progress.py (progress, readiness, error lines), clients.py (benchmark
clients, access logs), stops.py (a log that stops with no error), focus.py (the lines a family
is read from), hints.py (hints and blame), classifier.py (the order above) and api.py (the
entry points, re-exported here with the other public names).
"""

from __future__ import annotations

from autotune.node.failures.api import classify, diagnose_file, diagnose_lines, is_failure
from autotune.node.failures.hints import KILLED_HINT, blamed
from autotune.node.failures.matching import first_match
from autotune.node.failures.phases import CAUSE_PHASE, phase_in_block, phase_reached
from autotune.node.failures.progress import GENERIC_MILESTONES
from autotune.node.logparse import detect_engine, strip_prefix

__all__ = [
    "CAUSE_PHASE",
    "GENERIC_MILESTONES",
    "KILLED_HINT",
    "blamed",
    "classify",
    "detect_engine",
    "diagnose_file",
    "diagnose_lines",
    "first_match",
    "is_failure",
    "phase_in_block",
    "phase_reached",
    "strip_prefix",
]
