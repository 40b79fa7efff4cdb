"""One log's failure, and whether it is healthy, in the order the package docstring gives.

:func:`_classify_log` reads the rules first (errors before warnings), then the log's
structure: where it became ready and what followed, the first fatal exception, the error
lines, a hang, a benchmark client's failures, where the log stops. The entry points (api.py)
correct two of its answers afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from autotune.models import Cause, Failure, Milestone, Phase, Rule
from autotune.node.failures.clients import (
    _SERVED,
    _SERVER_ERROR_ANSWER,
    _client_failure,
    _is_client,
    _refused_all,
)
from autotune.node.failures.focus import _focus, _message_lines, _specific
from autotune.node.failures.hints import (
    ERROR_HINT,
    KILLED_HINT,
    STOPPED_HINT,
    TRACEBACK_HINT,
    _cause_hint,
    _Context,
    _family,
    _hint,
    _make,
    _refusal,
    blamed,
)
from autotune.node.failures.log import _evidence, _last_line, _Log, _trim
from autotune.node.failures.matching import _first_rule, _killed_after_progress, _memory_first
from autotune.node.failures.phases import (
    _FAMILY_PHASE,
    _RUNNING,
    _family_phase,
    _later,
    _resolve_phase,
    phase_in_block,
    phase_reached,
)
from autotune.node.failures.progress import (
    _began_serving,
    _first_request_only,
    _rank_died_before,
    _ready_line,
    _served,
    _Signals,
    _signals,
)
from autotune.node.failures.stops import (
    _SHUTDOWN,
    _TERMINATED,
    SUPERVISOR_HINT,
    _dump_phase,
    _dumped_by_watchdog,
    _ended_by_supervisor,
    _found_no_device,
    _hang_dump,
    _node_lost_at_end,
    _stalled,
    _stopped_in_set_up,
    _waits_at_end,
    _warned_import,
    _warned_short_of_memory,
)
from autotune.node.failures.traces import (
    _FRAME,
    _exception_after,
    _last_exception,
    _message,
    _sizes,
)
from autotune.node.families import GENERIC, REFINES, name_family
from autotune.node.logparse import detect_engine

TAIL = 40  # lines of log tail kept in a Failure

ENGINE_LINES = 3000  # lines from each end of a log searched for an engine's marks

_ARGPARSE = re.compile(r"(?:^|\s)error: (?:argument |the following arguments|unrecognized|invalid)")


def _classify_log(
    lines: Sequence[str],
    rules: Sequence[Rule],
    *,
    phase: Phase,
    exit_code: int | None,
    argv: Sequence[str],
    env: dict[str, str],
    engine: str | None,
    milestones: Sequence[Milestone],
    flags: Mapping[str, Sequence[str]] | None = None,
) -> tuple[Failure, bool]:
    """The failure, and whether the log is healthy (nothing in it says the run failed).
    ``flags``: the engine's flags with the values a message may quote (:func:`named_flags`)."""
    log = whole = _Log.read(lines)
    tail = [_trim(line) for line in lines[-TAIL:]]
    ends = (
        lines if len(lines) <= 2 * ENGINE_LINES else [*lines[:ENGINE_LINES], *lines[-ENGINE_LINES:]]
    )
    found_engine = detect_engine("\n".join(ends))
    if found_engine is not None:
        engine = found_engine[0]  # what the log says wins over the name it was launched as
    sig = _signals(log, milestones)
    ready_at = _ready_line(log, milestones)
    if ready_at is not None and _began_serving(log, milestones, ready_at):
        # The excerpt starts while the server serves: what failed before its first answered
        # request failed while serving (that answer was under way when the engine died).
        ready_at = None
    dead = _rank_died_before(log, ready_at) if ready_at is not None else None
    if dead is not None and ready_at is not None:
        # One rank died before another was ready: that death is the first fatal event, and
        # how far it got is its own progress, not the survivor's.
        log = log.until(ready_at)
        own = [rec.raw for rec in log.records if rec.source == dead]
        sig = _signals(log, milestones, phase_reached(own, milestones)[0])
        ready_at = None
    if ready_at is not None:
        # What failed before the server became ready did not stop it: only what follows counts.
        log = log.since(ready_at + 1)
        stop = next((i for i, t in enumerate(log.text) if _TERMINATED.search(t)), None)
        if stop is not None and not _signals(log.until(stop), milestones, sig.reached).failed:
            # Told to stop (SIGTERM: autotune's teardown, or an operator's) while healthy: the
            # engine's own shutdown messages ("a child crashed with exit code -15") follow.
            log = log.until(stop)
        after = _signals(log, milestones, sig.reached)
        sig = _Signals(
            after.exception,
            after.error,
            after.traceback,
            True,
            sig.reached,
            None,
            after.progress,
        )
    reached = _later(phase, sig.reached)
    bad_exit = exit_code not in (None, 0)
    sources = tuple(r.source for r in log.records)
    found = _first_rule(rules, *log.for_rules(warnings=False), sources)
    if found is None and (sig.failed or bad_exit or not sig.ready):
        found = _first_rule(rules, *log.for_rules(warnings=True), sources)
    if found is not None:
        found = _memory_first(found, rules, log, sources)
        found = _killed_after_progress(found, rules, log, sources, milestones)
    ctx = _Context(
        exit_code=exit_code,
        tail=tail,
        engine=engine,
        refused=_refusal(log),
        flags=flags or {},
    )

    if found is not None and found[0].cause != Cause.UNKNOWN:
        rule, hits = found
        message = _message(log, hits[0])
        if log.text[hits[0]][:1].isspace():
            # A traceback frame matched: the exception that ends the traceback says what.
            exc_after = _exception_after(log, hits[0], source=log.records[hits[0]].source)
            if exc_after is not None:
                message = _message(log, exc_after)
        if rule.cause in (Cause.KV_POOL_OOM, Cause.CUDA_OOM, Cause.HOST_OOM):
            message = _trim(message + _sizes(" ".join(log.text[max(0, hits[0] - 3) : hits[0] + 8])))
        final = _resolve_phase(rule.phase, reached, phase_in_block(log.text, hits[0]), rule.cause)
        if rule.generic or rule.cause in REFINES:
            # A check that failed, a crash, a loose or a plain out-of-memory: it says *that*
            # something failed; when its words (or the log's) name a more specific family, that
            # is the cause (an assertion that a file opens, an out-of-memory raised in the KV
            # cache's frames).
            running = final in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
            focus = [f for i in hits[:3] for f in _message_lines(log, i)]
            verdict = name_family([*focus, *_focus(log, sig, sig.exception)], running=running)
            narrower = (
                REFINES.get(rule.cause, frozenset())
                if rule.cause not in GENERIC
                else frozenset(Cause) - GENERIC
            )
            if rule.cause == Cause.RUNTIME_CRASH:
                narrower |= {Cause.ASSERTION}  # the crash of a failed check (an abort)
            if verdict is not None and verdict.cause in narrower:
                return (
                    _specific(ctx, verdict, log, hits, rule, reached, rules, argv, env, message),
                    False,
                )
        if (
            rule.cause in (Cause.CUDA_OOM, Cause.RUNTIME_CRASH)
            and final == Phase.GRAPH_CAPTURE
            and sig.capture_running is not None
        ):
            # An out-of-memory or a crash while CUDA graphs are captured is the capture's.
            capture_hint, permanent = _cause_hint(Cause.CUDA_GRAPH_CAPTURE, final, rules)
            return (
                _make(
                    ctx,
                    cause=Cause.CUDA_GRAPH_CAPTURE,
                    phase=final,
                    hint=capture_hint,
                    evidence=_evidence(log.raw, [sig.capture_running, *hits]),
                    rule=rule.id,
                    permanent=permanent,
                    blame=blamed(rule.blame, argv, env),
                    message=message,
                ),
                False,
            )
        failure = _make(
            ctx,
            cause=rule.cause,
            phase=final,
            hint=_hint(rule, final),
            evidence=_evidence(log.raw, hits),
            rule=rule.id,
            permanent=rule.permanent,
            blame=blamed(rule.blame, argv, env),
            message=message,
        )
        return failure, False

    # No rule names a cause (a catch-all line may have matched): the structure of the log.
    catch_all = found[0] if found is not None else None
    if exit_code == 2:
        for i, line in enumerate(log.text):
            if _ARGPARSE.search(line):
                return (
                    _make(
                        ctx,
                        cause=Cause.INVALID_ARGUMENT,
                        phase=Phase.LAUNCH,
                        hint="The command line was rejected; check the flag names and values "
                        "against this engine version's --help.",
                        evidence=_evidence(log.raw, [i]),
                        message=_message(log, i),
                    ),
                    False,
                )
    cause = Cause.UNKNOWN
    worded: Cause | None = None  # the word scorer's cause, where it named one
    at: int | None = None
    hint: str | None = None
    message = ""
    exc = sig.exception
    if catch_all is not None and exc is None:
        exc = _last_exception(log)
    cut = sig.traceback is not None and (exc is None or exc < sig.traceback)
    if exc is not None:
        at = exc
        message = _message(log, exc)
    elif sig.traceback is not None:
        at = sig.traceback
    elif sig.error is not None:
        at = sig.error
        message = _message(log, at)
        hint = ERROR_HINT
    elif catch_all is not None:
        at = found[1][0] if found is not None else None
    evidence: list[int] = [] if at is None else [at]
    dump = _hang_dump(log) if exc is None else None
    if dump is not None:
        # Every thread's stack dumped with no fatal error: the program was stuck there (a
        # watchdog or an operator asked for the dump), it did not crash.
        block = _dump_phase(log)
        hung = _later(reached, block) in _RUNNING or _dumped_by_watchdog(log)
        cause = Cause.WATCHDOG_TIMEOUT if hung else Cause.STARTUP_TIMEOUT
        at = dump
        evidence = [dump]
        message = "every thread's stack was dumped with no error (a hang): " + _message(log, dump)
        hint = None
    elif at is not None or sig.failed:
        # What the first fatal exception, the error lines, the frames of a cut traceback and
        # the activity before them say, in any engine's words.
        block_phase = phase_in_block(log.text, at) if at is not None else None
        running = _later(reached, block_phase) in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
        verdict = name_family(_focus(log, sig, exc), running=running)
        if verdict is not None:
            cause = worded = verdict.cause
            if at is None:
                at = verdict.at
            if verdict.at not in evidence:
                evidence.append(verdict.at)
            if not message:
                message = _message(log, verdict.at)
            hint = None
    if at is not None and not message:
        message = _message(log, at)
    if at is not None and cut and (exc is None or _FRAME.match(log.text[at])):
        message = "the traceback stops before its exception: " + message
    if (
        at is not None
        and sig.capture_running is not None
        and at > sig.capture_running
        and cause in (Cause.CUDA_OOM, Cause.RUNTIME_CRASH, Cause.ASSERTION, Cause.UNKNOWN)
    ):
        # A failure while CUDA graphs are being captured is the capture's.
        cause = Cause.CUDA_GRAPH_CAPTURE
        evidence = [sig.capture_running, *evidence]
        hint = None
    block = phase_in_block(log.text, at) if at is not None else None
    if block is None and at is not None and sig.error is not None and sig.error < at:
        # frames that place nothing (native addresses): the first error line's words may
        block = phase_in_block(log.text, sig.error)
    where = _later(reached, block)
    if at is None and exit_code in (-9, 137):
        # A SIGKILL that nothing in the log explains: its usual sender is the kernel's OOM
        # killer, as when the log itself says so ("return code = -9", a shell's "Killed").
        oom_hint, permanent = _cause_hint(Cause.HOST_OOM, where, rules)
        return (
            _make(
                ctx,
                cause=Cause.HOST_OOM,
                phase=where,
                hint=oom_hint,
                permanent=permanent,
                evidence=tail[-5:],
                message="killed by SIGKILL with no error before it",
            ),
            False,
        )
    if at is not None and cause == Cause.UNKNOWN and catch_all is None and exit_code in (-9, 137):
        return (
            _make(
                ctx,
                cause=Cause.KILLED,
                phase=where,
                hint=KILLED_HINT,
                evidence=_evidence(log.raw, [at]),
                message=message,
            ),
            False,
        )
    client = _client_failure(whole) if at is None else None
    if client is not None:
        # A benchmark client's log: its requests failed, or it stopped before its report.
        return _family(ctx, rules, Cause.BENCHMARK_ERRORS, whole.raw, *client), False
    refused = _refused_all(whole) if at is None and not bad_exit else None
    if refused is not None:
        # The server refused every request it logged (4xx) and answered none: its clients'
        # requests failed (the request does not fit the server), whatever else it did.
        message = "the server refused every request it logged: " + _message(whole, refused)
        return _family(ctx, rules, Cause.BENCHMARK_ERRORS, whole.raw, refused, message), False
    if at is None and not bad_exit and _served(whole):
        # The run was served and nothing failed: a report, timings or a table say so.
        quiet = _make(ctx, cause=Cause.UNKNOWN, phase=Phase.BENCHMARK, hint="", evidence=[])
        return quiet, True
    if at is None and whole.stopped and not bad_exit:
        # It ends in a kill its sender called a clean stop, and nothing failed before it.
        quiet = _make(ctx, cause=Cause.UNKNOWN, phase=Phase.TEARDOWN, hint="", evidence=[])
        return quiet, True
    if at is None and not sig.ready and exit_code is None and reached not in _RUNNING:
        # The log stops during start-up with no error: a hang (or a capture that died).
        stopped = sig.capture_running is not None and any(
            _SHUTDOWN.search(t) for t in log.text[sig.capture_running :]
        )
        if sig.capture_running is not None and not stopped:
            cause, at = Cause.CUDA_GRAPH_CAPTURE, sig.capture_running
            message = "the log stops while CUDA graphs are captured: " + _message(log, at)
            where = Phase.GRAPH_CAPTURE
        elif (warned := _warned_import(log)) is not None:
            # Nothing failed but a compiled extension would not load: what stopped the start.
            cause, at = Cause.IMPORT_ERROR, warned
            message = _message(log, at)
        elif (short := _warned_short_of_memory(log)) is not None:
            # Nothing failed but the loader warned that memory is short, and the log stops.
            at, cause = short
            message = _message(log, at)
        elif (lost := _node_lost_at_end(log)) is not None:
            # Nothing failed in the server's words, but a node of its cluster was lost.
            cause, at = Cause.NODE_LOST, lost
            message = _message(log, at)
        elif (ended := _ended_by_supervisor(log)) is not None:
            # Nothing failed in the server's words, but its supervisor ended it for a failed
            # health check, and the log stops there.
            return (
                _make(
                    ctx,
                    cause=Cause.KILLED,
                    phase=where,
                    hint=SUPERVISOR_HINT,
                    evidence=_evidence(log.raw, [ended]),
                    message="a supervisor ended the server after a failed health check: "
                    + _message(log, ended),
                ),
                False,
            )
        elif (bare := _found_no_device(log)) is not None:
            # Nothing failed, but the engine found no device and the log stops there.
            no_device = next((r for r in rules if r.id == "common.no_device"), None)
            return (
                _make(
                    ctx,
                    cause=Cause.INVALID_ARGUMENT,
                    phase=Phase.LAUNCH,
                    hint=_hint(no_device, Phase.LAUNCH)
                    if no_device is not None
                    else _cause_hint(Cause.INVALID_ARGUMENT, Phase.LAUNCH, rules)[0],
                    evidence=_evidence(log.raw, [bare]),
                    rule=None if no_device is None else no_device.id,
                    message=_message(log, bare),
                ),
                False,
            )
        elif (set_up := _stopped_in_set_up(log)) is not None:
            # Nothing failed, but the last lines are all one subsystem's set-up: it hung there.
            at, cause = set_up
            message = "the log stops in a set-up step that never ended: " + _message(log, at)
        elif sig.progress is not None:
            cause, at = Cause.STARTUP_TIMEOUT, sig.progress
            message = "the log stops before the server was ready; last progress: " + _message(
                log, at
            )
            hint = STOPPED_HINT
        elif (last := _last_line(log)) is not None:
            # No progress line this classifier knows, but the program was starting: it hung.
            cause, at = Cause.STARTUP_TIMEOUT, last
            message = "the log stops before the server was ready; last line: " + _message(log, at)
            hint = STOPPED_HINT
        else:
            return (
                _make(
                    ctx,
                    cause=Cause.UNKNOWN,
                    phase=phase,
                    hint=STOPPED_HINT,
                    evidence=tail[-5:],
                    message="the log ends before the server was ready and shows no error",
                ),
                sig.ready or not lines,
            )
    first = _first_request_only(whole, milestones) if at is None and exit_code is None else None
    if first is not None:
        return (
            _make(
                ctx,
                cause=Cause.STARTUP_TIMEOUT,
                phase=Phase.WARMUP,
                hint=STOPPED_HINT,
                evidence=_evidence(whole.raw, [first]),
                message="the log stops inside the first request and no line says the server "
                "was ready (an engine's own warmup request): " + _message(whole, first),
            ),
            False,
        )
    wait = _waits_at_end(log) if at is None and not bad_exit else None
    if wait is not None:
        return (
            _make(
                ctx,
                cause=Cause.STARTUP_TIMEOUT,
                phase=phase,
                hint=STOPPED_HINT,
                evidence=_evidence(log.raw, [wait]),
                message="the log ends waiting for a step that never came: " + _message(log, wait),
            ),
            False,
        )
    stall = _stalled(log) if at is None and sig.ready and not bad_exit else None
    if stall is not None:
        message = "requests are running but no token is generated any more: " + _message(log, stall)
        return _family(ctx, rules, Cause.WATCHDOG_TIMEOUT, log.raw, stall, message), False
    if at is None:
        message = "no failure found"
        if bad_exit:
            message = f"exited with code {exit_code}"
        elif exit_code is not None and not sig.ready:
            message = f"exited with code {exit_code} before the server was ready"
        died = bad_exit and where in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
        return (
            _make(
                ctx,
                cause=Cause.RUNTIME_CRASH if died else Cause.UNKNOWN,
                phase=phase,
                hint=_cause_hint(Cause.RUNTIME_CRASH, where, rules)[0]
                if died
                else "No rule recognises this failure; read the log tail.",
                evidence=tail[-5:],
                message=message,
            ),
            not bad_exit and sig.ready,
        )
    running = where in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
    timed_out = cause == Cause.STARTUP_TIMEOUT and hint != STOPPED_HINT  # words, not a stop
    if (cause == Cause.UNKNOWN or timed_out) and _is_client(whole):
        # A benchmark client's log: what failed, or timed out, is the client's requests.
        cause, where, hint = Cause.BENCHMARK_ERRORS, Phase.BENCHMARK, None
    if (
        cause == Cause.UNKNOWN
        and running
        and _SERVER_ERROR_ANSWER.search(log.text[at])
        and any(_SERVED.search(text) for text in log.text[at + 1 :])
    ):
        # A request the server failed (5xx) while it went on answering others: the requests
        # failed, the server did not.
        cause, where, hint = Cause.BENCHMARK_ERRORS, Phase.BENCHMARK, None
    if cause == Cause.UNKNOWN and running:
        cause = Cause.RUNTIME_CRASH
    if cause == Cause.UNKNOWN:
        permanent = True
        rule_hint = catch_all.hint if catch_all is not None else None
        hint = hint or rule_hint or TRACEBACK_HINT
    else:
        if cause == Cause.STARTUP_TIMEOUT and hint is not None:
            permanent = True
        else:
            cause_hint, permanent = _cause_hint(cause, where, rules)
            hint = cause_hint
    if cause in (Cause.CUDA_OOM, Cause.KV_POOL_OOM):
        message = _trim(message + _sizes(" ".join(log.text[max(0, at - 3) : at + 8])))
    if cause in _FAMILY_PHASE:
        where = _family_phase(cause, log.text[at]) or where
    elif cause != Cause.UNKNOWN and block is None:
        where = _resolve_phase(None, reached, None, cause)
    return (
        _make(
            ctx,
            cause=cause,
            phase=where,
            hint=hint,
            evidence=_evidence(log.raw, evidence or [at]),
            rule=catch_all.id if catch_all is not None else None,
            permanent=permanent,
            message=message,
            by_words=cause == worded,
        ),
        False,
    )
