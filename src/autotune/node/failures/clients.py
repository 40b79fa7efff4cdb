"""A benchmark client's log and a server's access log: requests that failed or were refused.

A log may be the client's, not the server's: its requests failed (error statuses, a report
that counts failures or fewer successes than asked) or it stops before its report. A server
whose access log answers every request with a client error served nothing. The lines that
show requests served (a 2xx answer, a table of measured figures) or a request the server
failed (a 5xx answer) are read here too.
"""

from __future__ import annotations

import re

from autotune.node.failures.log import HEAD, _last_line, _Log
from autotune.node.failures.traces import _message

_SERVED = re.compile(r"\"(?:POST|GET) [^\"]*\" 2\d\d|Avg generation throughput: [1-9]")

# A server's own record of a request it answered, before the status: uvicorn's and the common
# access-log format's `"POST /path HTTP/1.1" 500`.
_ACCESS_LINE = r"\"[A-Z]+ [^\"]* HTTP/[\d.]+\" "
# One it answered with a server error (5xx), at any level; gin's `| 500 |` too.
_SERVER_ERROR_ANSWER = re.compile(
    _ACCESS_LINE + r"5\d\d\b|" + r"^(?:\[GIN\] )?\d{4}/\d\d/\d\d - [\d:]+ \|\s*5\d\d\s*\|"
)

# A benchmark client's own lines: its argument dump, its phases, its report, its HTTP library's
# record of each response.
_CLIENT = re.compile(
    r"\bNamespace\(backend=|benchmark_args=|Serving Benchmark Result|Successful requests:|"
    # an argument dump that names a request rate or a number of prompts; a benchmark's own
    # words that it starts or failed
    r"\bNamespace\((?=[^)]*\b(?:request_rate|num_prompts)=)|^Starting benchmark\b|"
    # (or a benchmark subcommand's: "Namespace(subparser='bench', bench_type='serve', ...")
    r"\bNamespace\((?=[^)]*\b(?:subparser=['\"]bench['\"]|bench_type=))|"
    r"^Benchmark failed\b|"
    r"Starting (?:main|initial) \w* ?(?:benchmark|test) run|Traffic request rate:|"
    r"HTTP Request: [A-Z]+ https?://|\b(?:bench_serving|benchmark_serving|vllm bench serve)\b"
)
_CLIENT_STATUS = re.compile(r"HTTP Request: [A-Z]+ https?://\S+ \"HTTP/[\d.]+ [45]\d\d\b")
_CLIENT_OK = re.compile(r"HTTP Request: [A-Z]+ https?://\S+ \"HTTP/[\d.]+ 2\d\d\b")
_LOST = re.compile(r"^\s*Failed requests:\s+[1-9]\d*\s*$")
_SUCCEEDED = re.compile(r"Successful requests:\s+(\d+)\s*$")
# a report's count of what failed, in any tool's words: "Failed requests: 3", a JSON summary's
# "total_errors": 20, "num_failed_requests": 4, "error_count": 2 (a count of none is no failure)
_COUNTED_FAILED = re.compile(
    r"^\s*[\"']?(?:\w+[_ ]){0,3}(?i:errors?|failures?|failed(?:[_ ]requests?)?|error[_ ]count)"
    r"[\"']?\s*[:=]\s*[1-9]\d*\s*,?\s*$"
)
# how many requests a client was asked to send: a finished progress bar, its argument
# (`num_prompts=300`, `--num-prompts 300`), its report's count
_REQUESTS = re.compile(
    r"\b(?P<bar>\d+)/(?P=bar) \[|\bnum[_-]prompts['\"]?\s*[=:]?\s*(?P<arg>\d+)|"
    r"\b(?:Number of (?:prompts|requests)|Total requests):\s*(?P<count>\d+)"
)


# A server's own record of a request it answered: the first digit of its status.
_SERVER_ANSWER = re.compile(_ACCESS_LINE + r"(\d)\d\d\b")
_NOT_FOUND = re.compile(_ACCESS_LINE + r"404\b")


def _refused_all(log: _Log) -> int | None:
    """The first answer, when the server's access log answers every request with a client
    error (4xx) and none with success: nothing was served."""
    statuses = [
        (i, m.group(1)) for i, text in enumerate(log.text) if (m := _SERVER_ANSWER.search(text))
    ]
    if not statuses or any(kind != "4" for _, kind in statuses):
        return None
    if all(_NOT_FOUND.search(log.text[i]) for i, _ in statuses):
        return None  # paths the server has no route for: no request it serves was refused
    return statuses[0][0]


# A benchmark's table of results: a header naming a rate or a latency between cell borders
# (llama.cpp's markdown tables, genai-perf's box-drawn ones), then rows of figures.
_RESULTS_HEADER = re.compile(
    r"^\s*[|┃│].*(?i:\bt/s\b|tok(?:ens)?/s|req(?:uests)?/s|throughput|latency|\bttft\b|\btpot\b|"
    r"\bitl\b)"
)
_FIGURES_ROW = re.compile(r"^\s*[|│┃](?:[^|│┃]*[|│┃])??(?:\s*-?[\d,]+(?:\.\d+)?\s*[|│┃]){2,}")


def _results_table(log: _Log) -> int | None:
    """The header of a benchmark's table of results with figures below it, if the log has
    one: the run it measured was served."""
    for i, text in enumerate(log.text):
        if _RESULTS_HEADER.search(text) and any(
            _FIGURES_ROW.search(row) for row in log.text[i + 1 : i + 12]
        ):
            return i
    return None


def _is_client(log: _Log) -> bool:
    """Whether the log is a benchmark client's (its marks, and no server's progress)."""
    return any(_CLIENT.search(text[:HEAD]) for text in log.text)


def _client_failure(log: _Log) -> tuple[int, str] | None:
    """When the log is a benchmark client's: the line that says its requests failed (error
    statuses in its responses, a report with fewer successes than requests) or, when it stops
    before its report, its last line; None when it is no client's or every request succeeded.
    """
    lines = [i for i, text in enumerate(log.text) if _CLIENT.search(text[:HEAD])]
    counted = next((i for i, text in enumerate(log.text) if _COUNTED_FAILED.match(text)), None)
    if counted is not None and not any(_SERVED.search(text) for text in log.text):
        # A report (a benchmark's, a measurement collector's) that counts failures: its
        # requests or measurements failed, whoever made them.
        return counted, "the report counts failures: " + _message(log, counted)
    if not lines:
        return None
    for i in lines:
        if _CLIENT_STATUS.search(log.text[i]):
            return i, "the server answered the client's requests with errors: " + _message(log, i)
    report = next((i for i in lines if _SUCCEEDED.search(log.text[i])), None)
    if report is None:
        if any(_SERVED.search(text) or _CLIENT_OK.search(text) for text in log.text):
            return None  # requests were answered: a client (or a server) seen serving
        last = _last_line(log)
        return (
            (last, "the benchmark client's log stops before its report: " + _message(log, last))
            if last is not None
            else None
        )
    for i in range(report, min(report + 12, len(log.text))):
        if _LOST.search(log.text[i]):
            return i, "the benchmark's report counts failed requests: " + _message(log, i)
    done = int(_SUCCEEDED.search(log.text[report]).group(1))  # type: ignore[union-attr]
    if done == 0:
        return report, "no request succeeded: " + _message(log, report)
    asked = [
        int(m.group("bar") or m.group("arg") or m.group("count"))
        for text in log.text[: report + 1]
        for m in _REQUESTS.finditer(text)
    ]
    if asked and done < asked[-1]:
        return report, f"{done} of {asked[-1]} requests succeeded: " + _message(log, report)
    return None
