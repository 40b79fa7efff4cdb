"""Classify a failed trial from its log: cause, phase, evidence, blame and a hint that is right.

Rules are tried in order (most specific first); the first rule with a matching line wins.
Lines are matched without the prefixes multi-process engines put before them (``[2025-01-01
10:00:00 TP0]``, ``(VllmWorker rank=0 pid=1)``, ``ERROR 01-01 12:00:00 [core.py:1]``, Ray's
``(pid=123)``), a pattern holding ``\\n`` is matched across consecutive lines, and a rule with
``near`` also needs that pattern within a few lines (an out-of-memory line counts as a KV-pool
failure only near the frames that allocate the pool). When no rule matches, the exit code and
the last exception line decide. The phase comes from the rule, else from the traceback's frames
and the progress lines of the log, else from what the cause implies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from autotune.models import Cause, Failure, Milestone, Phase, Rule

MAX_LINE = 300  # characters of one evidence line
CONTEXT = 2  # lines of context around the first match
MAX_EVIDENCE = 12
TAIL = 40  # lines of log tail kept in a Failure
NEAR_LINES = 40  # how far a rule's ``near`` pattern may be from its hit
WINDOW = 3  # lines joined for a pattern that spans lines
WRAP_MIN = 60  # a line at least this long may have been wrapped onto the next
BLOCK_BEFORE = 80  # lines before a hit searched for the frames that tell the phase
BLOCK_AFTER = 20

KILLED_HINT = (
    "The server was killed with SIGKILL. SGLang SIGKILLs itself when a child process fails, so "
    "look above in the log for the real error (the scheduler's traceback). If there is none, "
    "the host's OOM killer may have ended it: check `dmesg` and host memory."
)
TRACEBACK_HINT = "No rule recognises this error; read the traceback in the log."

_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)(?::.*)?$")
_ARGPARSE = re.compile(r"(?:^|\s)error: (?:argument |the following arguments|unrecognized|invalid)")

# Prefixes that multi-process engines and loggers put before a message. Stripped repeatedly
# (they stack: "(APIServer pid=1) ERROR 01-01 12:00:00 [core.py:1] ...").
_PREFIXES = re.compile(
    "|".join(
        (
            r"\[[^\[\]]{4,80}\]:?[ \t]?",  # [2025-01-01 10:00:00 TP0], [rank0]:, [E626 ...]
            r"\([A-Za-z_][\w.]*(?:[ ,]+[\w.]+=[^\s,)]*)*\)[ \t]?",  # (VllmWorker rank=0 pid=1)
            r"\((?:pid|raylet)[^)]{0,60}\)[ \t]?",  # ray: (pid=123), (raylet)
            r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ \t]+(?:\d{4}-)?\d\d-\d\d[ T]"
            r"\d\d:\d\d:\d\d(?:[.,]\d+)?[ \t]+(?:\[[^\]]+\]|[\w.]+:\d+\])[ \t]?",  # vLLM
            r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+[ \t]+\d+[ \t]+[\w.]+:\d+\][ \t]?",  # glog
            r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?(?:[ \t]*\|[ \t]*\w+(?=[ \t]*\|))*"
            r"[ \t]*\|?[ \t]?",
            r"[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d [\w.-]+ [\w.-]+\[\d+\]:[ \t]?",  # syslog
            r"[\w.-]+-\d+[ \t]+\|[ \t]",  # docker compose: "vllm-1  | "
            r"[\w.-]+:\d+:\d+ \[\d+\][ \t]",  # NCCL: "host:123:456 [0] "
        )
    )
)
_MAX_PREFIXES = 5

# Frames and progress lines that tell where in a trial's life a failure happened.
_PHASE_MARKERS: tuple[tuple[Phase, re.Pattern[str]], ...] = (
    (
        Phase.GRAPH_CAPTURE,
        re.compile(
            r"capture_model|_capture_cudagraphs|capture_cudagraph|cuda_graph_runner|"
            r"CudaGraphRunner|init_cuda_graphs|capture_one_batch_size|capture_begin|capture_end|"
            r"[Cc]apture cuda graph|Capturing CUDA graph|[Cc]apturing cudagraphs|"
            r"CUDA graph capture|stream is capturing|cudaErrorStreamCapture"
        ),
    ),
    (
        Phase.MEMORY_POOL,
        re.compile(
            r"init_memory_pool|profile_max_num_token|determine_num_available_blocks|"
            r"determine_available_memory|_initialize_kv_caches|initialize_kv_cache|profile_run|"
            r"init_cache_with_memory_pool|memory_pool\.py|kv_cache_utils|raise_if_cache_size|"
            r"Memory profiling|GPU blocks:|for the cache blocks|stored in KV cache|paged KV cache|"
            r"max_total_num_tokens|mem_cache/"
        ),
    ),
    (
        Phase.LOAD,
        re.compile(
            r"load_model|load_weights|[Ll]oading safetensors|Loading checkpoint shards|"
            r"Load weight begin|Starting to load model|from_pretrained|init_process_group|"
            r"init_distributed_environment|init_device|initialize_model_parallel|"
            r"[Ii]nit torch distributed|_init_executor|init_worker|ModelRunner\(|TpModelWorker\(|"
            r"deserializ|GenerationSession|from_dir|load model begin|_create_c10d_store|"
            r"bootstrap\.cc|ncclSocketConnect|init_mscclpp|Connect from rank"
        ),
    ),
    (
        Phase.BENCHMARK,
        re.compile(
            r"event_loop|run_batch|forward_batch|execute_model|step_async|engine_step|"
            r"run_busy_loop|_process_engine_step|_run_engine|\.generate\(|generate_inner|"
            r"greedy_search|multinomial|POST /|Prefill batch|Decode batch|#running-req|"
            r"get_model_worker_batch|process_batch_result|Epoch \d|trainer\.fit|"
            r"inner_training_loop|swap_blocks|begin_forward|all_reduce\(|SeqNum=\d{3,}|"
            r"forward_thread_func"
        ),
    ),
)
_STARTUP = (Phase.LOAD, Phase.MEMORY_POOL, Phase.GRAPH_CAPTURE)

# The phase a cause implies when the log shows nothing else.
CAUSE_PHASE: dict[Cause, Phase] = {
    Cause.KV_POOL_OOM: Phase.MEMORY_POOL,
    Cause.CUDA_GRAPH_CAPTURE: Phase.GRAPH_CAPTURE,
    Cause.CUDA_OOM: Phase.LOAD,
    Cause.HOST_OOM: Phase.LOAD,
    Cause.ARCH_UNSUPPORTED: Phase.LOAD,
    Cause.MODEL_UNSUPPORTED: Phase.LOAD,
    Cause.NCCL_ERROR: Phase.LOAD,
    Cause.STARTUP_TIMEOUT: Phase.LOAD,
    Cause.WATCHDOG_TIMEOUT: Phase.BENCHMARK,
    Cause.RUNTIME_CRASH: Phase.BENCHMARK,
    Cause.NODE_LOST: Phase.BENCHMARK,
}

# Generic progress lines, used when a log is diagnosed without the engine's milestones.
GENERIC_MILESTONES: tuple[Milestone, ...] = (
    Milestone(
        phase=Phase.LOAD,
        pattern=r"Load weight begin|Loading weights|Loading model|Starting to load model|"
        r"Loading safetensors checkpoint shards|Loading checkpoint shards|load model begin",
        label="load",
    ),
    Milestone(
        phase=Phase.MEMORY_POOL,
        pattern=r"Load weight end|Memory pool|KV Cache is allocated|Memory profiling|"
        r"Available KV cache memory|GPU KV cache size|# GPU blocks",
        label="kv",
    ),
    Milestone(
        phase=Phase.GRAPH_CAPTURE,
        pattern=r"Capture cuda graph begin|Capturing CUDA graph|Capturing batches|"
        r"Capturing cudagraphs|Capturing the model for CUDA graphs",
        label="graphs",
    ),
    Milestone(
        phase=Phase.READY,
        pattern=r"fired up and ready to roll|Application startup complete|Uvicorn running on",
        label="ready",
    ),
    Milestone(
        phase=Phase.BENCHMARK,
        pattern=r"Prefill batch|Decode batch|POST /v1/|POST /generate",
        label="serving",
    ),
)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _trim(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def strip_prefix(line: str) -> str:
    """``line`` without the process, rank and logger prefixes before its message."""
    text = line.rstrip("\r\n")
    for _ in range(_MAX_PREFIXES):
        match = _PREFIXES.match(text)
        if match is None or not match.group(0):
            break
        text = text[match.end() :]
    return text


def blamed(names: Iterable[str], argv: Sequence[str], env: dict[str, str]) -> list[str]:
    """The ``names`` present in the launch: a flag in ``argv`` or a variable in ``env``."""
    out = []
    for name in names:
        if name.startswith("-"):
            present = any(arg == name or arg.startswith(name + "=") for arg in argv)
        else:
            present = name in env
        if present:
            out.append(name)
    return out


def _wrapped_match(
    regex: re.Pattern[str], stripped: Sequence[str], raw: Sequence[str], i: int
) -> bool:
    """Whether ``regex`` matches line ``i`` joined to the next one, across the join.

    Long lines reach issue threads and some terminals wrapped at a fixed width, even in the
    middle of a word ("cudaMallocAsync(ptr, n, mCudaSt" / "ream->get()): out of memory"). Only
    a long line followed by a bare one (no prefix, no indent: not a new message) is joined.
    """
    if len(raw[i]) < WRAP_MIN or i + 1 >= len(stripped):
        return False
    after = raw[i + 1]
    if not after or after[0].isspace() or strip_prefix(after) != after.rstrip("\r\n"):
        return False
    line = stripped[i]
    match = regex.search(line + after)
    return match is not None and match.start() < len(line) < match.end()


def _rule_hits(rule: Rule, stripped: Sequence[str], raw: Sequence[str]) -> list[int]:
    """Indices of the lines ``rule`` matches, without their prefix or (for patterns that name
    a bracketed tag such as ``[TensorRT-LLM]``) as written."""
    regex = _compile(rule.pattern)
    hits = []
    if "\\n" in rule.pattern or "\n" in rule.pattern:
        # A message split over lines: match windows of consecutive lines joined by newlines,
        # counting a hit on the line where the match starts.
        for i in range(len(stripped)):
            for lines in (stripped, raw):
                match = regex.search("\n".join(lines[i : i + WINDOW]))
                if match is not None and match.start() <= len(lines[i]):
                    hits.append(i)
                    break
    else:
        for i, line in enumerate(stripped):
            if (
                regex.search(line)
                or regex.search(raw[i])
                or _wrapped_match(regex, stripped, raw, i)
            ):
                hits.append(i)
    if rule.near is not None and hits:
        near = _compile(rule.near)
        hits = [
            i
            for i in hits
            if any(
                near.search(stripped[j])
                for j in range(max(0, i - NEAR_LINES), min(len(stripped), i + NEAR_LINES + 1))
            )
        ]
    return hits


def first_match(lines: Sequence[str], rules: Sequence[Rule]) -> tuple[Rule, list[int]] | None:
    """The first rule (in rule order) with a matching line, and the indices of its matches."""
    stripped = [strip_prefix(line) for line in lines]
    for rule in rules:
        hits = _rule_hits(rule, stripped, lines)
        if hits:
            return rule, hits
    return None


def _evidence(lines: Sequence[str], hits: Sequence[int]) -> list[str]:
    first = hits[0]
    keep = set(range(max(0, first - CONTEXT), min(len(lines), first + CONTEXT + 1)))
    keep.update(hits[:MAX_EVIDENCE])
    chosen = sorted(keep)[:MAX_EVIDENCE]
    return [_trim(lines[i]) for i in chosen if lines[i].strip()]


def _message(line: str) -> str:
    return _trim(strip_prefix(line).strip())


def _is_exception(text: str) -> bool:
    return bool(text) and not text[0].isspace() and bool(_EXC_LINE.match(text.strip()))


def _exception_after(stripped: Sequence[str], start: int, limit: int = 300) -> int | None:
    """Index of the first exception line at or after ``start`` (the end of its traceback)."""
    for i in range(start, min(len(stripped), start + limit)):
        if _is_exception(stripped[i]):
            return i
    return None


def _last_exception(stripped: Sequence[str]) -> int | None:
    """Index of the exception line that ends the last traceback, or else the last one at all.

    Excerpts and multi-process logs often lack the ``Traceback`` header, so an exception line
    (``RuntimeError: ...``) counts on its own.
    """
    for i in range(len(stripped) - 1, -1, -1):
        if _TRACEBACK in stripped[i]:
            found = _exception_after(stripped, i + 1, limit=len(stripped))
            if found is not None:
                return found
            break
    for i in range(len(stripped) - 1, -1, -1):
        if _is_exception(stripped[i]):
            return i
    return None


_TRACE_LINE = re.compile(
    r"^(Traceback|File |During handling|The above exception|Stack \(most recent|Current thread|"
    r"Thread 0x|Fatal Python error|frame #|\*\*\* SIGSEGV|PC: @|\^+$|\d+\s+0x[0-9a-f]+ )"
)


def _in_trace(text: str) -> bool:
    """Whether a (prefix-stripped) line belongs to a traceback or a native stack dump."""
    return (
        not text.strip()
        or text[0].isspace()
        or bool(_TRACE_LINE.match(text))
        or _is_exception(text)
    )


def _trace_block(stripped: Sequence[str], at: int) -> Sequence[str]:
    """The traceback (or stack dump) around index ``at``: its frames, not the progress lines
    logged before it, which belong to earlier phases."""
    start = at
    while start > 0 and at - start < BLOCK_BEFORE and _in_trace(stripped[start - 1]):
        start -= 1
    end = at + 1
    while end < len(stripped) and end - at < BLOCK_AFTER and _in_trace(stripped[end]):
        end += 1
    return stripped[start:end]


def phase_in_block(stripped: Sequence[str], at: int) -> Phase | None:
    """The phase the frames of the traceback around index ``at`` point to, if any.

    Start-up frames win over serving frames: a profile run or a graph capture runs the model's
    forward, so "execute_model" under "profile_run" still means the memory pool was being sized.
    """
    block = _trace_block(stripped, at)
    found = {phase for phase, regex in _PHASE_MARKERS if any(regex.search(x) for x in block)}
    order = list(Phase)
    if found & {Phase.MEMORY_POOL, Phase.GRAPH_CAPTURE}:
        return max(found & set(_STARTUP), key=order.index)
    if Phase.BENCHMARK in found:
        return Phase.BENCHMARK
    if Phase.LOAD in found:
        return Phase.LOAD
    return None


def _resolve_phase(
    rule_phase: Phase | None, reached: Phase, block: Phase | None, cause: Cause
) -> Phase:
    if rule_phase is not None:
        return rule_phase
    order = list(Phase)
    phase = reached if block is None else max(reached, block, key=order.index)
    if phase == Phase.LAUNCH and block is None:
        return CAUSE_PHASE.get(cause, Phase.LAUNCH)
    return phase


def _hint(rule: Rule, phase: Phase) -> str:
    return dict(rule.phase_hints).get(phase, rule.hint)


def classify(
    lines: Sequence[str],
    rules: Sequence[Rule],
    *,
    phase: Phase,
    exit_code: int | None,
    argv: Sequence[str],
    env: dict[str, str],
) -> Failure:
    """Decide why a trial failed.

    Args:
        lines: the server log (or its tail).
        rules: failure rules, most specific first.
        phase: the phase the trial had reached; used when the rule names none.
        exit_code: the server's exit code (negative: killed by that signal), None if running.
        argv: the launch command, for blame.
        env: the launch environment (the spec's, not the whole node's), for blame.

    Returns:
        A Failure; cause ``unknown`` when nothing recognisable was found.
    """
    tail = [_trim(line) for line in lines[-TAIL:]]
    stripped = [strip_prefix(line) for line in lines]
    found = None
    for rule in rules:
        hits = _rule_hits(rule, stripped, lines)
        if hits:
            found = rule, hits
            break
    if found is not None:
        rule, hits = found
        message = _message(lines[hits[0]])
        if stripped[hits[0]][:1].isspace():
            # A traceback frame matched: the exception that ends the traceback says what.
            exc_after = _exception_after(stripped, hits[0])
            if exc_after is not None:
                message = _message(lines[exc_after])
        if rule.cause == Cause.UNKNOWN:
            # A catch-all line ("Scheduler hit an exception") says only that something failed;
            # the traceback's last line says what.
            exc = _last_exception(stripped)
            if exc is not None:
                message = _message(lines[exc])
        final = _resolve_phase(rule.phase, phase, phase_in_block(stripped, hits[0]), rule.cause)
        return Failure(
            cause=rule.cause,
            phase=final,
            hint=_hint(rule, final),
            evidence=_evidence(lines, hits),
            rule=rule.id,
            permanent=rule.permanent,
            blame=blamed(rule.blame, argv, env),
            exit_code=exit_code,
            log_tail=tail,
            message=message,
        )
    if exit_code == 2:
        for i, line in enumerate(stripped):
            if _ARGPARSE.search(line):
                return Failure(
                    cause=Cause.INVALID_ARGUMENT,
                    phase=Phase.LAUNCH,
                    hint="The command line was rejected; check the flag names and values "
                    "against this engine version's --help.",
                    evidence=_evidence(lines, [i]),
                    exit_code=exit_code,
                    log_tail=tail,
                    message=_message(lines[i]),
                )
    exc = _last_exception(stripped)
    block = phase_in_block(stripped, exc) if exc is not None else None
    order = list(Phase)
    where = phase if block is None else max(phase, block, key=order.index)
    if exit_code in (-9, 137):
        evidence = _evidence(lines, [exc]) if exc is not None else tail[-5:]
        return Failure(
            cause=Cause.KILLED,
            phase=where,
            hint=KILLED_HINT,
            evidence=evidence,
            exit_code=exit_code,
            log_tail=tail,
            message=_message(lines[exc]) if exc is not None else "killed by SIGKILL",
        )
    if exc is not None:
        return Failure(
            cause=Cause.UNKNOWN,
            phase=where,
            hint=TRACEBACK_HINT,
            evidence=_evidence(lines, [exc]),
            exit_code=exit_code,
            log_tail=tail,
            message=_message(lines[exc]),
        )
    message = "no rule matched" if exit_code is None else f"exited with code {exit_code}"
    return Failure(
        cause=Cause.UNKNOWN,
        phase=phase,
        hint="No rule recognises this failure; read the log tail.",
        evidence=tail[-5:],
        exit_code=exit_code,
        log_tail=tail,
        message=message,
    )


def is_failure(failure: Failure, lines: Sequence[str]) -> bool:
    """Whether ``failure`` rests on evidence of a failure rather than on nothing at all.

    A log where no rule matched, no exception was raised and the exit code is unknown or 0 is
    a healthy log: ``classify`` still answers ``unknown`` for it, which says nothing.
    """
    if failure.rule is not None or failure.cause != Cause.UNKNOWN:
        return True
    if failure.exit_code not in (None, 0):
        return True
    stripped = [strip_prefix(line) for line in lines]
    return _last_exception(stripped) is not None or any(_TRACEBACK in x for x in stripped)


def phase_reached(lines: Iterable[str], milestones: Sequence[Milestone]) -> tuple[Phase, list[str]]:
    """The furthest phase the milestones show, and the labels reached in order."""
    order = list(Phase)
    reached = Phase.LAUNCH
    labels: list[str] = []
    compiled = [(m, _compile(m.pattern)) for m in milestones]
    for line in lines:
        for milestone, regex in compiled:
            if milestone.label not in labels and regex.search(line):
                labels.append(milestone.label)
                if order.index(milestone.phase) > order.index(reached):
                    reached = milestone.phase
    return reached, labels


def diagnose_file(
    path: str,
    rules: list[Rule],
    exit_code: int | None = None,
    *,
    milestones: Sequence[Milestone] | None = None,
    argv: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Failure | None:
    """Classify a server log file after the fact (``autotune diagnose LOGFILE``).

    Args:
        path: the log file.
        rules: failure rules, most specific first (e.g. ``load_rules("sglang")``).
        exit_code: the server's exit code, if known.
        milestones: the engine's startup milestones; generic ones when None.
        argv: the launch command, if known (for blame).
        env: the launch environment, if known (for blame).

    Returns:
        The failure, or None when the log shows none (a healthy log).

    Raises:
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    phase, _ = phase_reached(lines, GENERIC_MILESTONES if milestones is None else milestones)
    failure = classify(lines, rules, phase=phase, exit_code=exit_code, argv=argv, env=env or {})
    return failure if is_failure(failure, lines) else None
