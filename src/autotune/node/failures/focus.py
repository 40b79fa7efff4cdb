"""The lines a failure's family is read from when no rule names it, and the failure they give.

node/families.py scores each family from weighed lines: the first fatal exception and its
message (read whole when wrapped, with its cause chain), the error lines (the first most), the
frames of a traceback (its deepest code lines most), what a program printed just before it
raised, decisive warnings, and the progress just before the failure. :func:`_specific` makes
the failure of the narrower family that a generic rule's line names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autotune.models import Cause, Failure, Phase, Rule
from autotune.node.failures.hints import _cause_hint, _Context, _make, blamed
from autotune.node.failures.log import _ROUTINE, _evidence, _Log, _trim
from autotune.node.failures.phases import _family_phase, _resolve_phase, phase_in_block
from autotune.node.failures.progress import _is_error_record, _Signals
from autotune.node.failures.traces import (
    _FRAME,
    _TRACE_LINE,
    _TRACEBACK,
    BLOCK_BEFORE,
    _block_span,
    _in_trace,
    _is_exception,
    _sizes,
)
from autotune.node.families import (
    BUILDING_FAILED,
    CONTEXT_LINE,
    DEEP_LINE,
    ERROR_LINE,
    EXCEPTION_LINE,
    FRAME_LINE,
    LATER_ERROR_LINE,
    PHASE_PRIOR,
    WARNING_LINE,
    Focus,
    Verdict,
    decisive,
)

_CAUSED_BY = re.compile(r"^\s*Caused by:\s*$")
_BARE_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):?$")


def _message_lines(log: _Log, at: int) -> list[Focus]:
    """The exception (or error) line at ``at`` and the lines that continue its message (a
    validation error's details, a wrapped message), not the frames after it."""
    lines = [Focus(at, log.text[at], EXCEPTION_LINE, raw=log.raw[at])]
    # A message wrapped by a console logger goes on in indented lines: one message, read whole;
    # an exception with no message of its own ("TVMError: ", then a banner) tells it below.
    bare = bool(_BARE_EXCEPTION.match(log.text[at].strip()))
    indented = at + 1 < len(log.text) and log.text[at + 1][:1].isspace()
    longest = 8 if indented or bare else 3
    level = log.records[at].level
    for j in range(at + 1, min(len(log.text), at + 1 + longest)):
        text = log.text[j]
        if not text.strip() or _FRAME.match(text) or _is_exception(text) or _TRACEBACK in text:
            break
        if log.records[j].level not in (None, level):
            break  # a logger's record of its own (an INFO line's advice), not the message
        lines.append(Focus(j, text, EXCEPTION_LINE, raw=log.raw[j]))
    # An error that tells its cause chain below it (Rust's "Caused by:", Go's wrapped errors):
    # the causes are the same message, read with it.
    j = at + 1
    while j < len(log.text) and j <= at + 3 and not log.text[j].strip():
        j += 1
    if j < len(log.text) and _CAUSED_BY.match(log.text[j]):
        for k in range(j + 1, min(len(log.text), j + 6)):
            if not log.text[k].strip():
                break
            lines.append(Focus(k, log.text[k].strip(), EXCEPTION_LINE, raw=log.raw[k]))
    return lines


def _told_before_traceback(log: _Log) -> int | None:
    """The plain line a program printed right before its first traceback, if any: no logger
    level, no warning, no progress or routine line, not itself part of a trace."""
    header = next((i for i, t in enumerate(log.text) if _TRACEBACK in t), None)
    if header is None:
        return None
    i = header - 1
    while i >= 0 and not log.text[i].strip():
        i -= 1
    if i < 0 or log.records[i].level is not None or log.warning[i]:
        return None
    text = log.text[i]
    if _in_trace(text) or _ROUTINE.search(text) or _FRAME.match(text):
        return None
    return i


_RAISE_LINE = re.compile(r"^\s*raise [\w.]+\(")


def _focus(log: _Log, sig: _Signals, exc: int | None) -> list[Focus]:
    """The lines a failure's family is read from, each weighed by how much it tells: the first
    fatal exception and its message, the error lines (the first most), the frames of a
    traceback cut before its exception (its deepest code lines most), and the progress lines
    just before the first failure (what was being done)."""
    lines: list[Focus] = []
    if exc is not None:
        lines += _message_lines(log, exc)
        above = exc - 1
        if (
            above >= 0
            and BUILDING_FAILED.match(log.text[exc].strip())
            and _RAISE_LINE.match(log.text[above])
        ):
            # building the exception failed: the raise statement says which one was meant
            lines.append(Focus(above, log.text[above], EXCEPTION_LINE, raw=log.raw[above]))
    seen = {f.index for f in lines}
    texts: set[str] = set()
    if sig.error is not None and sig.error not in seen:
        texts.add(log.text[sig.error])
        lines += [
            Focus(f.index, f.text, ERROR_LINE * f.weight, raw=f.raw)
            for f in _message_lines(log, sig.error)
        ]
    for i, rec in enumerate(log.records):
        text = rec.text
        if i in seen or log.warning[i] or not text.strip() or text[0].isspace():
            continue
        if _FRAME.match(text) or _TRACE_LINE.match(text) and not _is_exception(text):
            continue
        if not (_is_error_record(rec) or (rec.level is None and _is_exception(text))):
            continue
        if text in texts:  # every rank wrote it: one line
            continue
        texts.add(text)
        # The first error report (its first line and the error lines right after it) weighs
        # most: "Error loading model." may be followed by the line that says why.
        first_report = sig.error is not None and sig.error <= i <= sig.error + 3
        weight = ERROR_LINE if len(texts) == 1 or first_report else LATER_ERROR_LINE
        lines += [
            Focus(f.index, f.text, weight * f.weight, raw=f.raw) for f in _message_lines(log, i)
        ]
        if len(texts) >= 8:
            break
    told = _told_before_traceback(log)
    if told is not None and told not in {f.index for f in lines}:
        # What a program printed just before it raised ("Please input a model_name", then the
        # traceback): its own account of the failure, read like an error line.
        lines.append(Focus(told, log.text[told], ERROR_LINE, raw=log.raw[told]))
    if not any(decisive(f.text) for f in lines):
        # No error names a family: what the warnings say decisively (a warning may be all there
        # is, such as PyTorch's that it has no kernels for this GPU, or the import that failed
        # before an exception saying a feature is missing).
        # A traceback cut before its exception says nothing of why: the warning that a
        # library would not load is then the log's only account.
        cut_short = sig.traceback is not None and (exc is None or exc < sig.traceback)
        weight = LATER_ERROR_LINE if not lines and not cut_short else WARNING_LINE
        lines += [
            Focus(i, log.text[i], weight, raw=log.raw[i])
            for i in range(len(log.text))
            if log.warning[i] and decisive(log.text[i])
        ][:4]
    if exc is not None and exc > 0 and _in_trace(log.text[exc - 1]):
        # The traceback that ends in the exception: where it was raised (an argument check, a
        # model lookup, a capture) speaks when its message does not.
        start, _ = _block_span(log.text, exc - 1)
        block = range(start, exc)
        lines += [Focus(i, log.text[i], FRAME_LINE * 0.8, "frame") for i in block]
        code = [i for i in block if log.text[i].strip() and not _is_exception(log.text[i])]
        lines += [Focus(i, log.text[i], DEEP_LINE * 0.8, "deepest") for i in code[-3:]]
    cut = sig.traceback is not None and (exc is None or exc < sig.traceback)
    if cut and sig.traceback is not None:
        start, end = _block_span(log.text, sig.traceback)
        block = range(start, end)
        after = next((i for i in range(end, len(log.text)) if log.text[i].strip()), None)
        if after is not None and log.records[after].level is None and not log.warning[after]:
            # A plain line right after the frames: the message of an exception whose type
            # line was lost (a logger's prefix on the frames but not on the message).
            lines.append(Focus(after, log.text[after], EXCEPTION_LINE, raw=log.raw[after]))
        lines += [Focus(i, log.text[i], FRAME_LINE, "frame") for i in block]
        code = [i for i in block if log.text[i].strip() and not _is_exception(log.text[i])]
        lines += [Focus(i, log.text[i], DEEP_LINE, "cut") for i in code[-3:]]
        # The error lines around it often name the method that failed ("Error executing
        # method initialize_cache").
        lines += [
            Focus(f.index, f.text, FRAME_LINE, "frame")
            for f in list(lines)
            if f.kind == "message" and start - BLOCK_BEFORE <= f.index < end
        ]
    first = min(
        (i for i in (exc, sig.error, sig.traceback) if i is not None),
        default=len(log.text),
    )
    if cut and sig.traceback is not None:
        first = min(first, next((f.index for f in lines if f.kind == "frame"), first))
    before = [i for i in range(max(0, first - 12), first) if log.text[i].strip()]
    lines += [Focus(i, log.text[i], CONTEXT_LINE, "context") for i in before[-4:]]
    if cut and exc is None and sig.progress is not None and sig.progress < first:
        lines.append(Focus(sig.progress, sig.reached.value, PHASE_PRIOR, "phase"))
    return lines


def _specific(
    ctx: _Context,
    verdict: Verdict,
    log: _Log,
    hits: Sequence[int],
    rule: Rule,
    reached: Phase,
    rules: Sequence[Rule],
    argv: Sequence[str],
    env: dict[str, str],
    message: str,
) -> Failure:
    """The failure of the more specific family a generic rule's line names."""
    where = _family_phase(verdict.cause, log.text[verdict.at]) or _resolve_phase(
        None, reached, phase_in_block(log.text, verdict.at), verdict.cause
    )
    hint, permanent = _cause_hint(verdict.cause, where, rules)
    if verdict.cause in (Cause.CUDA_OOM, Cause.KV_POOL_OOM, Cause.HOST_OOM):
        at = verdict.at
        message = _trim(message + _sizes(" ".join(log.text[max(0, at - 3) : at + 8])))
    return _make(
        ctx,
        cause=verdict.cause,
        phase=where,
        hint=hint,
        evidence=_evidence(log.raw, sorted({*hits, verdict.at})),
        rule=rule.id,
        permanent=permanent,
        blame=blamed(rule.blame, argv, env),
        message=message,
        by_words=True,
    )
