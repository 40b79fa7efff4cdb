"""How far a log got and what it shows beyond rule matches: progress, readiness, errors.

The generic progress and ready lines (:data:`GENERIC_MILESTONES`) complete an engine's own.
:func:`_signals` reads the log once for what the structural reading needs: the first fatal
exception, the first error line, the last traceback, the furthest phase, a graph capture still
running. Readiness has its exceptions: a ready line written after another rank died, an
excerpt that begins while the server serves, a run served with no ready line (a client's
report, timed tokens then an interrupt, a table of figures), and an engine's own warmup
request before it says it is ready.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from autotune.models import Milestone, Phase
from autotune.node.failures.clients import _CLIENT, _SERVER_ERROR_ANSWER, _SUCCEEDED, _results_table
from autotune.node.failures.log import HEAD, MILESTONE_HEAD, _compile, _Log
from autotune.node.failures.phases import _RUNNING, phase_reached
from autotune.node.failures.traces import (
    _FRAME,
    _STACK_HEADER,
    _TRACEBACK,
    _exception_after,
    _first_fatal_exception,
    _in_trace,
)
from autotune.node.families import decisive, fatal_sign
from autotune.node.logparse import LogLine

_ERROR_LINE = re.compile(
    r"^(?:ERROR|FATAL|CRITICAL|Fatal|FAILED|Error|\[?E\]?)\b[: ]|^error(?:\[\w+\])?: |"
    r"^[A-Za-z]+ ERROR: |"
    r"\bpanicked at\b|^terminate called|^\S+: error: |^Segmentation fault|\bcore dumped\b|"
    r"^Killed$|exited with code [1-9]|exit code[:= ]+-?[1-9]|^panic: |"
    # a compiler-style fatal error, glibc's report of a corrupted heap, a thread's exception
    r"^fatal(?: error)?: |^\*\*\* Error in |^Exception in thread \S+|"
    # a library's numbered error ("cuBLAS error 15 at x.cu:7956"), a component's ("load_model:
    # error 'Model format not supported'")
    r"\berror \d+ at \S+:\d+|(?:^|\s)[\w.]+: error\b|"
    # a compiler's diagnostic ("ptxas /tmp/x.ptx, line 5; error   : ..."), a model server's
    # status table ("| llm | 1 | UNAVAILABLE: Internal: ...")
    r"; error\s+:|(?:^|\| )UNAVAILABLE: \w|"
    # an accelerator runtime's call that returned an error code ("rtMemcpy: ErrCode=107030")
    r"^\w+: ErrCode=\d+"
)
# A failure stated in words, without an error word: "couldn't bind HTTP server socket".
_FAILED_TO = re.compile(
    r"^(?:[\w.]+\s+)?(?:[\w.]+: )?(?:[Cc]ouldn't|[Cc]ould not|[Cc]annot|[Cc]an't|[Uu]nable to|"
    r"[Ff]ailed to) [a-z]+\b|\bexiting due to\b|"
    # a statement that something failed, at the end of its line ("loading the engine failed")
    r"\b(?:failed|crashed|aborted)[.!]?\s*$"
)

# An engine's timing of the tokens it generated for one request (llama.cpp's server and library,
# Ollama's runner: "generation eval time = 3194.22 ms / 783 runs"), and an operator's interrupt
# (a terminal's echoed ^C, a server's note of SIGINT): together, a run served and then stopped.
_TIMED = re.compile(r"\beval time\s*=\s*[\d.]+ ms\s*/\s*[1-9]\d* (?:tokens|runs)\b")
_INTERRUPT = re.compile(
    r"^\s*(?:\^C)+\s*$|\b(?:[Rr]eceived|[Cc]aught|[Gg]ot) (?:signal )?(?:SIGINT|signal 2)\b|"
    r"\bSIGINT received\b"
)

_FAILURE_WORDS = re.compile(r"error|fail|exception|traceback|out of memory|killed|abort", re.I)
_ERROR_WORDS = (
    "error",
    "fatal",
    "critical",
    "fail",
    "panick",
    "terminate",
    "segmentation",
    "core dumped",
    "killed",
    "exit",
    "exception in thread",
    "errcode",
)

_CAPTURE_RUNNING = re.compile(
    r"Capturing CUDA graph|Capture (?:\w+ ){0,3}(?:cuda|CUDA) graph begin|Capturing batches|"
    r"Capturing cudagraphs|Capturing the model for CUDA graphs|Capturing num tokens"
)
_CAPTURE_DONE = re.compile(
    r"Capture (?:\w+ ){0,3}(?:cuda|CUDA) graph end|Graph capturing finished|"
    r"graph capturing finished|Capturing[^|]*:\s*100%"
)

# Generic progress lines, used when a log is diagnosed without the engine's milestones: the
# start-up progress and ready lines of SGLang, vLLM, TGI, TensorRT-LLM, llama.cpp and others.
GENERIC_MILESTONES: tuple[Milestone, ...] = (
    Milestone(
        phase=Phase.LOAD,
        pattern=r"Load weight begin|Loading weights|Loading model|Starting to load model|"
        r"Loading safetensors checkpoint shards|Loading checkpoint shards|load model begin|"
        r"Starting shard|Waiting for shard to be ready|llm_load_tensors|load_tensors:|"
        r"Loaded engine size|Pre-loading model weights|Init torch distributed|"
        r"Initializing an? (?:V1 )?LLM engine|Loading model\.|Model loading took|"
        r"Error when initializing model|Shard \d+ failed to start",
        label="load",
    ),
    Milestone(
        phase=Phase.MEMORY_POOL,
        pattern=r"Load weight end|Memory pool|KV Cache is allocated|Memory profiling|"
        r"Available KV cache memory|GPU KV cache size|# GPU blocks|GPU blocks:|"
        r"tokens in paged KV cache|llama_kv_cache|Number of blocks in KV cache",
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
        pattern=r"fired up and ready to roll|Application startup complete|Uvicorn running on|"
        r"server is listening on|HTTP server listening|Serving on http|Started HTTPService|"
        # (not a daemon's bare "Listening on 127.0.0.1:11434": Ollama listens before it loads
        # any model; a model it serves is announced, "llama runner started in 3.02 seconds")
        r"text_generation_router[\w:]*: .*Connected|"
        r"init engine \(profile, create kv cache, warmup model\) took|Starting HTTP server|"
        r"Starting \w+ server on https?://|Available routes are|"
        # the routes a server serves, listed one a line once its application is built
        r"\bRoute: /\S*, Methods: [A-Z]|"
        # any server's own words for "up" ("Starting vLLM API server 0 on http://...", Ollama's
        # "llama runner started in 3.02 seconds", Triton's gRPC endpoint)
        r"Starting [\w-]+(?: [\w-]+){0,2} server(?: \d+)? on https?://|runner started in [\d.]+ ?s|"
        r"Started GRPCInferenceService",
        label="ready",
    ),
    Milestone(
        phase=Phase.READY,
        # "up" in any server's words: an address it listens or runs on, a server, service or
        # application that is ready, started or up, an idle request loop, a hint to open it;
        # not words that wait for readiness or ask about it ("to be ready", "not ready yet",
        # "whether ... ready"), nor uvicorn's "Started server process" before its start-up
        pattern=r"^(?!.*\b(?:not|never|wait\w*|until|unless|whether|if|before|to be|to become|"
        r"fail\w*|unable|cannot|could not|timed? ?out)\b)(?:"
        r".*\b(?:[Ll]istening|[Rr]unning|[Ss]erving) (?:on|at) (?:local URL: +)?https?://|"
        r".*\b(?:[Ss]erver|[Ss]ervice|API|[Aa]pp(?:lication)?|[Ee]ndpoint)\b(?: '[^']*')?"
        r"(?: is| now)* (?:ready|up and running)\b|"
        # (an address with a port: a shard's internal server on a unix socket is no server up)
        r".*\b(?:[Ss]erver|[Ss]ervice) (?:ready|started)"
        r"(?: (?:on|at) (?:port \d+|(?:https?://)?[\w.\[\]:-]*:\d+))?\.?$|"
        r".*\bsuccessfully started\b.*\bEndpoint: https?://|"
        r".*\bDeployed app '[^']*' successfully|"
        r".*: Ready\.?$|"
        r".*\ball slots are idle\b|"
        r".*\bPlease (?:connect to|open)\b.{0,40}https?://)",
        label="up",
    ),
    Milestone(
        phase=Phase.BENCHMARK,
        # an access-log line with any status: the server was up and answering (a 500 too)
        pattern=r"Prefill batch|Decode batch|POST /(?:v1/|generate)[^\"]*\"? [1-5]\d\d\b|"
        r"batch\{batch_size=\d+\}:(?:prefill|decode)|"
        r"Avg prompt throughput|"
        r"#running-req|"
        # a scheduler's own count (its stats, or their dump after a failure) of requests running
        r"\b(?:num_)?running_reqs=[1-9]|"
        # a client's record of a response (httpx) or a benchmark's report: the server answered
        r"HTTP Request: [A-Z]+ https?://\S+ \"HTTP/[\d.]+ [1-5]\d\d\b",
        label="serving",
    ),
    Milestone(
        phase=Phase.BENCHMARK,
        # the frames of an HTTP request's handler (ASGI, aiohttp, an OpenAI-style endpoint): a
        # request was being answered, so the server was up, whatever its log kept of its start
        pattern=r"Exception in ASGI application|\bin run_asgi$|"
        r"/(?:starlette|fastapi)/routing\.py\", line \d+, in |"
        r"/aiohttp/web_protocol\.py\", line \d+, in _handle_request|"
        r"\", line \d+, in (?:create_(?:chat_)?completion|(?:chat_)?completion_stream_generator)$",
        label="request",
    ),
)


@dataclass(frozen=True)
class _Signals:
    """What the log shows beyond rule matches: errors, exceptions, readiness, progress."""

    exception: int | None  # the first fatal exception line
    error: int | None  # the first error line that is not a warning
    traceback: int | None  # the last traceback header or frame
    ready: bool  # the ready line or served requests were seen
    reached: Phase  # the furthest phase the progress lines show
    capture_running: int | None  # a graph capture started and not finished: its line
    progress: int | None  # the last progress line

    @property
    def failed(self) -> bool:
        return self.exception is not None or self.error is not None or self.traceback is not None


def _looks_like_error(text: str) -> bool:
    head = text.strip()[:HEAD]
    lowered = head.lower()
    return any(word in lowered for word in _ERROR_WORDS) and bool(_ERROR_LINE.search(head))


def _is_error_record(rec: LogLine) -> bool:
    """An error: announced as one by its level or shape, or saying a process died, or naming
    a family decisively in a line its logger did not mark as information, or a server's own
    record of a request it failed to answer (a 5xx status)."""
    if rec.level == "error" or _looks_like_error(rec.text):
        return True
    if _SERVER_ERROR_ANSWER.search(rec.text):
        return True
    return rec.level != "info" and (
        fatal_sign(rec.text) or decisive(rec.text) or bool(_FAILED_TO.search(rec.text[:HEAD]))
    )


def _signals(log: _Log, milestones: Sequence[Milestone], reached: Phase | None = None) -> _Signals:
    exception = _first_fatal_exception(log)
    error = next(
        (
            i
            for i, rec in enumerate(log.records)
            if not log.warning[i] and rec.text.strip() and _is_error_record(rec)
        ),
        None,
    )
    traceback = None
    for i in range(len(log.text) - 1, -1, -1):
        if (
            _TRACEBACK in log.text[i]
            or _FRAME.match(log.text[i])
            or _STACK_HEADER.match(log.text[i])
        ):
            traceback = i
            break
    if reached is None:
        reached, _ = phase_reached(log.raw, milestones)
    ready = reached in (Phase.READY, Phase.WARMUP, Phase.BENCHMARK)
    capture = None
    for i, text in enumerate(log.text):
        if _CAPTURE_DONE.search(text):
            capture = None
        elif _CAPTURE_RUNNING.search(text):
            capture = i
    progress = None
    compiled = [_compile(m.pattern) for m in milestones]
    for i in range(len(log.raw) - 1, -1, -1):
        if any(r.search(log.raw[i]) for r in compiled):
            progress = i
            break
    return _Signals(exception, error, traceback, ready, reached, capture, progress)


_PREFILL = re.compile(r"[Pp]refill batch|\bprefill\b")
_ANSWERED = re.compile(r"[Dd]ecode batch|\bdecode\b.*#running-req|gen throughput|\" [1-5]\d\d\b")


def _first_request_only(log: _Log, milestones: Sequence[Milestone]) -> int | None:
    """The prefill line, when the only sign of serving is one prefill of one request, no line
    says the server was ready and nothing was answered: engines send themselves a request
    before they say they are ready (their warmup), so such a log stops in start-up."""
    ready = [_compile(m.pattern) for m in milestones if m.phase == Phase.READY]
    serving = [_compile(m.pattern) for m in milestones if m.phase in _RUNNING[1:]]
    seen: list[int] = []
    for i, raw in enumerate(log.raw):
        head = raw[:MILESTONE_HEAD]
        if any(r.search(head) for r in ready) or _ANSWERED.search(log.text[i]):
            return None
        if any(r.search(head) for r in serving):
            seen.append(i)
    # (the same line written by every rank counts once)
    if len({log.text[i] for i in seen}) != 1 or not _PREFILL.search(log.text[seen[0]]):
        return None
    return seen[0]


def _served(whole: _Log) -> bool:
    """Whether the log shows requests served, though no line may say the server was ready:
    a benchmark client's report that counts requests answered (else the client's failure is
    read before: a failed count, none or fewer successes than asked), even where the excerpt
    stops before the report's end; tokens the engine timed for a request, then the operator's
    interrupt (a run served and stopped on purpose; timings alone say nothing of how the run
    ended); a benchmark's table of measured figures."""
    if any(
        (m := _SUCCEEDED.search(text)) and int(m.group(1)) > 0
        for text in whole.text
        if _CLIENT.search(text[:HEAD])
    ):
        return True
    timed = next((i for i, text in enumerate(whole.text) if _TIMED.search(text)), None)
    if timed is not None and any(_INTERRUPT.search(text) for text in whole.text[timed + 1 :]):
        return True
    return _results_table(whole) is not None


def _ready_line(log: _Log, milestones: Sequence[Milestone]) -> int | None:
    """Index of the last line that says the server is ready (or serving), if any: what came
    before it did not stop the server (a module some optional endpoint lacks, say)."""
    ready = [_compile(m.pattern) for m in milestones if m.phase == Phase.READY]
    serving = [
        _compile(m.pattern) for m in milestones if m.phase in (Phase.WARMUP, Phase.BENCHMARK)
    ]
    last = first_serving = None
    for i, text in enumerate(log.raw):
        is_ready = any(r.search(text) for r in ready)
        if not is_ready and (first_serving is not None or not any(r.search(text) for r in serving)):
            continue
        if (
            log.records[i].level == "error"
            or _FAILURE_WORDS.search(log.text[i])
            or _SERVER_ERROR_ANSWER.search(log.text[i])
            or decisive(log.text[i])
        ):
            continue  # a line that reports a failure proves no readiness
        if is_ready:
            last = i
        else:
            first_serving = i
    return last if last is not None else first_serving


def _began_serving(log: _Log, milestones: Sequence[Milestone], ready_at: int) -> bool:
    """Whether the readiness at ``ready_at`` is only a served request (no line says the server
    is ready) that follows a failure the excerpt begins with (nothing but the failure's own
    traceback lines before it) or a failure that names the request it ended (``session 3
    finished, reason "error"``): the excerpt begins while the server serves, and the failure
    happened while it served."""
    ready = [_compile(m.pattern) for m in milestones if m.phase == Phase.READY]
    if any(r.search(log.raw[ready_at]) for r in ready):
        return False
    before = log.until(ready_at)
    sig = _signals(before, milestones)
    first = min((i for i in (sig.exception, sig.error) if i is not None), default=None)
    if first is None:
        return False
    if _REQUEST_NAMED.search(before.text[first]):
        return True  # the failure is a request's own (request 17, session 3): one was served
    return all(_in_trace(text) or not text.strip() for text in before.text[:first])


# A request (or a session, a sequence) named by its number: only a serving engine has one.
_REQUEST_NAMED = re.compile(
    r"(?i:\b(?:request|req|session|seq(?:uence)?)[ _-]?(?:id)?[ =:#]*\d+\b)"
)


def _rank_died_before(log: _Log, ready_at: int) -> str | None:
    """The rank (or process) whose traceback, ended by an exception, is the last it wrote
    before another rank wrote the ready line at ``ready_at``: it died there, and the server
    could not be ready without it (a data-parallel rank that could not take its GPU)."""
    ready_source = log.records[ready_at].source
    if ready_source is None:
        return None
    for i in range(ready_at):
        source = log.records[i].source
        if source is None or source == ready_source or _TRACEBACK not in log.text[i]:
            continue
        end = _exception_after(log, i + 1, limit=ready_at - i - 1)
        if end is not None and not any(r.source == source for r in log.records[i + 1 : ready_at]):
            return source
    return None
