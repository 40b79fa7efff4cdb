"""Read a server log as records: the message of each line, its level, the process it came from.

Logs reach autotune (and ``autotune diagnose``) in many dresses: docker-compose prefixes on
every line (``vllm-1  | ``), journald or syslog stamps, ISO or short timestamps, ANSI colour,
JSON lines from ``docker logs``, the rank and process prefixes of multi-process engines
(``[2025-01-01 10:00:00 TP0]``, ``(VllmWorker rank=0 pid=1) ERROR 01-01 12:00:00 [x.py:1]``,
``[rank0]:[E626 ...]``), several ranks' lines interleaved, and lines that an issue thread
flattened into one. :func:`parse_log` undresses each line into a :class:`LogLine`: the
message a rule is matched against, the level a prefix announced, and the process or rank it
came from (so that one rank's traceback can be read apart from another's).

:func:`detect_engine` names the engine (or runtime) that most likely wrote a log, from marks
only that engine prints, and the rule family whose hints fit it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PREFIXES = 8

# (a colour code whose escape byte was lost in a paste, "[0m", "[1;31m", before anything; or
# written out as text by a log shipper or a paste: CloudWatch's "#033[31m", "\033[", "^[[")
_ANSI = re.compile(
    r"(?:\x1b|\\u001b|#033|\\033|\\x1b|\\e|\^\[)\[[0-9;?]*[A-Za-z]|\[(?:\d{1,3};)*\d{1,3}m"
)
_LEVELS = {
    "E": "error",
    "ERROR": "error",
    "ERR": "error",
    "F": "error",
    "FATAL": "error",
    "CRITICAL": "error",
    "W": "warning",
    "WARN": "warning",
    "WARNING": "warning",
    "I": "info",
    "INFO": "info",
    "D": "info",
    "DEBUG": "info",
    "TRACE": "info",
}
_LEVEL = r"(?P<lvl>TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"

# One prefix each; tried in order at the start of the (remaining) line, repeatedly: they stack
# ("vllm-1  | (APIServer pid=1) ERROR 01-01 12:00:00 [core.py:1] ...").
_PREFIXES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # docker compose: "vllm-1  | ", "ollama  | ", "inference-server_1  | "
        r"(?P<src>[A-Za-z0-9][\w.\-]*)\s+\|\s?",
        # markdown quote of a log in an issue thread
        r">\s?(?=\S)",
        # a paste's elision of what came before, on the line it kept: "... ValueError: x"
        r"(?:\.{3}|\u2026)[ \t]+(?=\S)",
        # syslog / journald: "Aug 17 18:42:18 host vllm[8052]: ", the month in a CJK locale's
        # words too ("5月 17 18:42:18 host vllm[8052]: ")
        r"(?:[A-Z][a-z]{2}|\d{1,2}月) +\d{1,2} \d\d:\d\d:\d\d [\w.\-]+ [\w.\-/]+(?:\[\d+\])?:\s?",
        # vLLM: "ERROR 01-01 12:00:00 [core.py:1] ", "INFO 11-18 18:07:28 engine.py:366] "
        _LEVEL + r"[ \t]+(?:\d{4}-)?\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?[ \t]+"
        r"(?:\[[^\]]+\]|[\w.]+:\d+\])[ \t]?",
        # vLLM's stamp after another logger took its level: "08-07 07:04:32 [core.py:588] "
        r"(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?[ \t]+"
        r"(?:\[[\w./-]+:\d+\]|[\w.]+:\d+\])[ \t]?",
        # cloud logging: "ERROR 2026-06-15T14:10:59.392125190Z "
        _LEVEL + r"[ \t]+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]+",
        # logfmt (Go servers: Ollama): "time=2025-07-14T19:16:12.750+01:00 level=ERROR
        # source=sched.go:457 "
        r"time=\S+ level=(?P<lvl>[A-Za-z]+) (?:source=\S+ )?",
        # Python logging's "%(asctime)s - %(name)s - %(levelname)s - ": "2025-11-02
        # 13:17:04,315 - vllm.v1.engine.core_client - ERROR - "
        r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?[ \t]+-[ \t]+[\w.]+[ \t]+-[ \t]+"
        + _LEVEL
        + r"[ \t]+-[ \t]+",
        # ISO timestamp, with what loggers put after it: a level, a logger and pid, a bar (not
        # one that opens a table's row: "| model | 1 | READY |" keeps its columns)
        r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,:]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
        r"(?:[ \t]+[a-z_][\w.]*(?:\[\d+\])?[ \t]+\d+(?=[ \t]+[A-Z])|"
        # a pid and a logger's name in either order, then the level: "... 1 kserve ERROR"
        r":?(?:[ \t]+(?:\d+|[a-z_][\w.\-]*)){1,2}"
        r"(?=[ \t]+(?:INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|DEBUG)\b))?"
        r"(?:[ \t]*[-|]?[ \t]*" + _LEVEL + r"\b:?(?:[ \t]*[|-])?[ \t]*"
        r"|[ \t]*\|[ \t]?(?![^|]*\|)|[ \t]?)",
        # lmdeploy: "01/19 15:19:51 - turbomind - WARNING - "
        r"\d\d/\d\d \d\d:\d\d:\d\d - [\w.]+ - " + _LEVEL + r" - ",
        # llama.cpp: "0.00.174.294 E "
        r"\d+\.\d\d\.\d{3}\.\d{3} (?P<lvl>[EWID]) ",
        # short stamps: "14:46:00.150stderr", "[14:41:59] "
        r"\d\d:\d\d:\d\d[.,]\d+(?:stderr|stdout)?\s?",
        # a C library's own stamp after its bracketed time and host: the source file and line,
        # then the library's name and an error level, which stay in the message (UCX, UCC:
        # "tcp_ep.c:1260 UCX  ERROR "); only an error is read: NCCL, stamped alike, reports
        # its failures as "NCCL WARN", so a warning level there would hide them
        r"[ \t]*[\w.\-]+\.(?:c|cc|cpp|cu|h):\d+[ \t]+"
        r"(?=[A-Z][A-Z0-9]{1,9}[ \t]+(?P<lvl>ERROR|FATAL)\b)",
        # glog: "E0101 12:00:00.000 123 file.cc:1] "
        r"(?P<lvl>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+[ \t]+\d+[ \t]+[\w.]+:\d+\][ \t]?",
        # Open MPI's output tags (mpirun --tag-output), a date before them with
        # --timestamp-output: "Thu Jan 23 11:55:50 2025[1,0]<stderr>:"
        r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
        r"\[(?P<src>\d+,\d+)\]<(?:stdout|stderr|stddiag)>:",
        # NCCL: "host:123:456 [0] "
        r"[\w.-]+:\d+:\d+ \[\d+\][ \t]",
        # ray: "(pid=123) ", "(raylet) "
        r"\((?:pid|raylet)[^)]{0,60}\)[ \t]?",
        # process and rank of multi-process engines: "(VllmWorker rank=0 pid=1) ", "(EngineCore_DP0
        # pid=804) ", "(SGLangWorker pid=38141, ip=10.0.0.1) "
        r"\((?P<src>[A-Za-z_][\w.]*(?:[ ,]+[\w.]+=[^\s,)]*)*)\)[ \t]?",
        # bracketed stamps and tags: "[2025-01-01 10:00:00 TP0] ", "[rank0]:", "[E626 06:24:44.9
        # ProcessGroupNCCL.cpp:616] ", "[TensorRT-LLM][ERROR] ", "[TRT] [E] ", "[TM][ERROR] "
        r"\[(?P<tag>[^\[\]]{1,80})\]:?[ \t]?",
        # a Java logger's thread and class (log4j, logback): "W-9000-m_1.0-stdout
        # org.pytorch.serve.wlm.WorkerLifeCycle - "
        r"(?:[\w.\-]+[ \t]+)?(?:[a-z_]\w*\.){2,}[A-Z]\w*(?:\$\w+)?[ \t]+-[ \t]",
        # a bare level: uvicorn's "INFO:     ", "ERROR:    ", "WARNING:  "
        _LEVEL + r":[ \t]+",
        # TGI's tracing targets: "shard-manager: text_generation_launcher: "
        r"(?:[\w\-]+(?:\{[^}]*\})?:)*\s?(?:[\w\-]+: )?(?:text_generation|lorax)_\w+: "
        r"(?:[\w/.\-]+\.rs:\d+: )?",
    )
)
_TAG_LEVEL = re.compile(
    # glog's "E0101" and PyTorch's C++ prefix without a stamp: "[E socket.cpp:472]"
    r"^(?P<lvl>[IWEF])(?:\d{3,4}\b| [\w./-]+\.(?:cpp|cc|cu|c|h|hpp):\d+$)|"
    r"^(?P<word>(?i:error|err|critical|fatal|warning|warn|info|debug|trace)|E|W|I|F)$"
)
_SOURCE_TAG = re.compile(r"\b((?:DP|TP|EP|PP)\d+(?: (?:DP|TP|EP|PP)\d+)*)\]?$|^(rank\d+)$")

# A worker prefix in the middle of a line: the thread flattened several lines into one.
_INLINE_PREFIX = re.compile(
    r"(?<=\S)\s+(?=\((?:[A-Za-z_][\w.]*)(?: rank=\d+)? pid=\d+(?:, ip=[\d.]+)?\) )"
)

_WARNING_TEXT = re.compile(
    r"^(?:Warning|WARNING|warnings\.warn)\b|\b(?:User|Future|Deprecation|Syntax|Resource|Runtime)"
    r"Warning\b|^\s*warnings\.warn\("
)
_EXC_HEAD = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)(?:[:(]|$)"
)


@dataclass(frozen=True)
class LogLine:
    """One line of a log, undressed.

    Attributes:
        raw: the line as written (one segment of a flattened line).
        text: the message, without the prefixes before it.
        level: ``error``, ``warning`` or ``info`` when a prefix or the message says so.
        source: the process or rank the line came from (``TP0``, ``rank1``, ``VllmWorker
            rank=1 pid=7``), when a prefix names one.
    """

    raw: str
    text: str
    level: str | None = None
    source: str | None = None

    @property
    def is_warning(self) -> bool:
        """A warning: announced as one by its prefix or by its words."""
        return self.level == "warning" or bool(_WARNING_TEXT.search(self.text[:200]))


_JSON_LEVELS = {60: "error", 50: "error", 40: "warning", 30: "info", 20: "info", 10: "info"}


def _json_message(value: object) -> tuple[str, str | None] | None:
    """(message, level) of a JSON log record: the ``log`` field of ``docker logs``, the
    ``msg``/``message`` of structured loggers (pino, tracing's ``fields.message``)."""
    if not isinstance(value, dict):
        return None
    fields = value.get("fields")
    for holder, key in ((value, "log"), (value, "msg"), (value, "message"), (fields, "message")):
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            message = str(holder[key]).rstrip("\n")
            break
    else:
        return None
    target = value.get("target")
    if holder is fields and isinstance(target, str) and target:
        message = f"{target}: {message}"  # as tracing's text format writes it
    level = value.get("level")
    if isinstance(level, int):
        return message, _JSON_LEVELS.get(level)
    if isinstance(level, str):
        return message, _LEVELS.get(level.upper())
    return message, None


_BOXED_JSON = re.compile(r"[\w.-]+\s+\|\s?(?=\{\")")
# A structured record's fields as a thread pastes them: cut short, or without their opening
# brace ('"timestamp": "...", "level": "ERROR", "message": "Error: ...'): a level field and a
# message field, read by hand
_CUT_FIELDS = re.compile(r'^\{?\s*"\w+"\s*:\s*(?:"|\d|-|\{|\[|true|false|null)')
_CUT_LEVEL = re.compile(r'"(?:level|severity|levelname|log\.level)"\s*:\s*"(\w+)"')
_CUT_MESSAGE = re.compile(r'"(?:message|msg)"\s*:\s*"((?:[^"\\]|\\.)*)')


def _cut_record(stripped: str) -> tuple[str, str | None] | None:
    """(message, level) of a structured record cut short or pasted without its brace, when
    it has both a level and a message field; None otherwise."""
    if _CUT_FIELDS.match(stripped) is None:
        return None
    level = _CUT_LEVEL.search(stripped)
    message = _CUT_MESSAGE.search(stripped)
    if level is None or message is None:
        return None
    try:
        text = str(json.loads(f'"{message.group(1)}"'))
    except ValueError:  # an escape cut in half: the field as written is still the message
        text = message.group(1)
    return text.rstrip("\n"), _LEVELS.get(level.group(1).upper())


def _unwrap_json(line: str) -> tuple[str, str | None]:
    """The message of a JSON log line (and the level it names), or the line as it is."""
    stripped = line.strip()
    if not stripped.startswith("{"):
        # a record behind a container's prefix (compose's "svc-1  | {...}")
        boxed = _BOXED_JSON.match(stripped)
        if boxed is None:
            return line, None
        stripped = stripped[boxed.end() :]
    try:
        found = _json_message(json.loads(stripped))
    except ValueError:  # a json line cut short in a thread: take its log field by hand
        match = re.match(r'\{"log":"((?:[^"\\]|\\.)*)"', stripped)
        if match is None:
            return line, None
        try:
            return str(json.loads(f'"{match.group(1)}"')).rstrip("\n"), None
        except ValueError:  # an escape cut in half: the field as written is still the message
            return match.group(1), None
    return found if found is not None else (line, None)


def _undress(line: str) -> tuple[str, str | None, str | None]:
    """(message, level, source) of one line."""
    text = line.rstrip("\r\n")
    level: str | None = None
    source: str | None = None
    for _ in range(MAX_PREFIXES):
        for prefix in _PREFIXES:
            match = prefix.match(text)
            if match is None or not match.group(0):
                continue
            groups = match.groupdict()
            if groups.get("lvl"):
                level = _LEVELS.get(groups["lvl"].upper(), level)
            if groups.get("src"):
                source = groups["src"].strip()
            tag = groups.get("tag")
            if tag is not None:
                tag = tag.strip()
                found = _TAG_LEVEL.match(tag)
                if found is not None:
                    level = _LEVELS.get((found.group("lvl") or found.group("word")).upper(), level)
                where = _SOURCE_TAG.search(tag)
                if where is not None:
                    source = where.group(1) or where.group(2)
            text = text[match.end() :]
            break
        else:
            break
    return text, level, source


# asyncio's report of a task that ended in an exception, read as that exception ("X: message")
_TASK_EXCEPTION = re.compile(
    r"^(?:future|task): <Task finished .*? exception=(?P<type>[A-Za-z_][\w.]*)\((?P<q>['\"])"
    r"(?P<message>.*?)(?:(?P=q)\)>?)?\s*$"
)


def _task_exception(text: str) -> str | None:
    found = _TASK_EXCEPTION.match(text.strip())
    if found is None:
        return None
    message = found.group("message").replace("\\n", " ").replace("\\t", " ")
    return f"{found.group('type')}: {' '.join(message.split())}"


def strip_prefix(line: str) -> str:
    """``line`` without the container, time, process, rank and logger prefixes before it."""
    return _undress(_ANSI.sub("", _unwrap_json(line)[0]))[0]


# A notebook's traceback (IPython's): its header names the exception beside "Traceback (most
# recent call last)"; frames are "Cell In[3], line 2" and "File /path.py:86, in f(...)" (IPython
# 8) or "<ipython-input-4-...> in <module>" and "/path.py in f(...)" (IPython 7); the line that
# ran is "---> 86 code", among numbered context lines and "(...)" elisions.
_NB_HEADER = re.compile(r"^[A-Za-z_][\w.]*\s{2,}Traceback \(most recent call last\)\s*$")
_NB_CELL = re.compile(r"^Cell In ?\[\d*\], line (\d+)\s*$")
_NB_FILE = re.compile(r"^File (\S+?):(\d+)(?:, in (\S+?)(?:\(.*)?)?\s*$")
_NB_FRAME = re.compile(r"^File \S+?:\d+, in [\w.<>]+\(")  # IPython 8's, not Python's own
_NB_OLD_FILE = re.compile(r"^(<ipython-input-[^>]*>|\S+\.py) in (<module>|\w+)(?:\(.*)?\s*$")
_NB_RAN = re.compile(r"^-+> ?\d+ ?(.*)$")
_NB_CONTEXT = re.compile(r"^\s+\d+(?: .*)?$|^\s*\(\.\.\.\)\s*$")


def _notebook_line(text: str) -> str | None:
    """The line of a notebook's traceback written as Python's own (``  File "x", line 86, in
    f``, the code line indented under it), '' for a context line; None for no such line."""
    stripped = text.strip()
    if _NB_HEADER.match(stripped):
        return "Traceback (most recent call last):"
    if (m := _NB_CELL.match(stripped)) is not None:
        return f'  File "<cell>", line {m.group(1)}, in <module>'
    if (m := _NB_FILE.match(stripped)) is not None:
        return f'  File "{m.group(1)}", line {m.group(2)}, in {m.group(3) or "<module>"}'
    if (m := _NB_OLD_FILE.match(stripped)) is not None:
        return f'  File "{m.group(1)}", line 0, in {m.group(2)}'
    if (m := _NB_RAN.match(stripped)) is not None:
        return "    " + m.group(1).strip()
    if _NB_CONTEXT.match(text):
        return ""
    return None


# A frame header cut by a terminal's width: the function's name, or its start, is missing; the
# rest stands alone on the next line ("  File "x.py", line 103, in" / " loop_for_forward").
_CUT_FRAME = re.compile(r'^\s*File "[^"]+", line \d+, in(?: [\w<>]+)?$')
_FRAME_REST = re.compile(r"^ ?[\w<>]+$")
WRAP_WIDTH = 60  # a line shorter than this was not wrapped


def _join_cut_frames(out: list[LogLine]) -> list[LogLine]:
    """``out`` with each frame header cut at a terminal's width joined to its rest (which
    becomes an empty record, so that the records keep their count)."""
    for i in range(len(out) - 1):
        head, rest = out[i], out[i + 1]
        if len(head.raw) < WRAP_WIDTH or not _CUT_FRAME.match(head.text):
            continue
        if rest.level is not None or not _FRAME_REST.match(rest.text):
            continue
        glue = " " if head.text.endswith(" in") else ""
        out[i] = LogLine(
            raw=head.raw + glue + rest.raw.strip(),
            text=head.text + glue + rest.text.strip(),
            level=head.level,
            source=head.source,
        )
        out[i + 1] = LogLine(raw="", text="")
    return out


def parse_log(lines: Sequence[str]) -> list[LogLine]:
    """Every line of ``lines`` undressed (a flattened line becomes one record per segment); a
    notebook's traceback is written as Python's own."""
    out: list[LogLine] = []
    notebook = False  # inside a notebook's traceback
    for line in lines:
        unwrapped, json_level = _unwrap_json(line)
        plain = _ANSI.sub("", unwrapped)
        carry = ""
        parts = _INLINE_PREFIX.split(plain) if "pid=" in plain else [plain]
        for part in parts:
            segment = carry + part
            text, level, source = _undress(segment)
            if len(parts) > 1 and not text.strip():
                carry = segment + " "  # only prefixes: they belong to the next segment
                continue
            carry = ""
            level = level or json_level
            cut = _cut_record(text.strip()) if level is None else None
            if cut is not None:
                text, level = cut  # a structured record pasted cut short or without its brace
            if _NB_HEADER.match(text.strip()) or _NB_FRAME.match(text.strip()):
                notebook = True  # its header, or (an excerpt cut above it) a frame of its own
            if notebook and text.strip():
                written = _notebook_line(text)
                if written is None:
                    notebook = False  # the exception line, or the traceback is over
                else:
                    text = written
            told = _task_exception(text)
            if told is not None:
                text, level = told, "error"
            if level is None and _EXC_HEAD.match(text.strip()):
                level = "error"
            out.append(LogLine(raw=segment.rstrip("\r\n"), text=text, level=level, source=source))
        if carry:
            out.append(LogLine(raw=carry.rstrip(), text=""))
    return _join_cut_frames(out)


# name, rule family (whose hints fit it), marks. Forks and wrappers before what they run, and
# engines before the runtimes they use: the first name with a mark in the log is the answer.
ENGINE_MARKS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (name, family, re.compile(pattern))
    for name, family, pattern in (
        ("vllm-ascend", "vllm", r"vllm[_-]ascend|torch_npu|NPU out of memory"),
        ("mindie", "common", r"mindie"),
        ("aphrodite", "vllm", r"aphrodite"),
        ("lorax", "tgi", r"lorax"),
        (
            "sglang",
            "sglang",
            r"sglang|sgl_kernel|\bTP\d+\] |Scheduler hit an exception|mem[-_]fraction[-_]static",
        ),
        (
            "tgi",
            "tgi",
            r"text[_-]generation[_-](?:launcher|server|router|client|inference)|"
            r"ShardCannotStart|max[-_]batch[-_](?:total|prefill)[-_]tokens",
        ),
        (
            "trtllm",
            "trtllm",
            r"TensorRT-LLM|tensorrt_llm|TRT-LLM|trtllm|kv_cache_free_gpu_mem_fraction",
        ),
        ("lmdeploy", "lmdeploy", r"lmdeploy|turbomind|\[TM\]|cache[-_]max[-_]entry[-_]count"),
        ("lightllm", "lightllm", r"lightllm|max_total_token_num"),
        # Rust servers built on candle, whose names hold another engine's
        ("candle-vllm", "common", r"candle[_-]vllm"),
        # vLLM, or its settings' names in a program that runs it (LLaMA-Factory, FastChat)
        (
            "vllm",
            "vllm",
            r"vllm|vLLM|VllmWorker|EngineCore|gpu[-_]memory[-_]utilization|max[-_]model[-_]len",
        ),
        ("mistral.rs", "mistralrs", r"mistralrs|mistral\.rs"),
        ("ollama", "llamacpp", r"ollama|OLLAMA_|llama runner"),
        ("localai", "llamacpp", r"LocalAI|localai"),
        (
            "llama.cpp",
            "llamacpp",
            r"llama_model_load|llama_model_loader|ggml_|llama[_-]server|"
            r"llama\.cpp|llama_cpp|llama_new_context|llama_kv_cache|llama_context",
        ),
        ("exllamav2", "common", r"exllamav2|tabbyapi"),
        ("xinference", "vllm", r"xinference|xoscar"),
        ("tensorrt", "trtllm", r"\[TRT\]|TensorRT|deserializeCudaEngine"),
        ("triton", "common", r"triton\.runtime|PTXASError|tritonserver"),
        ("transformers", "transformers", r"transformers/|ContinuousBatching|from_pretrained"),
        (
            "nccl",
            "collective",
            r"nccl-tests|all_reduce_perf|Test NCCL failure|NCCL failure|"
            r"rccl",
        ),
        (
            "torch.distributed",
            "collective",
            r"ProcessGroupNCCL|torch\.distributed|c10d|"
            r"torchrun|\[rank\d+\]",
        ),
        ("deepspeed", "common", r"deepspeed"),
        ("ray", "common", r"\(raylet\)|RayWorker|ray\.exceptions"),
    )
)


def detect_engine(text: str) -> tuple[str, str] | None:
    """(engine, rule family) of the engine that most likely wrote ``text``; None if unknown."""
    for name, family, regex in ENGINE_MARKS:
        if regex.search(text):
            return name, family
    return None
